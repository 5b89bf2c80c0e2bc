"""Issue 30: files in the cache and output directories are untrusted, bad data is accounted.

Each test reproduces one case of the issue as it was reported (a planted link, a foreign pickle, text in
a numeric column, ...) and checks the exact outcome: nothing written through a link, nothing loaded that
this tool did not write, every dropped row counted with its reason."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from conftest import convert, convert_valid, load_trace, validate_trace
from test_schema_versions import build_rank

from nsys2prv.core.errors import UserError
from nsys2prv.pipeline import outputs as O


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    d = tmp_path_factory.mktemp("security")
    return [build_rank(d / f"rank{r}.sqlite", "3.13.2", r) for r in (0, 1)]


def leftovers(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if p.name.startswith("."))


# --- 1, 5: the lock ----------------------------------------------------------------------------------
def test_1_a_lock_file_planted_as_a_link_is_not_followed(ranks, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    d = tmp_path / "d"
    d.mkdir()
    (d / ".o.lock").symlink_to("../victim")
    code, text = convert(["-m", *ranks, d / "o"], expect_ok=False)
    assert code == 2 and text.count("\n") == 1 and "lock file is a symbolic link" in text
    assert victim.read_text() == "precious\n" and (d / ".o.lock").is_symlink()
    assert not (d / "o.prv").exists()


def test_1_the_lock_file_is_created_0600(ranks, tmp_path):
    out = O.OutputSet(tmp_path / "o", None).open()
    try:
        assert os.stat(tmp_path / ".o.lock").st_mode & 0o777 == 0o600
        assert (tmp_path / ".o.lock").read_text() == str(os.getpid())
    finally:
        out.close()
    assert leftovers(tmp_path) == []


def test_1_a_hard_link_or_fifo_as_lock_is_refused(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    os.link(victim, tmp_path / ".o.lock")
    with pytest.raises(UserError, match="not a plain file"):
        O.OutputSet(tmp_path / "o", None).open()
    assert victim.read_text() == "precious\n"
    os.mkfifo(tmp_path / ".p.lock")
    with pytest.raises(UserError, match="not a plain file"):  # (a FIFO would block the open)
        O.OutputSet(tmp_path / "p", None).open()


def test_5_the_lock_cannot_be_held_by_two_runs(tmp_path, monkeypatch):
    """B opened the lock file of A before A released (unlinked) it; C then creates and locks a new
    file; B's flock on the orphaned inode must not count."""
    a = O.OutputSet(tmp_path / "o", None).open()
    stale = os.open(tmp_path / ".o.lock", os.O_RDWR)  # B's open, before A's release
    a.close()
    c = O.OutputSet(tmp_path / "o", None).open()
    real, opened = O._open_lock, []

    def first_the_stale_one(path):
        opened.append(path)
        return stale if len(opened) == 1 else real(path)

    monkeypatch.setattr(O, "_open_lock", first_the_stale_one)
    try:
        with pytest.raises(UserError, match=f"another nsys2prv \\(pid {os.getpid()}\\) is writing this output"):
            O.OutputSet(tmp_path / "o", None).open()
        assert len(opened) == 2  # the orphaned inode was noticed and the current file tried
    finally:
        c.close()
    b = O.OutputSet(tmp_path / "o", None).open()  # released: B gets it
    b.close()


# --- 2, 3, 4, 6, 15: the table cache -----------------------------------------------------------------
from nsys2prv.nsys import cache as C  # noqa: E402


def _digest(base: Path) -> dict[str, bytes]:
    return {e: Path(f"{base}{e}").read_bytes() for e in (".prv", ".pcf", ".row")}


def _warnings(summary: dict) -> list[str]:
    return [w for r in summary["reports"] for w in r["capture_warnings"]]


@pytest.fixture
def cached(ranks, tmp_path):
    """A warm cache of the two reports, the reference outputs, and each report's entry directory."""
    cache = tmp_path / "cache"
    _, s = convert_valid(["-m", *ranks, "--cache-dir", cache], tmp_path / "ref")
    assert _warnings(s) == []
    entries = [C.entry_dir(cache / "tables", r) for r in ranks]
    assert all(e.is_dir() for e in entries)
    return cache, entries, _digest(tmp_path / "ref")


def _rerun(ranks, cache, out, ref):
    _, s = convert_valid(["-m", *ranks, "--cache-dir", cache], out)
    assert _digest(out) == ref
    return s


