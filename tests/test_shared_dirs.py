"""Issue 39: shared directories, round two.  Each test reproduces one of the ten cases of the attack loop
run as a second local user (a file of another user's is made here by ``chown`` to an unused uid: the
tests that need that run as root) and checks the exact outcome: nothing written outside OUT, no other
report served, no hang, no half-committed set left unsaid, one-line errors or counted drops."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import stat
import time
from pathlib import Path

import pytest
import test_security
from conftest import convert, convert_valid
from test_schema_versions import build_rank

from nsys2prv.nsys import cache as C
from nsys2prv.nsys import database as D
from nsys2prv.nsys import schema
from nsys2prv.pipeline import outputs as O

tiny_fs = test_security.tiny_fs  # the fixture: a tiny tmpfs
OTHER = 4242  # a uid no test machine's user has: "another user"
as_root = pytest.mark.skipif(os.getuid() != 0, reason="needs root to make a file of another user's (chown)")


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    d = tmp_path_factory.mktemp("shared")
    return [build_rank(d / f"rank{r}.sqlite", "3.13.2", r) for r in (0, 1)]


def _bytes(base: Path) -> dict[str, bytes]:
    return {e: Path(f"{base}{e}").read_bytes() for e in (".prv", ".pcf", ".row")}


def _warnings(summary: dict) -> list[str]:
    return [w for r in summary["reports"] for w in r["capture_warnings"]]


def _notes(summary: dict) -> list[str]:
    return [w for r in summary["reports"] for w in r["notes"]]


def _chown_tree(top: Path, uid: int) -> None:
    for p in [top, *top.rglob("*")]:
        os.lchown(p, uid, uid)


def _renamed(src: Path, dst: Path) -> Path:
    """A copy of ``src`` whose names differ (the same size: every 'a' of StringIds a 'b')."""
    shutil.copyfile(src, dst)
    with sqlite3.connect(dst) as con:
        con.execute("UPDATE StringIds SET value = replace(value, 'a', 'b')")
    con.close()
    assert dst.stat().st_size == src.stat().st_size
    return dst


# --- 1: --cfgs DIR whose subdirectory is another user's link ------------------------------------------
def test_1_a_link_at_a_cfgs_subdirectory_is_never_written_through(ranks, tmp_path):
    victim = tmp_path / "victim"
    (victim / "kept").mkdir(parents=True)
    (victim / "kernel_time.cfg").write_text("mine\n")
    cfgs = tmp_path / "cfgs"
    cfgs.mkdir()
    (cfgs / "analysis").symlink_to(victim, target_is_directory=True)
    code, text = convert(["-m", *ranks, "--cfgs", cfgs, tmp_path / "t"], expect_ok=False)
    assert code == 2 and text.count("\n") == 1
    assert "a symbolic link there is not followed" in text and "nothing was moved" in text
    assert str(cfgs / "analysis") in text
    assert sorted(p.name for p in victim.iterdir()) == ["kept", "kernel_time.cfg"]
    assert (victim / "kernel_time.cfg").read_text() == "mine\n"
    assert not (tmp_path / "t.prv").exists() and (cfgs / "analysis").is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cfgs", "victim"]  # no staging left


def test_1_the_views_land_in_real_subdirectories(ranks, tmp_path):
    cfgs = tmp_path / "cfgs"
    convert(["-m", *ranks, "--cfgs", cfgs, tmp_path / "t"])
    subdirs = sorted(p.name for p in cfgs.iterdir())
    assert subdirs and all((cfgs / s).is_dir() and not (cfgs / s).is_symlink() for s in subdirs)
    assert (cfgs / "analysis" / "kernel_time.cfg").is_file()


# --- 2: another user's entry in a shared cache directory ----------------------------------------------
@as_root
def test_2_another_users_cache_entry_is_not_served(ranks, tmp_path):
    a, b = ranks[0], _renamed(ranks[0], tmp_path / "b.sqlite")
    ref = tmp_path / "ref"
    convert_valid(["--no-cache", b], ref)
    cache, other = tmp_path / "cache", tmp_path / "other"
    convert_valid(["--cache-dir", cache, b], tmp_path / "warm")  # the victim's entry of b
    convert_valid(["--cache-dir", other, a], tmp_path / "a")  # a's entry, elsewhere
    planted = C.entry_dir(cache / "tables", b)
    for f in planted.iterdir():
        f.unlink()
    for f in C.entry_dir(other / "tables", a).iterdir():
        shutil.copy2(f, planted / f.name)  # the attacker's: a's tables under b's name
    _chown_tree(cache / "tables", OTHER)
    _, summary = convert_valid(["--cache-dir", cache, b], tmp_path / "t")
    assert _bytes(tmp_path / "t") == _bytes(ref)
    said = _warnings(summary)
    assert said and all(f"owned by uid {OTHER}, not by this user" in w for w in said)


@as_root
def test_2_a_cache_file_of_another_user_is_a_miss(ranks, tmp_path):
    cache = tmp_path / "cache"
    convert_valid(["--cache-dir", cache, "-m", *ranks], tmp_path / "ref")
    entry = C.entry_dir(cache / "tables", ranks[0])
    os.lchown(entry / C.META, OTHER, OTHER)
    for f in entry.glob("scan-*"):
        os.lchown(f, OTHER, OTHER)
    _, summary = convert_valid(["--cache-dir", cache, "-m", *ranks], tmp_path / "t")
    assert _bytes(tmp_path / "t") == _bytes(tmp_path / "ref")
    said = _warnings(summary)
    assert len(said) == 2 and all(w.startswith(C.CACHE_NOTE) for w in said)
    assert f"(meta.n2p is owned by uid {OTHER}, not by this user); not used, rebuilt from the report" in said[0]
    assert f".n2p is owned by uid {OTHER}, not by this user); not used, rebuilt from the report" in said[1]


def test_2_new_cache_files_and_directories_are_writable_by_no_one_else(ranks, tmp_path):
    cache = tmp_path / "cache"
    old = os.umask(0o002)  # a user-private-group umask: group-writable by default
    try:
        convert_valid(["--cache-dir", cache, "-m", *ranks], tmp_path / "t")
    finally:
        os.umask(old)
    below = [p for p in (cache / "tables").rglob("*")]
    assert below and all(p.lstat().st_mode & 0o022 == 0 for p in below)


# --- 3: another user's REPORT.sqlite beside REPORT.nsys-rep ------------------------------------------
def _fake_nsys(tmp_path: Path, export: Path) -> Path:
    """An ``nsys`` whose ``export -o OUT`` copies ``export`` to OUT (the report's own export)."""
    home = tmp_path / "nsys-home"
    (home / "bin").mkdir(parents=True)
    script = home / "bin" / "nsys"
    script.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = export ] && [ "$2" = --help ]; then echo "--tables"; exit 0; fi\n'
        "out=\n"
        'while [ $# -gt 0 ]; do [ "$1" = -o ] && out="$2"; shift; done\n'
        f'cp "{export}" "$out"\n'
    )
    script.chmod(0o755)
    return home


