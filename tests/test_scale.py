"""Speed-and-scale machinery (issue #7): the streaming writer, parallel per-report stages, Dask and
the Parquet table cache must never change a byte of the output."""

from __future__ import annotations

import gzip
import os
import re
import shutil
from functools import partial
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import CLOVERLEAF, MPI4, ROOT, validate_trace
from nsysgen import cloverleaf_like
from reference_writer import reference_writer
from test_gpu_depth import build as build_full
from test_rank_scaling import build_rank as gpu_rank
from test_rows import overlap_export
from test_schema_versions import build_rank

import nsys2prv.pipeline.conversion as P
from nsys2prv import cli
from nsys2prv.cli import main
from nsys2prv.config import Config
from nsys2prv.nsys.database import Report

pytestmark = pytest.mark.scale  # the slow tier: python3 -m pytest -m scale

OUTPUTS = (".prv", ".pcf", ".row", ".pop.json", ".pop.csv", ".gpu_metrics.csv")


def run(args, out: Path, cache: Path | None = None, merge_round: int | None = None) -> Path:
    """The command line on ``args``; ``merge_round``: Config.merge_round_records (no option sets it)."""
    extra = ["--cache-dir", str(cache)] if cache else ["--no-cache"]
    with pytest.MonkeyPatch.context() as mp:
        if merge_round is not None:
            mp.setattr(cli, "Config", partial(Config, merge_round_records=merge_round))
        res = CliRunner().invoke(main, ["-q", *extra, *[str(a) for a in args], str(out)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return out


def same_outputs(a: Path, b: Path) -> None:
    for ext in OUTPUTS:
        fa, fb = Path(f"{a}{ext}"), Path(f"{b}{ext}")
        assert fa.exists() == fb.exists(), ext
        if not fa.exists():
            continue
        ta, tb = fa.read_bytes(), fb.read_bytes()
        if ext == ".pop.json":  # the label is the output's name
            ta, tb = (ta.replace(b'"label": "%s"' % p.name.encode(), b'"label": "OUT"') for ta, p in ((ta, a), (tb, b)))
        assert ta == tb, f"{fa} differs from {fb}"


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    """(name, arguments) of conversions covering every category, several reports and -f."""
    d = tmp_path_factory.mktemp("scale")
    ranks = [build_rank(d / f"rank{r}.sqlite", "3.13.2", r) for r in (0, 1)]
    full = build_full(d / "full.sqlite", "3.22")
    shared = [build_rank(d / f"shared{r}.sqlite", "3.0.0", r, host="nodeA") for r in (0, 1)]  # one GPU 0
    out = [
        ("two ranks", ["-m", *ranks]),
        ("two ranks on one GPU", ["-m", *shared]),
        ("filter", ["-t", "cuda_api,nvtx,mpi", "-m", *ranks, "-f", "compute"]),
        ("everything", ["-t", "all,osrt", full]),
    ]
    if MPI4.exists():
        out.append(("mpi4", ["-t", "all,osrt", "-m", *sorted(MPI4.glob("rank*.sqlite"))]))
    out.append(("cloverleaf-generated", ["-t", "all,osrt", cloverleaf_like(d / "clover-generated.sqlite")]))
    if CLOVERLEAF.exists():
        out.append(("cloverleaf", ["-t", "all,osrt", CLOVERLEAF]))
    return out


def test_streaming_merge_equals_the_reference_writer(cases, tmp_path):
    """The chunks, their merge (in time parts over processes when large enough) and the sliced
    reports write the bytes of the reference writer (every record in memory, tests/reference_writer.py),
    also on the 8 real MPI reports, on kernels overlapping on a stream, NCCL kernels (the Group
    Communication state) and the GPU activity rows of a shared GPU."""
    extra = [
        ("mpi8 all", ["-t", "all", "-m", *sorted((ROOT / "tests" / "data" / "mpi8").glob("rank*.sqlite"))]),
        ("overlaps", [overlap_export(tmp_path / "overlap.sqlite")]),
    ]
    seen = set()
    for name, args in [*cases, *extra]:
        with reference_writer() as written:
            ref = run(args, tmp_path / f"mem-{name}")
        assert len(written) == 1 and written[0].events > 0, name
        new = run(args, tmp_path / f"new-{name}")
        same_outputs(ref, new)
        validate_trace(str(new))
        text = Path(f"{new}.prv").read_text() + Path(f"{new}.row").read_text()
        seen |= {
            what
            for what, mark in (
                ("GPU activity rows", r"^2:.*:63000090:[1-9]"),
                ("NCCL kernels", r"^1:(\d+:){6}13$"),  # state Group Communication
                ("MPI messages", r"^3:"),
                ("overlap lanes", r"^(CUDA-D0\.S7-\S+)\n\1-overlap1$"),
            )
            if re.search(mark, text, re.M)
        }
    assert seen == {"GPU activity rows", "NCCL kernels", "MPI messages", "overlap lanes"}


def test_tiny_merge_rounds_equal_large_ones(cases, tmp_path):
    for name, args in cases:
        big = run(args, tmp_path / f"big-{name}", merge_round=10_000_000)
        tiny = run(args, tmp_path / f"tiny-{name}", merge_round=3)
        same_outputs(big, tiny)


def test_jobs_1_and_2_are_identical(cases, tmp_path):
    for name, args in cases:
        one = run(["-j", "1", *args], tmp_path / f"j1-{name}")
        two = run(["-j", "2", *args], tmp_path / f"j2-{name}")
        same_outputs(one, two)


def test_merge_split_by_time_over_processes_is_one_merge(cases, tmp_path, monkeypatch):
    """The merge cut into 2-3 time ranges (forked processes, part files appended in order) writes
    the bytes of the single merge, also with tiny rounds and with compression."""
    from nsys2prv.paraver import writer

    for name, args in cases:
        one = run(["-j", "1", *args], tmp_path / f"one-{name}")
        monkeypatch.setattr(writer, "MIN_SPLIT", 1)
        for jobs, rounds in (("2", 10_000_000), ("3", 5)):
            split = run(["-j", jobs, *args], tmp_path / f"split{jobs}-{name}", merge_round=rounds)
            same_outputs(one, split)
        gz = run(["-z", "-j", "3", *args], tmp_path / f"gz-{name}")
        with gzip.open(f"{gz}.prv.gz", "rb") as fh:
            assert fh.read() == Path(f"{one}.prv").read_bytes()
        monkeypatch.setattr(writer, "MIN_SPLIT", 250_000)


def test_split_points_keep_equal_times_together(tmp_path):
    import numpy as np
    from chunk_files import save_chunk

    from nsys2prv.paraver.merge import split_times

    def chunk(path, times):
        n = len(times)
        return save_chunk(
            str(path), np.asarray(times, np.int64), np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(2 * n), states=n
        )

    same = [chunk(tmp_path / "a", [5] * 10000), chunk(tmp_path / "b", [5] * 10)]
    assert split_times(same, 4) == []  # one time: nothing to cut
    spread = [chunk(tmp_path / "c", range(0, 300_000, 3)), chunk(tmp_path / "d", range(1, 300_000, 3))]
    cuts = split_times(spread, 3)  # (the chunks' indexes: every 64th time)
    assert len(cuts) == 2 and 95_000 <= cuts[0] <= 105_000 and 195_000 <= cuts[1] <= 205_000
    # the first part's process has other work worth a quarter of the 200,000 records (the rest of POP):
    # its part is (1 + 1/4) / parts - 1/4 of them, the others share the rest; at least 1/4 of a share
    (cut,) = split_times(spread, 2, first_less=50_000)
    assert 110_000 <= cut <= 115_000  # 0.375 of the times
    cuts = split_times(spread, 3, first_less=50_000)
    assert len(cuts) == 2 and 47_500 <= cuts[0] <= 52_500 and 172_500 <= cuts[1] <= 177_500  # 1/6, 7/12
    (cut,) = split_times(spread, 2, first_less=10**6)
    assert 35_000 <= cut <= 40_000  # 1/8: a quarter of an equal share
    skewed = [chunk(tmp_path / "e", [0] * 90_000 + list(range(1, 10_001)))]
    assert split_times(skewed, 2) == []  # the median is the first time: no useful cut


def test_pop_partials_reduced_in_the_workers_give_the_same_metrics(cases, tmp_path, monkeypatch):
    """Without --region/--iterations the workers reduce the host calls to mask durations (a task's
    calls are all in its report); every GPU's intervals go to a file, measured in the main process a
    GPU at a time whoever uses it.  The POP results must equal those from every host interval."""
    from nsys2prv.metrics import pop

    seen = []
    real = pop.collect_partial

    def spy(*a, **k):
        part = real(*a, **k)
        seen.append(
            (part.host_pre is not None and len(part.host_pre[0]) > 0, [os.path.exists(sp.path) for sp in part.dev])
        )
        return part

    def whole(ctx, names=None, whole_run=False, *rest, **k):
        return real(ctx, names, False, *rest, **k)  # the host calls stay intervals

    monkeypatch.setenv("NSYS2PRV_IN_PROCESS", "1")  # -j 1 in this process: the spy sees the partials
    for name, args in cases:
        monkeypatch.setattr(pop, "collect_partial", spy)
        reduced = run(["-j", "1", *args], tmp_path / f"red-{name}")
        monkeypatch.setattr(pop, "collect_partial", whole)
        full = run(["-j", "1", *args], tmp_path / f"full-{name}")
        same_outputs(reduced, full)
    assert any(host for host, _ in seen)  # host calls reduced in the worker ...
    assert any(files for _, files in seen) and all(all(files) for _, files in seen)  # ... GPUs in files


def test_jobs_1_in_a_worker_equals_in_process(cases, tmp_path, monkeypatch):
    """-j 1 runs the per-report stages in one worker process; NSYS2PRV_IN_PROCESS=1 (and any
    profiler or tracer) in the main process: the same bytes."""
    from nsys2prv.pipeline import parallel

    assert isinstance(parallel.executor(1), parallel.Local)
    for name, args in cases:
        worker = run(["-j", "1", *args], tmp_path / f"w-{name}")
        monkeypatch.setenv("NSYS2PRV_IN_PROCESS", "1")
        assert isinstance(parallel.executor(1), parallel.Serial)
        here = run(["-j", "1", *args], tmp_path / f"h-{name}")
        monkeypatch.delenv("NSYS2PRV_IN_PROCESS")
        same_outputs(worker, here)


def test_chunks_laid_out_in_slices_are_the_same_bytes(cases, tmp_path, monkeypatch):
    """Large reports' chunks are laid out a slice of sorted records at a time (each source's rows
    of the slice taken and scattered); slices of 7 records give the bytes of the one-slice layout."""
    from nsys2prv.paraver import chunks

    for name, args in cases:
        whole = run(["-j", "2", *args], tmp_path / f"whole-{name}")
        monkeypatch.setattr(chunks, "ONE_SLICE_UP_TO", 0)
        monkeypatch.setattr(chunks, "LAYOUT_SLICE", 7)
        sliced = run(["-j", "2", *args], tmp_path / f"sliced-{name}")
        monkeypatch.undo()
        same_outputs(whole, sliced)


def test_compressed_output_is_the_plain_output(cases, tmp_path):
    name, args = cases[0]
    plain = run(args, tmp_path / "plain")
    gz = run(["-z", "-j", "2", *args], tmp_path / "gz")
    with gzip.open(f"{gz}.prv.gz", "rb") as fh:
        assert fh.read() == Path(f"{plain}.prv").read_bytes()


def test_dask_cluster_equals_local_run(cases, tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cl:
        for name, args in cases[:3]:
            local = run(args, tmp_path / f"local-{name}")
            dask = run(["--dask", cl.scheduler_address, *args], tmp_path / f"dask-{name}")
            same_outputs(local, dask)


def test_dask_cluster_of_worker_processes_equals_local_run(cases, tmp_path):
    """A multi-process Dask cluster (what a SLURM job with dask-scheduler/dask-worker gives): workers in
    other processes read the inputs and write the chunks beside OUT; the outputs are the same bytes."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl:
        name, args = cases[0]
        local = run(args, tmp_path / f"local-{name}")
        dask = run(["--dask", cl.scheduler_address, *args], tmp_path / f"dask-{name}")
        same_outputs(local, dask)


def test_dask_without_a_scheduler_is_a_user_error(cases, tmp_path, monkeypatch):
    pytest.importorskip("distributed")
    from nsys2prv.pipeline.parallel import Dask

    monkeypatch.setattr(Dask, "TIMEOUT", "2")
    name, args = cases[0]
    res = CliRunner().invoke(
        main, ["-q", "--no-cache", "--dask", "tcp://127.0.0.1:9", *map(str, args), str(tmp_path / "x")]
    )
    assert res.exit_code == 2 and "Dask" in res.output


def _scramble_keeping_identity(path: Path) -> None:
    """Overwrite a file with garbage of the same size and mtime (``cp -p``, ``rsync -t`` of another file):
    only its ctime tells (the cache key binds it: issue 39)."""
    st = path.stat()
    path.write_bytes(b"\0" * st.st_size)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_table_cache_skips_the_sqlite_and_is_invalidated_when_the_input_changes(tmp_path, clover_export):
    src = clover_export
    inp = tmp_path / "in" / "clover.sqlite"
    inp.parent.mkdir()
    shutil.copy2(src, inp)
    cache = tmp_path / "cache"
    first = run(["-t", "all,osrt", "-j", "1", inp], tmp_path / "first", cache)
    assert list((cache / "tables").iterdir()), "nothing cached"

    opened = Report.opened
    again = run(["-t", "all,osrt", "-j", "1", inp], tmp_path / "again", cache)  # other output, same options
    assert Report.opened == opened, "the SQLite was opened despite the cache"
    same_outputs(first, again)
    # other options (fewer categories, -z, 2 jobs): still from the cache
    run(["-t", "cuda_api", "-z", "-j", "2", inp], tmp_path / "other", cache)
    assert Report.opened == opened

    # the input replaced by garbage of the same size and mtime: the entry no longer applies (its ctime
    # changed), the garbage is read and refused
    _scramble_keeping_identity(inp)
    res = CliRunner().invoke(main, ["-q", "--cache-dir", str(cache), "-j", "1", str(inp), str(tmp_path / "bad")])
    assert res.exit_code == 2 and "not an SQLite file" in res.output
    # a real new input gets a new entry (the stale one is removed) and converts
    shutil.copy2(src, inp)
    os.utime(inp, None)
    fresh = run(["-t", "all,osrt", "-j", "1", inp], tmp_path / "fresh", cache)
    same_outputs(first, fresh)
    assert len(list((cache / "tables").iterdir())) == 1


def test_tables_without_rows_are_cached_in_one_small_file(tmp_path):
    import pandas as pd

    from nsys2prv.nsys.cache import EMPTY, TableCache

    src = tmp_path / "r.sqlite"
    src.write_bytes(b"x")
    rows = pd.DataFrame({"start": [1, 2], "name": pd.Categorical(["a", "b"])})
    none = pd.DataFrame({"start": pd.Series([], dtype="int64"), "name": pd.Categorical([])})
    tally = {"source_rows": 0, "dropped": {}, "notes": {}}
    TableCache(tmp_path / "c", src).store({"m": 1}, {"kernels": (rows, tally), "memset": (none, tally)})
    TableCache(tmp_path / "c", src).store(None, {"osrt": (none.iloc[:, :1], tally), "mpi": (None, None)})
    cache = TableCache(tmp_path / "c", src)
    assert sorted(p.name for p in cache.dir.iterdir()) == sorted(
        ["kernels.parquet", f"memset{EMPTY}", f"osrt{EMPTY}", "kinds.json", "meta.n2p"]
    )
    assert cache.table("kernels").equals(rows)
    assert cache.table("memset").equals(none) and isinstance(cache.table("memset")["name"].dtype, pd.CategoricalDtype)
    assert list(cache.table("osrt").columns) == ["start"] and cache.table("mpi") is None
    assert list(cache.table("memset", columns=["name"]).columns) == ["name"]


def test_categories_added_later_are_read_and_cached(tmp_path, clover_export):
    src = clover_export
    inp = tmp_path / "clover.sqlite"
    shutil.copy2(src, inp)
    cache = tmp_path / "cache"
    run(["-t", "cuda_api", "-j", "1", inp], tmp_path / "a", cache)
    opened = Report.opened
    full = run(["-t", "all,osrt", "-j", "1", inp], tmp_path / "b", cache)  # osrt not cached yet: read
    assert Report.opened == opened + 1
    ref = run(["-t", "all,osrt", "-j", "1", inp], tmp_path / "c")  # no cache at all
    same_outputs(full, ref)


def _synthetic_chunks(tmp_path, n_chunks: int, seed: int):
    """Chunk files of the real layout whose records are events of one field: a global record id."""
    import numpy as np
    from chunk_files import save_chunk

    from nsys2prv.paraver.chunks import EVENT_SIG0, STRIDE

    rng = np.random.default_rng(seed)
    metas, all_t, all_k, all_id = [], [], [], []
    next_id = 0
    for c in range(n_chunks):
        n = int(rng.choice([0, 1, 5, STRIDE - 1, STRIDE, 3 * STRIDE + 7, 20 * STRIDE]))
        step = int(rng.choice([1, 10, 1000]))  # dense and sparse chunks
        t = np.sort(rng.integers(0, 50 * step, n)) + int(rng.integers(0, 5000))
        k = np.sort(rng.integers(0, 4, n)) + (c << 8)  # (time, key) sorted within the chunk
        order = np.lexsort((k, t))
        t, k = t[order], k[order]
        ids = np.arange(next_id, next_id + n, dtype=np.int64)
        next_id += n
        metas.append(
            save_chunk(
                str(tmp_path / f"c{c}.chunk"),
                t,
                k,
                np.zeros(n),
                np.full(n, EVENT_SIG0),
                ids,
                events=n,
                sigs=[((1,), (False,))],
            )
        )
        all_t.append(t)
        all_k.append(k)
        all_id.append(ids)
    t, k, ids = (np.concatenate(x) for x in (all_t, all_k, all_id))
    return metas, ids[np.lexsort((k, t))]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_merge_of_many_chunks_is_the_global_order(tmp_path, seed):
    """Index-driven rounds over 60 chunks of very different densities and sizes, with small and
    large budgets and split into time parts, give exactly the global (time, key) order."""
    import io

    import numpy as np

    from nsys2prv.paraver.merge import merge, split_times

    metas, expected = _synthetic_chunks(tmp_path, 60, seed)
    values = [np.zeros(0, np.int64)] * len(metas)

    objs = (np.zeros(1, np.int64),) * 3  # every record on thread 0: cpu, task, thread 0

    def merged(**kw):
        """The merge's text; each record's value, its id in ``expected``."""
        fh = io.BytesIO()
        merge(metas, values, 0, fh, objs=objs, **kw)
        return np.array([int(line.rsplit(b":", 1)[1]) for line in fh.getvalue().splitlines()], np.int64)

    for budget in (1, 700, 1 << 16, 1 << 22):
        assert np.array_equal(merged(budget=budget), expected), budget
    cuts = split_times(metas, 4)
    assert len(cuts) >= 2
    bounds = [None, *cuts, None]
    got = [merged(budget=5000, t_lo=lo, t_hi=hi) for lo, hi in zip(bounds[:-1], bounds[1:])]
    assert np.array_equal(np.concatenate(got), expected)


def test_the_formatter_writes_any_int64_like_python():
    """The digit writer: zero, negatives, every digit count, the int64 extremes short of the minimum
    (as times and values); it expands cpu:1:task:thread (twice for a communication) and numbers an
    event's local name codes through ``remap``."""
    import io

    import numpy as np

    from nsys2prv.paraver.format import Runs, Tables, write_compact

    def one_run(time, sig, tail, thread):
        z = np.zeros(1, np.int64)
        return Runs(time, np.zeros(len(time), np.int64), thread, sig, tail, np.array([0, len(time)]), z, z)

    vals = [0, 7, -7, 10, -10, 99, 100, 2**31, -(2**31), 2**63 - 1, -(2**63 - 1)] + [10**k for k in range(19)]
    flat, n = np.array(vals, np.int64), len(vals)
    one = Tables(
        np.array([3]),
        np.array([1]),
        np.array([1]),
        width=np.array([2, 6, 1]),
        pairs=np.array([2, 6, 1]),
        first=np.array([0, 0, 0]),
        rbase=np.array([0, 0, 0]),
        types=np.array([300]),
        dyn=np.array([False]),
        remap=np.array([0]),
    )
    fh = io.BytesIO()
    srt = np.sort(flat)  # one run, sorted by time
    write_compact(fh, one_run(srt, np.full(n, 2, np.int32), srt, np.zeros(n, np.int32)), one, 0, np.zeros(3, np.int64))
    assert fh.getvalue().decode().splitlines() == [f"2:3:1:1:1:{v}:300:{v}" for v in sorted(vals)]

    cpu, task, thr = np.array([3, 4]), np.array([1, 2]), np.array([1, 1])
    thread, time, sig = np.array([0, 1, 0], np.int32), np.array([5, 6, 7]), np.array([0, 2, 1], np.int32)
    tail = np.array([9, 2, -4, 1, 8, 1, 10, 11, 64, 5], np.int64)
    tables = Tables(
        cpu,
        task,
        thr,
        width=np.array([2, 6, 2]),
        pairs=np.array([2, 6, 2]),
        first=np.array([0, 0, 0]),
        rbase=np.array([0, 0, 1]),
        types=np.array([300, 301]),
        dyn=np.array([False, True]),
        remap=np.array([0, 70, 71]),
    )
    fh = io.BytesIO()
    counts = np.zeros(3, np.int64)
    write_compact(fh, one_run(time, sig, tail, thread), tables, 100, counts)
    assert counts.tolist() == [1, 1, 1]  # states, communications, events
    assert fh.getvalue().decode().splitlines() == [
        "1:3:1:1:1:5:9:2",
        "2:4:1:2:1:6:300:-4:301:71",
        "3:3:1:1:1:7:8:4:1:2:1:10:11:64:5",
    ]


def test_round_limits_do_not_depend_on_the_walks_window(tmp_path):
    """The index walk is taken a window of entries at a time: tiny windows (the walk crossing many
    of them within one round) give the same round limits, and every round stays within its budget."""
    import numpy as np

    from nsys2prv.paraver.chunks import STRIDE
    from nsys2prv.paraver.merge import _Limits, _Reader

    metas, _ = _synthetic_chunks(tmp_path, 60, 3)

    def limits(budget, window):
        readers = [_Reader(m) for m in metas]
        times = [r.read("time", 0, r.n) for r in readers]
        lim = _Limits(readers, budget)
        if window:
            lim.window = window
        cur = np.zeros(len(readers), np.int64)
        stop = np.array([r.n for r in readers])
        seq = []
        while (cur < stop).any():
            t = lim.next(cur, 1 << 62)
            new = np.array([max(c, np.searchsorted(x, t, "left")) for c, x in zip(cur, times)])
            # what a round takes: at most the budget plus one STRIDE block per chunk (or one time's records)
            assert (new - cur).sum() <= max(
                budget + STRIDE * len(readers),
                max(int((x == x[c]).sum()) for c, x, s in zip(cur, times, stop) if c < s),
            )
            seq.append(t)
            cur = new
        return seq

    for budget in (1, 64, 300, 5000):
        assert limits(budget, 7) == limits(budget, None) and len(limits(budget, None)) > 1


def test_many_reports_run_the_heavy_steps_outside_the_main_process(tmp_path, monkeypatch):
    """From FORK_HEAVY_FROM_REPORTS reports on, the main process loads no kernel and the POP reduction and every
    merge part run in forked processes (memory at a thousand ranks, BENCHMARKS.md): the same bytes."""
    ranks = [gpu_rank(tmp_path / f"rank{r}.sqlite", r, 8) for r in range(8)]
    seen = []
    real = P.forks_heavy_steps
    monkeypatch.setattr(P, "forks_heavy_steps", lambda cfg, ex: seen.append(real(cfg, ex)) or seen[-1])
    monkeypatch.setattr(P, "FORK_HEAVY_FROM_REPORTS", 10**9)
    usual = run(["-m", *ranks], tmp_path / "usual" / "out")
    monkeypatch.setattr(P, "FORK_HEAVY_FROM_REPORTS", 8)
    forked = run(["-m", *ranks], tmp_path / "forked" / "out")
    assert seen == [False, True]
    same_outputs(usual, forked)
    validate_trace(str(forked))


def test_the_main_process_holds_the_chunks_indexes_in_their_files_only(tmp_path, monkeypatch):
    """Every chunk's meta reaching the merge holds no per-record array; its file's trailer is the time
    of every STRIDE-th record of the file's time section (exact), which the merge reads."""
    import numpy as np

    from nsys2prv.paraver.chunks import HEADER, STRIDE
    from nsys2prv.paraver.merge import chunk_index

    ranks = [gpu_rank(tmp_path / f"rank{r}.sqlite", r, 8) for r in range(2)]
    seen, real = [], P.write_merged

    def spy(chunks, *a, **k):
        for c in chunks:
            seen.append(([n for n, v in vars(c).items() if isinstance(v, np.ndarray)], c.records))
            times = np.fromfile(c.path, np.int64, count=c.records, offset=HEADER * 8)
            assert chunk_index(c).tolist() == times[::STRIDE].tolist()
        return real(chunks, *a, **k)

    monkeypatch.setattr(P, "write_merged", spy)
    run(["-m", *ranks], tmp_path / "out")
    assert len(seen) >= 3 and all(arrays == [] for arrays, _ in seen)
    assert sum(n for _, n in seen) > STRIDE