def test_2_links_planted_at_every_cache_name_are_never_written_through(ranks, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    cache = tmp_path / "cache"
    names = [
        "kinds.json",
        "meta.n2p",
        "kernels.parquet",
        "mpi.parquet",
        "nvtx.parquet",
        "memset.empty.arrow",
        f".meta.pkl.tmp{os.getpid()}",
        f".kinds.json.tmp{os.getpid()}",
    ]
    for r in ranks:
        e = C.entry_dir(cache / "tables", r)
        e.mkdir(parents=True)
        for n in names:
            (e / n).symlink_to(victim)
    convert_valid(["-m", *ranks, "--cache-dir", cache], tmp_path / "o")
    assert victim.read_text() == "precious\n"
    for r in ranks:
        e = C.entry_dir(cache / "tables", r)
        assert not (e / "meta.n2p").is_symlink() and not (e / "kinds.json").is_symlink()  # replaced
        assert (e / "kernels.parquet").is_file() and not (e / "kernels.parquet").is_symlink()
    _, s = convert_valid(["-m", *ranks, "--cache-dir", cache], tmp_path / "o2")
    assert _digest(tmp_path / "o2") == _digest(tmp_path / "o") and victim.read_text() == "precious\n"
    assert _warnings(s) == []


def test_2_cache_temporaries_are_created_exclusively(tmp_path, monkeypatch):
    src = tmp_path / "r.sqlite"
    src.write_bytes(b"x")
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    monkeypatch.setattr(C.secrets, "token_hex", lambda n: "0123456789abcdef")
    cache = C.TableCache(tmp_path / "c" / "tables", src)
    assert cache.prepare()
    (cache.dir / ".meta.n2p.0123456789abcdef.tmp").symlink_to(victim)
    cache.store({"m": 1}, {})
    assert victim.read_text() == "precious\n" and not (cache.dir / "meta.n2p").exists()


def test_2_the_stored_overlap_lanes_are_read_back_and_never_through_a_link(tmp_path):
    src = tmp_path / "r.sqlite"
    src.write_bytes(b"x")
    cache = C.TableCache(tmp_path / "c" / "tables", src)
    tag, none, absent = "0123456789abcdef", "00000000000000aa", "00000000000000bb"
    cache.store_lanes(tag, {"kernels": 3, "memcpy": 2}, np.array([0, 1, 0, 0, 0], np.int64))
    cache.store_lanes(none, {"kernels": 3}, None)
    got = cache.lanes(tag)
    assert got is not None and {k: v.tolist() for k, v in got.items()} == {"kernels": [0, 1, 0], "memcpy": [0, 0]}
    assert got["kernels"].dtype == np.uint8 and cache.lanes(none) == {} and cache.lanes(absent) is None
    assert cache.notes == []
    with pytest.raises(ValueError):
        cache.store_lanes(tag, {"kernels": 4}, np.zeros(3, np.int64))
    victim = tmp_path / "victim"
    before = (cache.dir / f"lanes-{tag}.arrow").read_bytes()
    victim.write_bytes(before)
    (cache.dir / f"lanes-{tag}.arrow").unlink()
    (cache.dir / f"lanes-{tag}.arrow").symlink_to(victim)
    assert cache.lanes(tag) is None and any(f"lanes-{tag}.arrow" in n for n in cache.notes)
    cache.store_lanes(tag, {"kernels": 1}, np.array([2], np.int64))  # replaced, not written through
    assert not (cache.dir / f"lanes-{tag}.arrow").is_symlink() and cache.lanes(tag)["kernels"].tolist() == [2]
    assert victim.read_bytes() == before
    table = pa.table({"lane": np.zeros(3, np.int8)}).replace_schema_metadata({"rows": '[["kernels", 5]]'})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table)
    (cache.dir / f"lanes-{tag}.arrow").write_bytes(sink.getvalue().to_pybytes())  # rows that do not add up
    fresh = C.TableCache(tmp_path / "c" / "tables", src)
    assert fresh.lanes(tag) is None and any("not a file of lanes" in n for n in fresh.notes)


def test_3_a_cache_directory_replaced_by_a_link_deletes_nothing_through_it(ranks, tmp_path):
    cache = tmp_path / "cache"
    target = tmp_path / "target"
    for sub in ("0123456789abcdef/keep", "projects/keep"):
        (target / sub).mkdir(parents=True)
        (target / sub / "data.txt").write_text("mine\n")
    e = C.entry_dir(cache / "tables", ranks[0])
    e.parent.parent.mkdir(parents=True)
    e.parent.symlink_to(target)  # the input's directory (STEM-HASH) is a link
    e1 = C.entry_dir(cache / "tables", ranks[1])
    e1.parent.mkdir(parents=True)
    e1.symlink_to(target, target_is_directory=True)  # the entry itself (HASH) is a link
    convert_valid(["-m", *ranks, "--cache-dir", cache], tmp_path / "o")
    assert sorted(str(p.relative_to(target)) for p in target.rglob("*")) == [
        "0123456789abcdef",
        "0123456789abcdef/keep",
        "0123456789abcdef/keep/data.txt",
        "projects",
        "projects/keep",
        "projects/keep/data.txt",
    ]
    assert not e.parent.is_symlink() and not e1.is_symlink() and (e / "kinds.json").is_file()


def test_3_stale_entries_lose_only_the_names_the_cache_makes(tmp_path):
    src = tmp_path / "r.sqlite"
    src.write_bytes(b"x")
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    cache = C.TableCache(tmp_path / "c" / "tables", src)
    stale = cache.dir.parent / "00000000000000aa"
    (stale / "sub").mkdir(parents=True)
    (stale / "meta.pkl").write_bytes(b"old")
    (stale / "kernels.parquet").symlink_to(victim)
    (stale / "notes.txt").write_text("someone's\n")
    old = cache.dir.parent / "00000000000000bb"
    old.mkdir()
    (old / "meta.pkl").write_bytes(b"old")
    (old / "x.empty.pkl").write_bytes(b"old")
    (cache.dir.parent / "README").write_text("not an entry\n")
    assert cache.prepare()
    assert victim.read_text() == "precious\n"
    assert sorted(p.name for p in stale.iterdir()) == ["notes.txt", "sub"]  # not ours: kept
    assert not old.exists() and (cache.dir.parent / "README").exists()