@as_root
def test_3_another_users_export_beside_the_report_is_not_taken(ranks, tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    report = shared / "run.nsys-rep"
    report.write_bytes(b"NVIDIA Nsight Systems report (a stand-in: the fake nsys exports it)\0")
    own = ranks[1]
    monkeypatch.setenv("NSYS_HOME", str(_fake_nsys(tmp_path, own)))
    planted = shared / "run.sqlite"
    shutil.copyfile(ranks[0], planted)  # another report's export, newer than the report
    os.lchown(planted, OTHER, OTHER)
    ref = tmp_path / "ref"
    convert_valid(["--no-cache", own], ref)
    _, summary = convert_valid(["--cache-dir", tmp_path / "cache", report], tmp_path / "t")
    assert _bytes(tmp_path / "t") == _bytes(ref)
    assert _warnings(summary) == [
        f"run.sqlite beside the report not used as its export (owned by uid {OTHER}, not by this user)"
    ]


@as_root
def test_3_without_nsys_the_refusal_names_the_ignored_export(ranks, tmp_path, monkeypatch):
    report = tmp_path / "run.nsys-rep"
    report.write_bytes(b"NVIDIA Nsight Systems report\0")
    planted = tmp_path / "run.sqlite"
    shutil.copyfile(ranks[0], planted)
    os.lchown(planted, OTHER, OTHER)
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    monkeypatch.delenv("NSYS_HOME", raising=False)
    code, text = convert(["--cache-dir", tmp_path / "cache", report, tmp_path / "t"], expect_ok=False)
    assert code == 2 and text.count("\n") == 1 and "'nsys' was not found" in text
    assert f"run.sqlite beside the report not used as its export (owned by uid {OTHER}" in text


def test_3_the_export_is_made_in_a_private_directory(ranks, tmp_path, monkeypatch):
    """nsys writes into a new 0700 directory of the cache, never at a name someone could plant; the
    export is renamed into the cache and the directory removed."""
    report = tmp_path / "run.nsys-rep"
    report.write_bytes(b"NVIDIA Nsight Systems report\0")
    home = _fake_nsys(tmp_path, ranks[0])
    script = home / "bin" / "nsys"
    script.write_text(
        script.read_text().replace(
            'cp "', 'stat -c "%a %n" "$(dirname "$out")" >> "' + str(tmp_path / "seen") + '"\ncp "'
        )
    )
    monkeypatch.setenv("NSYS_HOME", str(home))
    cache = tmp_path / "cache"
    convert_valid(["--cache-dir", cache, report], tmp_path / "t")
    seen = (tmp_path / "seen").read_text().split()
    assert seen[0] == "700" and Path(seen[1]).parent == cache and Path(seen[1]).name.startswith(".export-")
    exports = [p.name for p in cache.iterdir() if p.name.endswith(".sqlite")]
    assert len(exports) == 1 and re.fullmatch(r"run-[0-9a-f]{16}\.sqlite", exports[0])
    assert not [p for p in cache.iterdir() if p.name.startswith(".export-")]


# --- 4: a commit that fails half-way ------------------------------------------------------------------
SET = ("t.prv", "t.pcf", "t.row", "t.summary.json")


def _staged(tmp_path: Path, text: str) -> O.OutputSet:
    out = O.OutputSet(tmp_path / "t", None).open()
    for name in SET:
        (out.stage / name).write_text(text + name)
    return out


def test_4_a_directory_made_at_an_output_while_staging_moves_nothing(tmp_path):
    for name in SET:
        (tmp_path / name).write_text("old" + name)
    out = _staged(tmp_path, "new")
    (tmp_path / "t.row").unlink()
    (tmp_path / "t.row").mkdir()  # another user, while the run stages
    try:
        with pytest.raises(O.UserError) as err:
            out.commit()
    finally:
        out.close()
    assert "is a directory" in str(err.value) and "nothing was moved" in str(err.value)
    assert err.value.path == str(tmp_path / "t.row")
    assert {n: (tmp_path / n).read_text() for n in SET if n != "t.row"} == {n: "old" + n for n in SET if n != "t.row"}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(SET)


def test_4_a_move_failing_half_way_says_mixed_and_the_next_run_completes_it(tmp_path, monkeypatch):
    for name in SET:
        (tmp_path / name).write_text("old" + name)
    out = _staged(tmp_path, "new")
    real, moved = O._move, []  # (every move into place: a swap or a rename)

    def replace(src, dst, **kw):
        if "dst_dir_fd" in kw and moved == ["t.pcf"]:  # after one move: another user's directory
            os.unlink("t.row", dir_fd=kw["dst_dir_fd"])
            os.mkdir("t.row", dir_fd=kw["dst_dir_fd"])
        real(src, dst, **kw)
        if "dst_dir_fd" in kw:
            moved.append(dst)

    monkeypatch.setattr(O, "_move", replace)
    try:
        with pytest.raises(O.UserError) as err:
            out.commit()
    finally:
        out.close()
        monkeypatch.undo()
    text = str(err.value)
    assert "after 2 of 4 files: the output set is mixed" in text and "the next run on t completes it" in text
    stage = out.stage
    assert stage.is_dir() and (stage / O.COMMIT).is_file()  # kept for the next run
    assert (tmp_path / "t.pcf").read_text() == "newt.pcf" and (
        tmp_path / "t.summary.json"
    ).read_text() == "oldt.summary.json"
    os.rmdir(tmp_path / "t.row")
    dead = tmp_path / f".t.out{2**22 + 11}.xyz"  # (as a dead run's: the same name pattern)
    stage.rename(dead)
    nxt = O.OutputSet(tmp_path / "t", None).open()
    nxt.close()
    assert {n: (tmp_path / n).read_text() for n in SET} == {n: "new" + n for n in SET}
    assert nxt.notes[0].startswith("completed the moving into place of an interrupted earlier run's outputs: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(SET)


# --- 5: a view named like a table; every query bounded -------------------------------------------------
ENDLESS = (
    "CREATE VIEW {name} AS WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) "
    "SELECT n AS start, n AS end, n AS globalTid, 0 AS eventType, 0 AS textId, 'x' AS text FROM c"
)


def _with_view(src: Path, dst: Path, table: str) -> Path:
    shutil.copyfile(src, dst)
    with sqlite3.connect(dst) as con:
        con.execute(f"DROP TABLE IF EXISTS {table}")
        con.execute(ENDLESS.format(name=table))
    con.close()
    return dst


def test_5_a_view_is_never_read_as_a_table(ranks, tmp_path):
    path = _with_view(ranks[0], tmp_path / "v.sqlite", "OSRT_API")
    rep = D.Report(path)
    try:
        assert "OSRT_API" not in rep.tables and rep.columns("OSRT_API") == [] and not rep.has("OSRT_API")
        assert rep.notes == ["1 view(s) in the export not read (only tables are): OSRT_API"]
    finally:
        rep.close()


def test_5_a_conversion_with_an_endless_view_skips_it_and_says_so(ranks, tmp_path):
    path = _with_view(ranks[0], tmp_path / "v.sqlite", "OSRT_API")
    _, summary = convert_valid(["--no-cache", "-t", "all,osrt", path], tmp_path / "t")
    assert _notes(summary) == ["1 view(s) in the export not read (only tables are): OSRT_API"]
    assert "osrt" not in summary["categories"]  # (no table of it: the view is not one)


def test_5_every_query_is_bounded(ranks, monkeypatch):
    monkeypatch.setattr(schema.Bound, "MIN_STEPS", 10**6)
    monkeypatch.setattr(schema.Bound, "STEPS_PER_BYTE", 0)
    rep = D.Report(ranks[0])
    try:
        assert rep.rows("SELECT count(*) FROM StringIds")[0][0] > 0  # an ordinary query: well within
        with pytest.raises(schema.UserError) as err:
            rep.rows(
                "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c LIMIT 100000000) SELECT max(n) FROM c"
            )
        assert "a query ran past its bound of 1000000 SQLite steps" in str(err.value)
        assert rep.rows("SELECT count(*) FROM StringIds")[0][0] > 0  # the next query has its own bound
    finally:
        rep.close()


# --- 6: the input replaced by another of the same size and mtime ---------------------------------------
def test_6_an_input_rewritten_with_its_mtime_kept_is_not_served_from_the_cache(ranks, tmp_path):
    b = _renamed(ranks[0], tmp_path / "b.sqlite")
    ref_b = tmp_path / "ref_b"
    convert_valid(["--no-cache", b], ref_b)
    x = tmp_path / "x.sqlite"
    shutil.copy2(ranks[0], x)
    cache = tmp_path / "cache"
    convert_valid(["--cache-dir", cache, x], tmp_path / "first")
    st = x.stat()
    with open(x, "r+b") as fh:  # cp -p: the same file written again, its mtime put back
        fh.write(b.read_bytes())
    os.utime(x, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (x.stat().st_size, x.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    convert_valid(["--cache-dir", cache, x], tmp_path / "second")
    assert _bytes(tmp_path / "second") == _bytes(ref_b) != _bytes(tmp_path / "first")


def test_6_an_input_replaced_by_rename_with_its_mtime_kept_is_not_served(ranks, tmp_path):
    b = _renamed(ranks[0], tmp_path / "b.sqlite")
    x = tmp_path / "x.sqlite"
    shutil.copy2(ranks[0], x)
    cache = tmp_path / "cache"
    convert_valid(["--cache-dir", cache, x], tmp_path / "first")
    st = x.stat()
    tmp = tmp_path / "x.new"
    shutil.copyfile(b, tmp)
    os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))  # rsync -t: a new file renamed over it
    os.replace(tmp, x)
    convert_valid(["--cache-dir", cache, x], tmp_path / "second")
    convert_valid(["--no-cache", b], tmp_path / "ref_b")
    assert _bytes(tmp_path / "second") == _bytes(tmp_path / "ref_b")


# --- 7, 8: damaged ids ---------------------------------------------------------------------------------
def test_7_duplicate_string_ids_keep_the_first_text_and_say_so(ranks, tmp_path):
    path = tmp_path / "dup.sqlite"
    shutil.copyfile(ranks[0], path)
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE s2 AS SELECT id, value FROM StringIds")
        con.execute("DROP TABLE StringIds")
        con.execute("ALTER TABLE s2 RENAME TO StringIds")
        con.execute("INSERT INTO StringIds SELECT id, 'IMPOSTOR' || value FROM StringIds WHERE value LIKE '%saxpy%'")
        con.execute("INSERT INTO StringIds SELECT id, 'IMPOSTOR2' FROM StringIds WHERE value = 'MPI_Barrier'")
    con.close()
    ref = tmp_path / "ref"
    convert_valid(["--no-cache", ranks[0]], ref)
    _, summary = convert_valid(["--no-cache", path], tmp_path / "t")
    assert _bytes(tmp_path / "t") == _bytes(ref)
    assert _notes(summary) == ["StringIds: 3 row(s) repeating an id (the first text of each id kept)"]


def test_8_a_device_or_stream_id_of_2_40_is_a_counted_drop(ranks, tmp_path):
    path = tmp_path / "dev.sqlite"
    shutil.copyfile(ranks[0], path)
    with sqlite3.connect(path) as con:
        con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = 1099511627776 WHERE rowid = 1")
        con.execute("UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET streamId = 1099511627776 WHERE rowid = 1")
    con.close()
    code, text = convert(["--no-cache", "-t", "all", path, tmp_path / "t"])
    assert code == 0
    summary = json.loads((tmp_path / "t.summary.json").read_text())
    reason = "device or stream id beyond 32 bits (corrupt row)"
    assert summary["categories"]["kernels"]["dropped"] == {reason: 1}
    assert summary["categories"]["memcpy"]["dropped"] == {reason: 1}


# --- 9: a symbolic link loop as input -----------------------------------------------------------------
@pytest.mark.parametrize("name", ["loop.sqlite", "loop.nsys-rep"])
def test_9_a_symbolic_link_loop_is_named_eloop(tmp_path, name):
    (tmp_path / name).symlink_to(tmp_path / f"other-{name}")
    (tmp_path / f"other-{name}").symlink_to(tmp_path / name)
    code, text = convert([tmp_path / name, tmp_path / "t"], expect_ok=False)
    assert code == 2 and text.count("\n") == 1
    assert "a symbolic link loop (ELOOP: too many levels of symbolic links)" in text and str(tmp_path / name) in text


# --- 10: a lock file of another user's ----------------------------------------------------------------
@as_root
def test_10_a_lock_file_of_another_user_is_refused_naming_the_owner(ranks, tmp_path):
    lock = tmp_path / ".t.lock"
    lock.write_text("")
    os.chmod(lock, 0o666)
    os.lchown(lock, OTHER, OTHER)
    code, text = convert(["-m", *ranks, tmp_path / "t"], expect_ok=False)
    assert code == 2 and text.count("\n") == 1
    assert f"the lock file is owned by uid {OTHER}, not by this user: not used" in text
    assert lock.is_file() and lock.stat().st_uid == OTHER and not (tmp_path / "t.prv").exists()


def test_10_a_lock_file_others_can_write_is_refused(ranks, tmp_path):
    lock = tmp_path / ".t.lock"
    lock.write_text("")
    os.chmod(lock, 0o666)
    code, text = convert(["-m", *ranks, tmp_path / "t"], expect_ok=False)
    assert code == 2 and "the lock file is writable by others (mode 0666): not used" in text
    assert stat.S_IMODE(lock.stat().st_mode) == 0o666 and not (tmp_path / "t.prv").exists()


# --- the cache's size cap ---------------------------------------------------------------------------
def _age(cache: Path, source: Path, seconds: int) -> Path:
    """Make ``source``'s table cache entries look last used ``seconds`` ago; its group directory."""
    entry = C.entry_dir(cache / "tables", source)
    then = time.time() - seconds
    for p in (entry, entry.parent):
        os.utime(p, (then, then))
    return entry.parent


def _allocated(d: Path) -> int:
    return sum(p.lstat().st_blocks * 512 for p in d.rglob("*") if p.is_file() and not p.is_symlink())


def test_the_least_recently_used_entries_go_past_the_cap(ranks, tmp_path):
    cache = tmp_path / "cache"
    third = _renamed(ranks[0], tmp_path / "third.sqlite")
    for r in (*ranks, third):
        convert_valid(["--cache-dir", cache, r], tmp_path / f"o-{r.stem}")
    oldest = _age(cache, ranks[0], 7200)
    older = _age(cache, ranks[1], 3600)
    _age(cache, third, 1800)
    sizes = {g: _allocated(g) for g in (cache / "tables").iterdir()}
    assert len(sizes) == 3 and all(sizes.values())
    fourth = _renamed(ranks[1], tmp_path / "fourth.sqlite")
    convert_valid(["--cache-dir", cache, fourth], tmp_path / "o4")  # (a fourth unit, in use)
    newest = C.entry_dir(cache / "tables", fourth).parent
    cap = sum(sizes.values()) + _allocated(newest) - sizes[oldest]  # room for all but the oldest
    _, summary = convert_valid(["--cache-dir", cache, "--cache-max", str(cap), fourth], tmp_path / "o5")
    assert summary["notes"][1:] == [
        f"the cache {cache} was over its cap of {cap / 2**20:.1f} MiB (--cache-max): removed the 1 least "
        f"recently used report(s)' entries ({sizes[oldest] / 2**20:.1f} MiB)"
    ]
    assert sorted(p.name for p in (cache / "tables").iterdir()) == sorted(
        g.name for g in (older, C.entry_dir(cache / "tables", third).parent, newest)
    )


def test_the_cap_from_the_environment_spares_what_is_in_use(ranks, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    convert_valid(["--cache-dir", cache, ranks[0]], tmp_path / "a")
    convert_valid(["--cache-dir", cache, ranks[1]], tmp_path / "b")  # used within the grace period
    _age(cache, ranks[0], 7200)
    monkeypatch.setenv("NSYS2PRV_CACHE_MAX", "1K")
    _, summary = convert_valid(["--cache-dir", cache, ranks[0]], tmp_path / "c")
    assert summary["notes"][1:] == [
        f"the cache {cache} is over its cap of 0.0 MiB (--cache-max), but every entry is in use"
    ]
    assert len(list((cache / "tables").iterdir())) == 2
    _age(cache, ranks[1], 3600)
    _, summary = convert_valid(["--cache-dir", cache, ranks[0]], tmp_path / "d")
    assert summary["notes"][1].startswith(
        f"the cache {cache} was over its cap of 0.0 MiB (--cache-max): removed the 1 "
    )
    assert [p.name for p in (cache / "tables").iterdir()] == [C.entry_dir(cache / "tables", ranks[0]).parent.name]


@pytest.mark.parametrize("size,bytes_", [("500M", 500 * 2**20), ("20G", 20 * 2**30), ("1.5KiB", 1536), ("7", 7)])
def test_cache_sizes_parse(size, bytes_):
    from nsys2prv.nsys.cache_size import parse_size

    assert parse_size(size) == bytes_


def test_a_cache_size_that_is_not_one_is_a_one_line_error(ranks, tmp_path):
    code, text = convert(["--cache-max", "lots", ranks[0], tmp_path / "t"], expect_ok=False)
    assert code == 2 and text == "nsys2prv: error: --cache-max: not a size (e.g. 500M, 20G): 'lots'\n"


# --- also seen: what a full device names -------------------------------------------------------------
def test_enospc_on_a_staged_file_names_where_it_was_to_go(ranks, tmp_path, monkeypatch):
    import errno

    import nsys2prv.pipeline.conversion as P

    def full(cfg, outputs):
        raise OSError(errno.ENOSPC, "No space left on device", f"{cfg.output}.prv")

    monkeypatch.setattr(P, "_convert", full)
    code, text = convert([ranks[0], tmp_path / "t"], expect_ok=False)
    assert code == 2 and text.startswith(f"nsys2prv: error: {tmp_path / 't.prv'}: ") and "No space left" in text
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "err,said",
    [
        ((28, "No space left on device"), "write the run's work files beside the outputs (No space left on device)"),
        ((2, "No such file or directory"), "use the run's work files beside the outputs (No such file or directory)"),
    ],
)
def test_a_work_files_error_names_the_outputs_not_the_file(ranks, tmp_path, monkeypatch, err, said):
    import nsys2prv.pipeline.conversion as P

    def fails(cfg, outputs):  # (a chunk, a staged table: files the user never sees, gone with the stage)
        raise OSError(*err, str(outputs.work / "r0.chunk.s3"))

    monkeypatch.setattr(P, "_convert", fails)
    code, text = convert([ranks[0], tmp_path / "t"], expect_ok=False)
    assert code == 2 and text == f"nsys2prv: error: {tmp_path / 't'}: cannot {said}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_short_write_of_a_work_file_keeps_its_cause_not_its_name(ranks, tiny_fs, monkeypatch):
    import nsys2prv.pipeline.conversion as P

    def short(cfg, outputs):  # (numpy's short write: no errno; ``save_array`` names the file on it)
        test_security._fill(tiny_fs)
        exc = OSError("159100 requested and 102384 written")
        exc.filename = str(outputs.work / "r0.chunk.pop.npy")
        raise exc

    monkeypatch.setattr(P, "_convert", short)
    code, text = convert([ranks[0], tiny_fs / "o"], expect_ok=False)
    assert code == 2 and text == (
        f"nsys2prv: error: {tiny_fs / 'o'}: cannot write the run's work files beside the outputs "
        "(No space left on device; 159100 requested and 102384 written)\n"
    )
    assert sorted(p.name for p in tiny_fs.iterdir()) == ["filler"]


def test_a_device_filled_before_stage_c_is_said(ranks, tiny_fs, monkeypatch):
    import nsys2prv.pipeline.conversion as P

    translate_all = P.slices.translate_all

    def filled_first(*a, **k):  # (stage C's work files then meet a full device: POP's spills, the chunks)
        test_security._fill(tiny_fs)
        return translate_all(*a, **k)

    monkeypatch.setattr(P.slices, "translate_all", filled_first)
    code, text = convert(["-m", *ranks, tiny_fs / "o"], expect_ok=False)
    assert code == 2 and text == (
        f"nsys2prv: error: {tiny_fs / 'o'}: cannot write the run's work files beside the outputs "
        "(No space left on device)\n"
    )
    assert sorted(p.name for p in tiny_fs.iterdir()) == ["filler"]


def test_a_full_cache_device_is_said(ranks, tiny_fs, tmp_path):
    _, summary = convert_valid(["--cache-dir", tiny_fs, ranks[0]], tmp_path / "t")
    convert_valid(["--no-cache", ranks[0]], tmp_path / "ref")
    assert _bytes(tmp_path / "t") == _bytes(tmp_path / "ref")
    assert f"{C.CACHE_NOTE} could not be completed (No space left on device): the report is read again next time" in (
        _warnings(summary)
    )


def test_an_old_reports_export_goes_with_its_tables(ranks, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("NSYS_HOME", str(_fake_nsys(tmp_path, ranks[0])))
    report = tmp_path / "old.nsys-rep"
    report.write_bytes(b"NVIDIA Nsight Systems report\0")
    convert_valid(["--cache-dir", cache, report], tmp_path / "a")
    (export,) = cache.glob("old-*.sqlite")
    group = _age(cache, export, 7200)
    then = time.time() - 7200
    os.utime(export, (then, then))
    size = export.lstat().st_blocks * 512 + _allocated(group)
    _, summary = convert_valid(["--cache-dir", cache, "--cache-max", "1", ranks[1]], tmp_path / "b")
    assert summary["notes"][1:] == [
        f"the cache {cache} was over its cap of 0.0 MiB (--cache-max): removed the 1 least recently used "
        f"report(s)' entries ({size / 2**20:.1f} MiB)"
    ]
    assert not export.exists() and not group.exists()
    assert [p.name for p in (cache / "tables").iterdir()] == [C.entry_dir(cache / "tables", ranks[1]).parent.name]


def test_5_a_virtual_table_is_not_read_either(ranks, tmp_path):
    path = tmp_path / "vt.sqlite"
    shutil.copyfile(ranks[0], path)
    with sqlite3.connect(path) as con:
        con.execute("DROP TABLE IF EXISTS OSRT_API")
        con.execute("CREATE VIRTUAL TABLE OSRT_API USING fts5(start, end)")
    con.close()
    rep = D.Report(path)
    try:
        assert "OSRT_API" not in rep.tables and not rep.has("OSRT_API")
        assert rep.notes == ["1 virtual table(s) in the export not read (only tables are): OSRT_API"]
    finally:
        rep.close()
