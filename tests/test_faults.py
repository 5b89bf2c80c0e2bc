"""Faults: never half-done, never orphaned, never silent.

Absurd timestamps are dropped and counted; the output set is written as one unit behind a lock; a
damaged cache entry is rebuilt; signals stop the workers and clean up; OS errors are one line naming
the path; an OUT that looks like an input is refused."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, convert, convert_valid
from test_schema_versions import build_rank

MPI8 = ROOT / "tests" / "data" / "mpi8"
EXT = (".prv", ".pcf", ".row", ".summary.json", ".sync.json", ".pop.json")


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    d = tmp_path_factory.mktemp("faults")
    return [build_rank(d / f"rank{r}.sqlite", "3.13.2", r) for r in (0, 1)]


def digest(base: Path) -> dict[str, str]:
    return {e: hashlib.sha256(Path(f"{base}{e}").read_bytes()).hexdigest() for e in EXT if Path(f"{base}{e}").is_file()}


def leftovers(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if p.name.startswith("."))


# --- OUT ---------------------------------------------------------------------------------------------
def test_an_out_that_looks_like_an_input_is_refused(ranks, tmp_path):
    code, text = convert(["-m", *ranks], expect_ok=False)  # the last report taken as OUT
    assert code == 2 and "looks like an input report" in text and str(ranks[1]) in text
    assert not Path(f"{ranks[1]}.prv").exists()


# --- timestamps ----------------------------------------------------------------------------------------
def test_an_absurd_timestamp_is_dropped_and_counted(ranks, tmp_path):
    bad = tmp_path / "rank1.sqlite"
    bad.write_bytes(ranks[1].read_bytes())
    with sqlite3.connect(bad) as con:
        con.execute(
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = 9223372036854775807 "
            "WHERE rowid = (SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)"
        )
    good, s_good = convert_valid(["-m", ranks[0], ranks[1]], tmp_path / "good")
    trace, s = convert_valid(["-m", ranks[0], bad], tmp_path / "bad")
    k_good, k = s_good["categories"]["kernels"], s["categories"]["kernels"]
    assert k["source_rows"] == k_good["source_rows"]
    assert k["translated_rows"] == k_good["translated_rows"] - 1
    assert k["dropped"] == {"timestamp more than a week away from the report's other rows (corrupt row)": 1}
    assert s["records"]["end_ns"] == s_good["records"]["end_ns"]


# --- the output set ----------------------------------------------------------------------------------
def test_a_bad_cfgs_destination_is_refused_before_any_work(ranks, tmp_path):
    convert(["-m", *ranks, tmp_path / "t"])
    before = digest(tmp_path / "t")
    (tmp_path / "afile").write_text("x")
    code, text = convert(["-m", *ranks, "--cfgs", tmp_path / "afile" / "cfgs", tmp_path / "t"], expect_ok=False)
    assert code == 2 and "nsys2prv: error:" in text
    code, text = convert(["-m", *ranks, "--cfgs", tmp_path / "afile", tmp_path / "t"], expect_ok=False)
    assert code == 2 and "--cfgs needs a directory" in text
    assert digest(tmp_path / "t") == before and leftovers(tmp_path) == []


def test_an_output_that_is_a_directory_leaves_the_others_alone(ranks, tmp_path):
    convert(["-m", *ranks, tmp_path / "t"])
    before = digest(tmp_path / "t")
    (tmp_path / "t.pcf").unlink()
    (tmp_path / "t.pcf").mkdir()
    code, text = convert(["-m", *ranks, tmp_path / "t"], expect_ok=False)
    assert code == 2 and f"{tmp_path / 't.pcf'}: is a directory" in text
    del before[".pcf"]
    assert digest(tmp_path / "t") == before and leftovers(tmp_path) == []


def test_a_second_run_on_the_same_out_is_refused(ranks, tmp_path):
    lock = tmp_path / ".t.lock"
    with open(lock, "w") as fh:
        fh.write("4242")
        fh.flush()
        fcntl.flock(fh, fcntl.LOCK_EX)
        code, text = convert(["-m", *ranks, tmp_path / "t"], expect_ok=False)
    assert code == 2 and "another nsys2prv (pid 4242) is writing this output" in text
    assert not (tmp_path / "t.prv").exists()


def test_temporaries_of_dead_runs_are_removed(ranks, tmp_path):
    dead = 2**22 + 12345  # above the default pid_max: no such process
    (tmp_path / f".t.out{dead}" / "work").mkdir(parents=True)
    (tmp_path / f".t.work{dead}").mkdir()
    (tmp_path / f".t.prv.tmp{dead}").write_bytes(b"x" * 100)
    (tmp_path / ".other.work1").mkdir()  # another OUT's: left alone
    _, s = convert_valid(["-m", *ranks], tmp_path / "t")
    assert leftovers(tmp_path) == [".other.work1"]
    assert any("removed 3 temporary file(s) of an interrupted earlier run" in n for n in s["notes"])


def test_the_summary_names_the_final_paths(ranks, tmp_path):
    _, s = convert_valid(["-m", *ranks, "--cfgs", tmp_path / "views"], tmp_path / "t")
    assert all(".out" not in p for p in s["outputs"]), s["outputs"]
    assert str(tmp_path / "t.prv") in s["outputs"] and str(tmp_path / "t.summary.json") not in s["outputs"]
    assert (tmp_path / "views" / "basics" / "states.cfg").exists()


# --- the table cache ---------------------------------------------------------------------------------
def test_a_damaged_cache_entry_is_rebuilt(ranks, tmp_path):
    cache = tmp_path / "cache"
    convert(["-m", *ranks, "--cache-dir", cache, tmp_path / "first"])
    parquet = sorted(cache.rglob("kernels.parquet"))
    assert parquet
    parquet[0].write_bytes(parquet[0].read_bytes()[:40])  # truncated
    _, s = convert_valid(["-m", *ranks, "--cache-dir", cache], tmp_path / "second")
    assert any("table cache entry was damaged" in w for r in s["reports"] for w in r["capture_warnings"])
    first = digest(tmp_path / "first")
    second = digest(tmp_path / "second")
    assert first[".prv"] == second[".prv"] and first[".pop.json"] != "" and first[".row"] == second[".row"]
    _, s = convert_valid(["-m", *ranks, "--cache-dir", cache], tmp_path / "third")  # rebuilt: no note
    assert not any("damaged" in w for r in s["reports"] for w in r["capture_warnings"])


# --- signals and the operating system (a real command in a subprocess) ------------------------------
def _command(out: Path, *extra) -> list[str]:
    ranks = sorted(str(p) for p in MPI8.glob("rank*.sqlite"))
    return [sys.executable, "-m", "nsys2prv", "-q", "--no-cache", "-j", "2", *extra, "-m", *ranks, str(out)]


def processes_of(marker: str) -> list[int]:
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) != os.getpid():
            try:
                if marker in (d / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(d.name))
            except OSError:
                pass
    return found


def _wait_gone(marker: str, seconds: float = 5.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while processes_of(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    return processes_of(marker)


@pytest.mark.faults  # the slow tier: python3 -m pytest -m faults
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGHUP, 129)])
def test_a_signal_stops_everything_and_keeps_the_previous_outputs(tmp_path, sig, code):
    out = tmp_path / f"sig{int(sig)}"
    subprocess.run(_command(out), check=True, capture_output=True, env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)})
    before = digest(out)
    proc = subprocess.Popen(
        _command(out), stderr=subprocess.PIPE, text=True, env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    )
    time.sleep(1.5)  # in the middle of the per-report stages
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    if proc.returncode == 0:
        pytest.skip("the conversion finished before the signal")
    assert proc.returncode == code, err
    assert err.strip().splitlines() == [f"nsys2prv: stopped by {sig.name}; nothing written (earlier outputs are kept)"]
    assert _wait_gone(str(out)) == []
    assert digest(out) == before and leftovers(tmp_path) == []


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for t in Path(f"/proc/{pid}/task").iterdir() for c in (t / "children").read_text().split()]
    except OSError:
        return []


@pytest.mark.faults  # the slow tier: python3 -m pytest -m faults
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_while_the_command_starts_stops_its_early_process(tmp_path, sig, code):
    """The command's first child (``pipeline/early.py``: the reports' lifetimes while the main process
    imports) is stopped with it: one line, no output, no process left."""
    out = tmp_path / f"early{int(sig)}"
    proc = subprocess.Popen(
        _command(out), stderr=subprocess.PIPE, text=True, env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    )
    deadline = time.monotonic() + 10
    while not _children(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert _children(proc.pid), "no early process started"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err
    assert err.strip().splitlines() == [f"nsys2prv: stopped by {sig.name}; nothing written (earlier outputs are kept)"]
    assert _wait_gone(str(out)) == []
    assert not Path(f"{out}.prv").exists() and leftovers(tmp_path) == []


@pytest.mark.faults  # the slow tier: python3 -m pytest -m faults
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_die_with_a_killed_parent_and_the_next_run_cleans_up(tmp_path):
    out = tmp_path / "killed"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    proc = subprocess.Popen(_command(out), stderr=subprocess.DEVNULL, env=env)
    time.sleep(1.5)
    proc.kill()
    proc.wait()
    assert _wait_gone(str(out), 3.0) == []  # within a second or two
    subprocess.run(_command(out), check=True, capture_output=True, env=env)
    assert leftovers(tmp_path) == [] and json.loads(Path(f"{out}.summary.json").read_text())["ranks"] == 8


def _limit_file_size():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
    resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))


@pytest.mark.faults  # the slow tier: python3 -m pytest -m faults
def test_a_file_size_limit_is_one_line_naming_the_path(tmp_path):
    out = tmp_path / "limited"
    res = subprocess.run(
        _command(out),
        capture_output=True,
        text=True,
        preexec_fn=_limit_file_size,
        env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)},
    )
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1, res.stderr
    assert lines[0].startswith("nsys2prv: error: ") and str(tmp_path) in lines[0], lines[0]
    assert "Traceback" not in res.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("limited")) == []
    assert leftovers(tmp_path) == []


# --- data the exports hold but the readers cannot read -------------------------------------------------
def _renamed(src: Path, dst: Path, table: str, old: str, new: str) -> Path:
    dst.write_bytes(src.read_bytes())
    with sqlite3.connect(dst) as con:
        con.execute(f'ALTER TABLE {table} RENAME COLUMN "{old}" TO "{new}"')
    return dst


@pytest.mark.parametrize(
    "table,column,kind",
    [
        ("CUPTI_ACTIVITY_KIND_KERNEL", "streamId", "kernels"),
        ("CUPTI_ACTIVITY_KIND_KERNEL", "start", "kernels"),
        ("CUPTI_ACTIVITY_KIND_RUNTIME", "nameId", "cuda_api"),
    ],
)
def test_a_missing_column_is_counted_warned_and_strict_fails(ranks, tmp_path, table, column, kind):
    bad = _renamed(ranks[1], tmp_path / "rank1.sqlite", table, column, "renamed")
    with sqlite3.connect(bad) as con:
        n = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    _, good = convert_valid(["-m", *ranks], tmp_path / "good")
    convert(["-m", ranks[0], bad, tmp_path / "bad"])
    s = json.loads((tmp_path / "bad.summary.json").read_text())
    k = s["categories"][kind]
    why = f"{table} lacks column(s) the reader needs: {column} (not translated)"
    assert k["dropped"][why] == n and k["source_rows"] == good["categories"][kind]["source_rows"]
    assert k["translated_rows"] == good["categories"][kind]["translated_rows"] - n
    assert s["warnings"] == [f"{kind}: {n} rows of {why}"]
    code, text = convert(["--strict", "-m", ranks[0], bad, tmp_path / "strict"], expect_ok=False)
    assert code == 4 and f"--strict: 1 warning(s): {kind}:" in text
    assert Path(f"{tmp_path / 'strict'}.prv").exists()  # the outputs are written


def test_a_missing_short_name_falls_back_to_the_demangled_one(ranks, tmp_path):
    bad = _renamed(ranks[1], tmp_path / "rank1.sqlite", "CUPTI_ACTIVITY_KIND_KERNEL", "shortName", "renamed")
    _, s = convert_valid(["-m", ranks[0], bad], tmp_path / "t")
    assert s["warnings"] == [] and not s["categories"]["kernels"]["dropped"]


def test_a_missing_string_table_is_warned(ranks, tmp_path):
    bad = tmp_path / "rank1.sqlite"
    bad.write_bytes(ranks[1].read_bytes())
    with sqlite3.connect(bad) as con:
        con.execute("DROP TABLE StringIds")
    _, s = convert_valid(["-m", ranks[0], bad], tmp_path / "t")
    assert any("no StringIds table" in w and "1 report(s)" in w for w in s["warnings"])


def test_a_blob_name_is_decoded(ranks, tmp_path):
    bad = tmp_path / "rank0.sqlite"
    bad.write_bytes(ranks[0].read_bytes())
    with sqlite3.connect(bad) as con:
        sid = con.execute("SELECT shortName FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1").fetchone()[0]
        con.execute("UPDATE StringIds SET value = CAST('blob_kernel' AS BLOB) WHERE id = ?", (sid,))
    trace, _ = convert_valid(["-m", bad, ranks[1]], tmp_path / "t")
    pcf = Path(f"{tmp_path / 't'}.pcf").read_text()
    assert "blob_kernel" in pcf and "b'blob_kernel'" not in pcf


def test_files_of_an_earlier_run_that_this_run_does_not_write_are_removed(ranks, tmp_path):
    convert(["-z", "-m", *ranks, tmp_path / "t"])
    assert (tmp_path / "t.prv.gz").exists()
    convert(["-m", *ranks, tmp_path / "t"])
    assert (tmp_path / "t.prv").exists() and not (tmp_path / "t.prv.gz").exists()