class _Boom:
    def __reduce__(self):
        return (os.system, (f"touch {_Boom.marker}",))


def test_4_a_pickle_in_the_cache_is_never_loaded(ranks, tmp_path, cached):
    import pickle

    cache, entries, ref = cached
    marker = tmp_path / "pwned"
    _Boom.marker = marker
    for e in entries:
        bomb = pickle.dumps(_Boom())
        for p in [e / "meta.n2p", e / "meta.pkl", e / "kernels.empty.pkl", *e.glob("scan-*")]:
            p.write_bytes(bomb)
        (e / f"scan-{'f' * 16}.pkl").write_bytes(bomb)
    s = _rerun(ranks, cache, tmp_path / "o", ref)
    assert not marker.exists()
    notes = _warnings(s)
    assert len(notes) == 4 and all("not a file of this version of nsys2prv); not used, rebuilt" in n for n in notes)
    assert sorted(n.split("unusable ")[1].split(" ")[0] for n in notes) == ["meta.n2p"] * 2 + [
        p.name for e in entries for p in e.glob("scan-*.n2p")
    ]
    s = _rerun(ranks, cache, tmp_path / "o2", ref)  # rebuilt: a warm run again, nothing to say
    assert not marker.exists() and _warnings(s) == []


def test_6_a_valid_cache_object_of_the_wrong_type_is_a_miss(ranks, tmp_path, cached):
    cache, entries, ref = cached
    for e in entries:
        for p in e.glob("scan-*"):
            p.write_bytes(C.encode({"not": "a scan"}))
        (e / "meta.n2p").write_bytes(C.encode([1, 2, 3]))
    s = _rerun(ranks, cache, tmp_path / "o", ref)
    notes = _warnings(s)
    assert len(notes) == 4
    assert (
        sum("(a dict, not a Scan)" in n for n in notes) == 2
        and sum("(a list, not a ReportInfo)" in n for n in notes) == 2
    )
    assert _warnings(_rerun(ranks, cache, tmp_path / "o2", ref)) == []


def test_6_fields_of_the_wrong_type_are_refused():
    import pandas as pd

    from nsys2prv.nsys.identity import Identity
    from nsys2prv.pipeline.report import ReportInfo

    info = ReportInfo(
        "p",
        "3",
        "2024",
        "h",
        None,
        True,
        0,
        [],
        {"T": 1},
        Identity("h", {1: "a"}),
        pd.DataFrame({"pid": [1]}),
        lifetimes={1: (2, 3)},
    )
    back = C.decode(C.encode(info), ReportInfo, (Identity,))
    assert back.identity.process_names == {1: "a"} and back.lifetimes == {1: (2, 3)}
    assert back.devmap.equals(info.devmap)
    bad = C.encode(dataclasses.replace(info, hostname=7))  # (encode does not check)
    with pytest.raises(C.CacheDamage, match="ReportInfo.hostname is a int"):
        C.decode(bad, ReportInfo, (Identity,))
    with pytest.raises(C.CacheDamage, match="ReportInfo.identity is a dict"):
        C.decode(C.encode(dataclasses.replace(info, identity={1: 2})), ReportInfo, (Identity,))
    with pytest.raises(C.CacheDamage, match="ReportInfo.table_counts is a dict"):
        C.decode(C.encode(dataclasses.replace(info, table_counts={"T": "1"})), ReportInfo, (Identity,))
    with pytest.raises(C.CacheDamage, match="truncated"):
        C.decode(C.encode(info)[:-3], ReportInfo, (Identity,))
    with pytest.raises(C.CacheDamage, match="an object of type 'Identity'"):
        C.decode(C.encode(info), ReportInfo)  # a class not named by the caller
    with pytest.raises(C.CacheDamage, match="a ReportInfo, not a Identity"):
        C.decode(C.encode(info), Identity, (ReportInfo,))


def _retree(data: bytes, edit) -> bytes:
    """``data`` (an ``encode``d object) with its JSON tree changed by ``edit(tree)``, the blobs kept."""
    from nsys2prv.nsys.codec import MAGIC

    start = len(MAGIC) + 8
    n = int.from_bytes(data[len(MAGIC) : start], "little")
    tree = json.loads(data[start : start + n])
    edit(tree)
    head = json.dumps(tree).encode()
    return MAGIC + len(head).to_bytes(8, "little") + head + data[start + n :]


def test_6_plain_dicts_are_two_columns_and_a_tampered_one_is_refused():
    from nsys2prv.nsys.identity import Identity

    ident = Identity("h", {7: "a", 9: "b"}, {3: "t"}, {7: 0})
    data = C.encode(ident)
    seen: list = []
    _retree(data, lambda t: seen.append(t["v"]["process_names"]))
    assert seen == [{"$": "map", "k": [7, 9], "v": ["a", "b"]}]
    back = C.decode(data, Identity)
    assert back == ident and type(back.process_names) is dict

    def names(edit):
        return _retree(data, lambda t: edit(t["v"]["process_names"]))

    cases = {
        "a map of other lengths": lambda m: m["v"].pop(),
        "a map of other than plain values": lambda m: m["v"].__setitem__(0, ["a"]),
        "Identity.process_names is a dict": lambda m: m["k"].__setitem__(1, "9"),
    }
    for why, edit in cases.items():
        with pytest.raises(C.CacheDamage, match=why):
            C.decode(names(edit), Identity)
    with pytest.raises(C.CacheDamage, match="Identity.thread_names is a dict"):
        C.decode(_retree(data, lambda t: t["v"]["thread_names"]["v"].__setitem__(0, 3.5)), Identity)
    with pytest.raises(C.CacheDamage, match="not a sequence"):
        C.decode(_retree(C.encode([1, 2]), lambda t: t.__setitem__("v", {"1": 2})), list)
    assert C.decode(C.encode({1: (2, 3)}), dict) == {1: (2, 3)}  # (not plain: pairs, as before)
    assert C.decode(_retree(data, lambda t: None), Identity) == ident


def test_6_a_tampered_map_in_the_cache_is_a_miss_and_read_again(ranks, tmp_path, cached):
    cache, entries, ref = cached
    for e in entries:
        meta = e / "meta.n2p"
        meta.write_bytes(_retree(meta.read_bytes(), lambda t: t["v"]["table_counts"]["v"].__setitem__(0, "many")))
        for p in e.glob("scan-*"):
            p.unlink()  # (else a warm run reads no metadata)
    notes = _warnings(_rerun(ranks, cache, tmp_path / "o", ref))
    assert (
        notes
        == [
            "its table cache entry had an unusable meta.n2p (ReportInfo.table_counts is a dict); not used,"
            " rebuilt from the report"
        ]
        * 2
    )
    assert _warnings(_rerun(ranks, cache, tmp_path / "o2", ref)) == []


def test_15_a_parquet_of_another_kind_is_a_miss(ranks, tmp_path, cached):
    cache, entries, ref = cached
    for e in entries:
        (e / "kernels.parquet").write_bytes((e / "nvtx.parquet").read_bytes())
        for p in e.glob("scan-*"):
            p.unlink()  # (else a warm run reads no table)
    s = _rerun(ranks, cache, tmp_path / "o", ref)
    assert any("kernels.parquet has the columns of another table" in n for n in _warnings(s))
    s = _rerun(ranks, cache, tmp_path / "o2", ref)
    assert _warnings(s) == []


def test_15_a_manifest_that_is_a_list_is_a_miss(ranks, tmp_path, cached):
    cache, entries, ref = cached
    for e in entries:
        (e / "kinds.json").write_text("[1, 2]")
        for p in e.glob("scan-*"):
            p.unlink()
    s = _rerun(ranks, cache, tmp_path / "o", ref)
    assert len(_warnings(s)) == 2 and all("unusable kinds.json" in n for n in _warnings(s))
    s = _rerun(ranks, cache, tmp_path / "o2", ref)
    assert _warnings(s) == []


# --- 7, 15: text in numeric columns -------------------------------------------------------------------
def _changed(src: Path, dst: Path, *sql: str) -> Path:
    dst.write_bytes(src.read_bytes())
    with sqlite3.connect(dst) as con:
        for s in sql:
            con.execute(s)
    return dst


@pytest.mark.parametrize(
    "table,column,kind",
    [
        ("CUPTI_ACTIVITY_KIND_KERNEL", "demangledName", "kernels"),
        ("CUPTI_ACTIVITY_KIND_KERNEL", "end", "kernels"),
        ("CUPTI_ACTIVITY_KIND_KERNEL", "streamId", "kernels"),
        ("CUPTI_ACTIVITY_KIND_RUNTIME", "nameId", "cuda_api"),
        ("CUPTI_ACTIVITY_KIND_RUNTIME", "end", "cuda_api"),
        ("CUPTI_ACTIVITY_KIND_RUNTIME", "globalTid", "cuda_api"),
        ("NVTX_EVENTS", "end", "nvtx"),
    ],
)
def test_7_text_in_a_numeric_column_is_a_dropped_row_with_its_reason(ranks, tmp_path, table, column, kind):
    where = "eventType = 59" if table == "NVTX_EVENTS" else "1"
    bad = _changed(
        ranks[1],
        tmp_path / "rank1.sqlite",
        f"UPDATE {table} SET \"{column}\" = 'abc' WHERE rowid = (SELECT min(rowid) FROM {table} WHERE {where})",
    )
    _, good = convert_valid(["-m", *ranks], tmp_path / "good")
    code, text = convert(["-m", ranks[0], bad, tmp_path / "bad"])
    s = json.loads((tmp_path / "bad.summary.json").read_text())
    k, g = s["categories"][kind], good["categories"][kind]
    assert k["dropped"] == {f"{table}: text in the numeric column {column} (row not used)": 1}
    assert k["source_rows"] == g["source_rows"] and k["translated_rows"] == g["translated_rows"] - 1
    validate_trace(str(tmp_path / "bad"))
    row = Path(f"{tmp_path / 'bad'}.row").read_text()
    assert row.count("\n") == Path(f"{tmp_path / 'good'}.row").read_text().count("\n")  # no bogus stream/task


@pytest.mark.parametrize("table,column", [("MPI_RANKS", "rank"), ("PROCESSES", "pid")])
def test_7_text_in_a_metadata_column_is_said_not_a_crash(ranks, tmp_path, table, column):
    bad = _changed(ranks[1], tmp_path / "rank1.sqlite", f"UPDATE {table} SET \"{column}\" = 'abc'")
    with sqlite3.connect(bad) as con:
        n = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    _, s = convert_valid(["-m", ranks[0], bad], tmp_path / "t")
    assert s["reports"][1]["notes"] == [f"{n} row(s) of {table}: text in the numeric column {column} (row not used)"]


@pytest.mark.parametrize("table", ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS"])
def test_15_text_in_end_does_not_crash_the_lifetimes(ranks, tmp_path, table):
    from nsys2prv.nsys.database import Report
    from nsys2prv.nsys.lifetimes import process_lifetimes

    bad = _changed(ranks[1], tmp_path / "rank1.sqlite", f"UPDATE {table} SET \"end\" = 'abc'")
    good, damaged = Report(ranks[1]), Report(bad)
    try:
        want, got = process_lifetimes(good), process_lifetimes(damaged)
    finally:
        good.close()
        damaged.close()
    assert set(got) == set(want) and all(got[p][0] == want[p][0] and got[p][1] <= want[p][1] for p in want)


# --- 8: missing optional columns -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "table,column,kind",
    [("CUPTI_ACTIVITY_KIND_KERNEL", "gridX", "kernels"), ("CUPTI_ACTIVITY_KIND_RUNTIME", "correlationId", "cuda_api")],
)
def test_8_a_missing_optional_column_is_warned_and_invents_no_value(ranks, tmp_path, table, column, kind):
    bad = _changed(ranks[1], tmp_path / "rank1.sqlite", f'ALTER TABLE {table} RENAME COLUMN "{column}" TO "renamed"')
    with sqlite3.connect(bad) as con:
        n = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    _, s = convert_valid(["-m", ranks[0], bad], tmp_path / "t")
    why = f"{table} lacks optional column(s): {column} (their values are not written)"
    assert s["categories"][kind]["notes"][why] == n and s["warnings"] == [f"{kind}: {n} rows of {why}"]
    if column == "gridX":  # rank 1's kernels have no grid-size-x record at all (not a 0)
        ev = load_trace(str(tmp_path / "t")).events
        assert sorted(ev.loc[ev["type"] == 9101, "task"].unique()) == [1]
    code, text = convert(["--strict", "-m", ranks[0], bad, tmp_path / "strict"], expect_ok=False)
    assert code == 4 and f"--strict: 1 warning(s): {kind}: {n} rows of {why}" in text


# --- 14: inputs that are not plain exports --------------------------------------------------------------
def test_14_a_fifo_as_input_is_refused_with_one_line(tmp_path):
    fifo = tmp_path / "r.sqlite"
    os.mkfifo(fifo)
    code, text = convert([fifo, tmp_path / "o"], expect_ok=False)  # (before: blocked forever)
    assert (
        code == 2
        and text == f"nsys2prv: error: {fifo}: not a regular file (a FIFO, socket or device): give the export itself\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.sqlite"]


def test_14_a_wal_export_is_read_without_side_files(ranks, tmp_path):
    wal = tmp_path / "rank1.sqlite"
    wal.write_bytes(ranks[1].read_bytes())
    with sqlite3.connect(wal) as con:
        assert con.execute("PRAGMA journal_mode=WAL").fetchone() == ("wal",)
    con.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rank1.sqlite"]
    _, ref = convert_valid(["-m", ranks[0], ranks[1], "--no-cache"], tmp_path / "ref")
    _, s = convert_valid(["-m", ranks[0], wal, "--no-cache"], tmp_path / "o")
    assert not (tmp_path / "rank1.sqlite-shm").exists() and not (tmp_path / "rank1.sqlite-wal").exists()
    assert Path(f"{tmp_path / 'o'}.prv").read_bytes() == Path(f"{tmp_path / 'ref'}.prv").read_bytes()


def test_14_a_wal_export_opens_without_creating_anything(ranks, tmp_path, monkeypatch):
    """Read-only media (as root, permissions cannot show it): every file creation beside the export
    fails, as it would there."""
    from nsys2prv.nsys.database import Report

    wal = tmp_path / "rank1.sqlite"
    wal.write_bytes(ranks[1].read_bytes())
    with sqlite3.connect(wal) as con:
        con.execute("PRAGMA journal_mode=WAL")
    con.close()
    os.chmod(tmp_path, 0o555)
    try:
        if os.access(tmp_path, os.W_OK) and os.geteuid() != 0:
            pytest.skip("this file system ignores directory permissions")
        r = Report(wal)
        try:
            assert r.count("CUPTI_ACTIVITY_KIND_KERNEL") == 2
        finally:
            r.close()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["rank1.sqlite"]
    finally:
        os.chmod(tmp_path, 0o755)


# --- 9, 11, 16: what the system says, and OUT ------------------------------------------------------------
@pytest.fixture
def tiny_fs(tmp_path):
    """A tiny tmpfs (``_fill`` it)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True)
    if res.returncode != 0:
        pytest.skip(
            "cannot mount a tmpfs here to fill it (needs root or CAP_SYS_ADMIN: "
            f"sudo -E python3 -m pytest tests/test_security.py -k test_9): {res.stderr.decode().strip()}"
        )
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def _fill(mnt: Path) -> None:
    fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"\0" * 512):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)


def test_9_a_short_write_keeps_its_cause(ranks, tiny_fs, monkeypatch):
    import nsys2prv.pipeline.conversion as P

    def merge_fails(*a, **k):  # numpy's tofile on a full device: no errno, no path
        _fill(tiny_fs)
        raise OSError("159100 requested and 102384 written")

    monkeypatch.setattr(P, "_convert", merge_fails)
    code, text = convert(["-m", *ranks, tiny_fs / "o"], expect_ok=False)
    assert code == 2 and text == (
        f"nsys2prv: error: {tiny_fs / 'o'}: cannot write the outputs (No space left on "
        "device; 159100 requested and 102384 written)\n"
    )
    assert sorted(p.name for p in tiny_fs.iterdir()) == ["filler"]
    assert O.write_error_cause(OSError(28, "No space left on device"), tiny_fs) == "No space left on device"


def test_9_a_short_write_under_a_file_size_limit_says_so(tmp_path):
    import resource

    old = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 30, old[1]))
    try:
        text = O.write_error_cause(OSError("10 requested and 5 written"), tmp_path)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, old)
    assert text == "File too large: the file size limit is 1073741824 bytes (ulimit -f); 10 requested and 5 written"


@pytest.mark.parametrize("out", ["", ".", "/", "DIR", "DIR/", "DIR/.."])
def test_11_16_a_directory_as_out_is_refused_with_one_line(ranks, tmp_path, monkeypatch, out):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "DIR").mkdir()
    before = sorted(p.name for p in tmp_path.iterdir())
    code, text = convert([ranks[0], out], expect_ok=False)
    shown = str(Path(out)) if out else "."
    assert code == 2 and text == (
        f"nsys2prv: error: {shown}: is a directory: OUT is the base name of the output "
        "files, not where they go (e.g. DIR/trace writes DIR/trace.prv)\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == before and not Path("/.prv").exists()
    assert not (tmp_path.parent / f"{tmp_path.name}.prv").exists()


def test_16_stdout_on_a_full_device_is_one_line_after_the_outputs(ranks, tmp_path):
    with open("/dev/full", "w") as full:
        res = subprocess.run(
            [sys.executable, "-m", "nsys2prv", "--no-cache", "-m", *map(str, ranks), str(tmp_path / "o")],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
        )
    assert res.returncode == 2 and res.stderr == (
        "nsys2prv: error: cannot write the summary to the standard output "
        "(No space left on device); the outputs are written\n"
    )
    validate_trace(str(tmp_path / "o"))


# --- 12: the commit is one step ---------------------------------------------------------------------------
SET = ("t.prv", "t.pcf", "t.row", "t.summary.json")


def _staged(tmp_path: Path, text: str) -> O.OutputSet:
    out = O.OutputSet(tmp_path / "t", None).open()
    for name in SET:
        (out.stage / name).write_text(text + name)
    return out


def test_12_a_signal_during_the_moves_waits_for_the_whole_set(tmp_path, monkeypatch):
    from nsys2prv.core.errors import STOP_SIGNALS, catch_signals

    for name in SET:
        (tmp_path / name).write_text("old" + name)
    (tmp_path / "t.pop.json").write_text("old")  # not written by the new run: removed
    out = _staged(tmp_path, "new")
    real, moved = O._move, []  # (every move into place: a swap or a rename)

    def replace(src, dst, **kw):
        if "dst_dir_fd" in kw:  # a move into place (renameat; not the manifest's)
            if not moved:
                os.kill(os.getpid(), signal.SIGTERM)  # arrives as the first move begins
            moved.append(Path(dst).name)
        return real(src, dst, **kw)

    import threading

    old_handlers = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    catch_signals()
    monkeypatch.setattr(O, "_move", replace)
    idle = threading.Event()
    other = threading.Thread(target=idle.wait)  # (a process with threads: a signal mask would not do)
    other.start()
    try:
        with pytest.raises(SystemExit) as stop:
            out.commit()
    finally:
        idle.set()
        other.join()
        monkeypatch.undo()
        for s, h in old_handlers.items():
            signal.signal(s, h)
        out.close()
    assert stop.value.code == 128 + signal.SIGTERM
    assert sorted(moved) == sorted(SET)
    assert {n: (tmp_path / n).read_text() for n in SET} == {n: "new" + n for n in SET}
    assert not (tmp_path / "t.pop.json").exists() and leftovers(tmp_path) == []


def test_12_a_run_killed_during_the_moves_is_completed_by_the_next_one(tmp_path):
    for name in SET:
        (tmp_path / name).write_text("old" + name)
    (tmp_path / "t.pop.json").write_text("old")
    pid = os.fork()
    if pid == 0:  # the run that is killed after one move
        try:
            out = _staged(tmp_path, "new")
            real = O._move

            def replace(src, dst, **kw):
                real(src, dst, **kw)
                if "dst_dir_fd" in kw:
                    os.kill(os.getpid(), signal.SIGKILL)

            O._move = replace
            out.commit()
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    texts = {n: (tmp_path / n).read_text() for n in SET}
    assert sorted(texts.values()) != sorted("new" + n for n in SET)  # mixed: one moved, three not
    nxt = O.OutputSet(tmp_path / "t", None).open()
    try:
        assert {n: (tmp_path / n).read_text() for n in SET} == {n: "new" + n for n in SET}
        assert not (tmp_path / "t.pop.json").exists()
        assert nxt.notes[0].startswith("completed the moving into place of an interrupted earlier run's outputs: ")
        assert nxt.notes[1].startswith("removed 1 temporary file(s) of an interrupted earlier run: .t.out")
    finally:
        nxt.close()
    assert leftovers(tmp_path) == []


def test_12_a_forged_manifest_moves_nothing_elsewhere(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    dead = 2**22 + 7
    stage = tmp_path / f".t.out{dead}.abc"
    stage.mkdir()
    (stage / "x").write_text("x")
    (stage / O.COMMIT).write_text(json.dumps({"files": ["../victim", "x"], "obsolete": ["victim"], "cfgs": None}))
    nxt = O.OutputSet(tmp_path / "t", None).open()
    nxt.close()
    assert victim.read_text() == "precious\n" and not (tmp_path / "x").exists() and not stage.exists()


def test_12_a_manifest_naming_views_for_a_run_without_cfgs_moves_no_view(tmp_path):
    """A manifest listing views (cfg_files) without a --cfgs DIR, found by a run without one: the
    outputs are completed, the views are not moved anywhere (this used to stop with a TypeError)."""
    dead = 2**22 + 9
    stage = tmp_path / f".t.out{dead}.abc"
    (stage / "cfgs").mkdir(parents=True)
    (stage / "t.prv").write_text("new")
    (stage / "cfgs" / "v.cfg").write_text("view")
    (stage / O.COMMIT).write_text(
        json.dumps({"files": ["t.prv"], "obsolete": [], "cfgs": None, "cfg_files": ["v.cfg"]})
    )
    nxt = O.OutputSet(tmp_path / "t", None).open()
    nxt.close()
    assert (tmp_path / "t.prv").read_text() == "new" and not stage.exists()
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["t.prv"]


# --- 13: a signal stops the workers before the staging directory goes -----------------------------------
def _write_forever(d: str) -> None:
    i = 0
    while True:
        Path(d).mkdir(parents=True, exist_ok=True)
        (Path(d) / f"chunk{os.getpid()}.{i % 3}").write_bytes(b"x" * 1000)
        i += 1


def _sleep(seconds: float) -> int:
    import time

    time.sleep(seconds)
    return os.getpid()


def _stopped(pid: int) -> bool:
    """The process no longer runs: gone, or a zombie (exited, its status not yet collected)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_13_closing_after_a_signal_stops_busy_workers_that_ignore_sigterm(tmp_path):
    from nsys2prv.pipeline.parallel import Local

    ex = Local(2)
    ex.map(_sleep, [0, 0])  # the pool (its workers ignore SIGTERM)
    stage = tmp_path / ".o.out1" / "work"
    futures = [ex.pool.submit(_write_forever, str(stage)) for _ in range(2)]
    while len(list(stage.glob("chunk*"))) < 2:  # both writing
        pass
    procs = list(ex.pool._processes.values())
    ex.close(final=True)  # what the conversion does on Interrupted
    for p in procs:
        p.join(10)
    # stopped, as the system sees it (Process.is_alive stays True for a child whose exit status the pool's
    # own manager thread collected first: CPython's Popen.poll takes ECHILD for "not yet created")
    assert all(_stopped(p.pid) for p in procs)
    import concurrent.futures

    concurrent.futures.wait(futures, timeout=30)  # (the pool's thread marks them, asynchronously)
    assert all(f.done() for f in futures)
    import shutil

    shutil.rmtree(tmp_path / ".o.out1")
    os.sched_yield()
    assert not (tmp_path / ".o.out1").exists()  # nobody left to write it again


def test_13_a_signal_during_a_forked_call_does_not_wait_for_it(tmp_path):
    from nsys2prv.core.errors import Interrupted
    from nsys2prv.core.workers import forked

    seen = []
    with pytest.raises(Interrupted):
        with forked([(_sleep, (3600,))]) as (future,):
            import time

            while not future.running():
                time.sleep(0.01)
            seen = [p for p in multiprocessing_children()]
            raise Interrupted(signal.SIGINT)  # (as the handler raises it in the merge)
    assert seen and all(not p.is_alive() for p in seen)


def multiprocessing_children():
    import multiprocessing

    return multiprocessing.active_children() or []


# --- 10: names in the Markdown table ------------------------------------------------------------------------
def test_10_a_region_name_with_a_bar_and_a_newline_keeps_the_markdown_table(ranks, tmp_path):
    name = "st|ep\nnext"
    renamed = [
        _changed(
            r, tmp_path / r.name, "UPDATE NVTX_EVENTS SET text = 'st|ep' || char(10) || 'next' WHERE text = 'step'"
        )
        for r in ranks
    ]
    convert(["-m", *renamed, "--region", name, tmp_path / "t"])
    md = Path(f"{tmp_path / 't'}.pop.md").read_text().splitlines()
    table = [line for line in md if line.startswith("|")]
    assert len({line.count(" | ") - line.count("\\| ") for line in table[2:]}) == 1  # every row: same cells
    assert "st\\|ep<br>next" in table[0] and all("\n" not in line for line in table)
    header = [c for c in table[0].split(" | ")]
    assert len(header) == len(table[2].split(" | "))


# --- 16: the wrapper and an argument containing " -- " ------------------------------------------------------
@pytest.mark.parametrize(
    "args,want",
    [
        (
            ["./app", "a -- b"],
            [
                "-t",
                "cuda,nvtx,mpi,osrt",
                "--mpi-impl=openmpi",
                "-s",
                "none",
                "--cpuctxsw=none",
                "--force-overwrite=true",
                "-o",
                "{out}/rank0",
                "./app",
                "a -- b",
            ],
        ),
        (
            ["-t", "cuda", "--", "./app", "x -- y"],
            ["-t", "cuda", "--force-overwrite=true", "-o", "{out}/rank0", "./app", "x -- y"],
        ),
    ],
)
def test_16_the_wrapper_takes_an_argument_containing_a_separator(tmp_path, args, want):
    import shutil

    from test_wrapper import FAKE_NSYS, TOOLS, logged, run

    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "nsys").write_text(FAKE_NSYS)
    (tmp_path / "bin" / "nsys").chmod(0o755)
    (tmp_path / "tools").mkdir()
    for name in TOOLS:
        (tmp_path / "tools" / name).symlink_to(shutil.which(name))
    res = run(tmp_path, tmp_path / "bin", args, OMPI_COMM_WORLD_RANK="0")
    assert res.returncode == 0 and res.stderr == ""  # (was: "$1: unbound variable")
    got, _, _ = logged(tmp_path)
    assert got == ["profile", *[w.format(out=tmp_path / "reports") for w in want]]


# --- 16: duplicate rows ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "table,kind", [("CUPTI_ACTIVITY_KIND_KERNEL", "kernels"), ("CUPTI_ACTIVITY_KIND_RUNTIME", "cuda_api")]
)
def test_16_a_duplicated_row_is_translated_once_and_counted(ranks, tmp_path, table, kind):
    from nsys2prv.nsys.readers.base import DUPLICATE

    bad = _changed(ranks[1], tmp_path / "rank1.sqlite", f"INSERT INTO {table} SELECT * FROM {table} LIMIT 1")
    _, good = convert_valid(["-m", *ranks], tmp_path / "good")
    _, s = convert_valid(["-m", ranks[0], bad], tmp_path / "bad")
    k, g = s["categories"][kind], good["categories"][kind]
    assert k["dropped"] == {DUPLICATE: 1} and k["source_rows"] == g["source_rows"] + 1
    assert k["translated_rows"] == g["translated_rows"]
    assert (
        Path(f"{tmp_path / 'bad'}.prv").read_bytes().split(b"\n", 1)[1]
        == Path(f"{tmp_path / 'good'}.prv").read_bytes().split(b"\n", 1)[1]
    )


def test_3_the_users_own_link_for_the_tables_directory_is_followed(tmp_path):
    src = tmp_path / "r.sqlite"
    src.write_bytes(b"x")
    (tmp_path / "scratch").mkdir()
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "tables").symlink_to(tmp_path / "scratch")  # made by the user (this uid)
    C.TableCache(tmp_path / "c" / "tables", src).store({"m": 1}, {})
    assert (tmp_path / "c" / "tables").is_symlink()
    assert [p.name for p in (tmp_path / "scratch").glob("*/*/meta.n2p")] == ["meta.n2p"]
    assert C.TableCache(tmp_path / "c" / "tables", src).meta(dict) == {"m": 1}


# --- 16: the tables' fates agree with the categories' drops ---------------------------------------------------
def test_16_the_tables_fates_count_the_dropped_rows(ranks, tmp_path):
    """A table whose rows are partly dropped (a duplicate row, rows outside the -f window) is not said
    to be all translated: its fates split into "translated" and "dropped", and per kind the dropped
    rows of the tables' fates equal the drops of the summary's category."""
    bad = _changed(
        ranks[1],
        tmp_path / "rank1.sqlite",
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1",
    )
    _, s = convert_valid(["-m", ranks[0], bad], tmp_path / "o")
    for kind in ("kernels", "cuda_api"):
        fates = [f for t in s["tables"] for f in t["fates"] if f.get("kind") == kind]
        assert sum(f["rows"] for f in fates if f["fate"] == "dropped") == sum(s["categories"][kind]["dropped"].values())
        assert sum(f["rows"] for f in fates) == s["categories"][kind]["source_rows"]
    assert any(
        f["fate"] == "dropped" and f["rows"] == 1
        for t in s["tables"]
        for f in t["fates"]
        if t["table"] == "CUPTI_ACTIVITY_KIND_KERNEL"
    )
    assert not [u for u in s["untranslated"] if u["table"] == "CUPTI_ACTIVITY_KIND_KERNEL"]


def test_16_duplicates_found_alike_in_sorted_and_unsorted_tables():
    """A table sorted by start is checked for repeated rows among equal starts only; an unsorted one
    by hashing every column: both find the same repeats (and keep a row of the same start that differs)."""
    import pandas as pd

    from nsys2prv.nsys.readers.base import DUPLICATE, ReadResult, _drop_duplicates

    df = pd.DataFrame(
        {
            "start": [1, 2, 2, 2, 3, 5, 5],
            "end": [4, 6, 6, 7, 8, 9, 9],
            "name": pd.Categorical(["a", "b", "b", "b", "c", "d", "d"]),
        }
    )
    for table in (df, df.iloc[[6, 0, 3, 1, 5, 2, 4]].reset_index(drop=True)):
        res = ReadResult(table=table, source_rows=len(table))
        _drop_duplicates(res)
        assert res.dropped == {DUPLICATE: 2} and len(res.table) == 5
        assert sorted(map(tuple, res.table[["start", "end"]].to_numpy().tolist())) == [
            (1, 4),
            (2, 6),
            (2, 7),
            (3, 8),
            (5, 9),
        ]
