"""Large reports in time slices (pipeline/slices.py): a sliced conversion writes exactly the bytes of
the whole-report one, whatever crosses the slice borders, and no slice holds more than its share."""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from conftest import outputs_text
from nsysgen import NsysBuilder

from nsys2prv.config import Config, parse_categories
from nsys2prv.nsys.cache import TableCache
from nsys2prv.pipeline import convert, lanes, row_groups, scan, slices

PID, MAIN, WORKER = 4200, 4201, 4202
STEP = 1_000  # one iteration every microsecond


def build(path: Path, iterations: int, shared: bool = False) -> Path:
    """A CUDA + NVTX + MPI + OS runtime report whose every kind has rows crossing slice borders:
    a range over the whole run and nested per-iteration ranges, kernels three iterations long
    (overlapping the next ones on their stream: extra lanes), kernels launched long before they
    run (call and kernel in different slices), long synchronisations and MPI calls."""
    b = NsysBuilder(path, schema="3.13.2", host="slicehost", env={"PMI_RANK": "0"})
    b.process(PID, "./app")
    b.thread_name(PID, WORKER, "io-worker")
    b.mpi_rank(PID, MAIN, 0, ts=500)
    end = 10_000 + (iterations + 40) * STEP
    b.nvtx_push(PID, MAIN, 1_000, end, text="run")
    corr = 100
    for i in range(iterations):
        t = 10_000 + i * STEP
        b.nvtx_push(PID, MAIN, t, t + 900, text="iteration")
        b.nvtx_push(PID, MAIN, t + 100, t + 800, text="step", domain_id=0)
        b.cuda_api(PID, MAIN, "cudaLaunchKernel_v7000", t + 200, t + 210, corr)
        if shared and i % 50 == 3:
            b.cuda_api(PID, MAIN, "cudaLaunchKernel_v7000", t + 220, t + 225, corr)
        long = i % 3 == 0
        b.kernel(PID, 0, 7, t + 300, t + (3 * STEP if long else 700), corr, "stencil" if long else "update")
        b.cuda_api(PID, MAIN, "cudaMemcpyAsync_v3020", t + 400, t + 420, corr + 1)
        b.memcpy(PID, 0, 8, t + 430, t + 460, corr + 1, 4096, copy_kind=1)
        if i % 25 == 0:  # queued: runs 30 iterations after its launch
            b.cuda_api(PID, MAIN, "cudaLaunchKernel_v7000", t + 212, t + 215, corr + 2)
            b.kernel(PID, 0, 9, t + 30 * STEP, t + 30 * STEP + 500, corr + 2, "queued")
        if i % 10 == 0:
            b.cuda_api(PID, MAIN, "cudaDeviceSynchronize_v3020", t + 850, t + 4 * STEP + 50, corr + 3)
        if i % 20 == 5:
            b.mpi(PID, MAIN, "MPI_Allreduce", t + 870, t + 2 * STEP + 20, kind="coll", size=64, recv_size=64)
        b.osrt(PID, WORKER, "read", t + 10, t + 990)
        if i % 7 == 0:
            b.nvtx_mark(PID, WORKER, t + 500, "tick")
        corr += 4
    return b.save()


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("slices") / "rank0.sqlite", 600)


def _convert(src: Path, out: Path, slice_rows: int, **kw) -> dict:
    convert(
        Config(inputs=[src], output=out, show_progress=False, jobs=kw.pop("jobs", 1), slice_rows=slice_rows, **kw),
        log=lambda *a, **k: None,
    )
    return outputs_text(out)


def _plans(monkeypatch) -> list:
    seen = []
    real = slices.plan

    def spy(*a, **k):
        p = real(*a, **k)
        seen.append(p)
        return p

    monkeypatch.setattr(slices, "plan", spy)
    return seen


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"filter_nvtx": "run"},
        {"categories": parse_categories("cuda_api_trace")},
        {"categories": parse_categories("nvtx,cuda_api_trace,mpi,osrt"), "jobs": 2},
        {"categories": parse_categories("nvtx,mpi,osrt")},
        {"region": "iteration"},
    ],
    ids=["all", "filter", "cuda", "parallel", "host-only", "region"],
)
def test_sliced_conversion_writes_the_whole_reports_bytes(report, tmp_path, monkeypatch, options):
    whole = _convert(report, tmp_path / "whole", 10**9, **dict(options))
    plans = _plans(monkeypatch)
    for rows in (1_000, 300):
        sliced = _convert(report, tmp_path / f"s{rows}", rows, **dict(options))
        assert plans[-1] is not None and plans[-1].slices >= 3
        for ext, text in whole.items():
            assert sliced[ext] == text, f"{ext} differs with {plans[-1].slices} slices"


def test_a_runs_own_arrow_ipc_cache_converts_as_the_parquet_cache(report, tmp_path, monkeypatch):
    """``--no-cache``: the run's own table cache is Arrow IPC (``TableCache.ipc``), read whole or by row
    groups (its record batches, here of 500 rows: several per table) through the one reading path:
    whole and sliced conversions write the bytes of those from the Parquet cache."""
    from nsys2prv.nsys import cache, codec

    monkeypatch.setattr(codec, "ROW_GROUP", 500)
    log = tmp_path / "ipc.log"  # (what each table's writer stored, from whichever process wrote it)

    def spy(table, fh):
        with open(log, "a") as f:
            f.write(f"{table.num_rows}\n")
        codec.write_ipc(table, fh)

    monkeypatch.setattr(cache, "write_ipc", spy)
    parquet = _convert(report, tmp_path / "p", 10**9, cache_dir=tmp_path / "c")
    assert not log.exists()
    plans = _plans(monkeypatch)
    for rows in (10**9, 300):
        got = _convert(report, tmp_path / f"i{rows}", rows, table_cache=False, jobs=1)
        assert got == parquet
        stored = [int(n) for n in log.read_text().split()]
        log.unlink()
        assert len(stored) == 5 and sum(n > 500 for n in stored) == 4  # (each kind, in batches of 500 rows)
    assert plans[-1] is not None and plans[-1].slices >= 3


@pytest.mark.parametrize("spare", [0, -1])
def test_a_run_larger_than_ipc_bytes_keeps_parquet_in_its_own_cache(tmp_path, monkeypatch, spare):
    """``prepare.IPC_BYTES``: a ``--no-cache`` run of the 4 mpi4 reports writes its own tables as Arrow
    IPC when their files take at most the limit, as Parquet when one byte more (a large run's staging
    directory)."""
    from nsys2prv.nsys import cache, codec
    from nsys2prv.pipeline import prepare

    ranks = sorted((Path(__file__).parent / "data" / "mpi4").glob("rank*.sqlite"))
    monkeypatch.setattr(prepare, "IPC_BYTES", sum(p.stat().st_size for p in ranks) + spare)
    log = tmp_path / "written.log"

    def spy(name, real):
        def write(table, fh):
            with open(log, "a") as f:
                f.write(name + "\n")
            real(table, fh)

        return write

    monkeypatch.setattr(cache, "write_ipc", spy("ipc", codec.write_ipc))
    monkeypatch.setattr(cache, "write_parquet", spy("parquet", codec.write_parquet))
    cfg = Config(inputs=ranks, output=tmp_path / "o", merge=True, show_progress=False, jobs=1, table_cache=False)
    convert(cfg, log=lambda *a, **k: None)
    written = set(log.read_text().split())
    assert written == ({"ipc"} if spare == 0 else {"parquet"})


def test_calls_sharing_a_correlation_id_are_sliced_as_the_whole_report(tmp_path, monkeypatch):
    """Calls sharing a correlation id no longer keep a report whole: the launch calls are matched
    once (``translate.launches``, the first call), the note counted once."""
    src = build(tmp_path / "shared.sqlite", 600, shared=True)
    whole = _convert(src, tmp_path / "whole", 10**9)
    plans = _plans(monkeypatch)
    sliced = _convert(src, tmp_path / "sliced", 500)
    assert plans[-1] is not None and plans[-1].slices >= 6 and plans[-1].shared == 12
    assert sliced == whole
    links = json.loads(whole[".summary.json"])["categories"]["launch_links"]
    assert links["notes"] == {"API calls sharing a correlation id (the first is linked)": 12}
    assert links["translated_rows"] == 2 * 600 + 24


def test_rows_crossing_borders_are_translated_once(report, tmp_path, monkeypatch):
    """The borders fall inside long kernels, nested ranges, calls and states: every one of them is
    written once (the counts of the whole report), and the lanes and links survive."""
    plans = _plans(monkeypatch)
    files = _convert(report, tmp_path / "s", 500)
    p = plans[-1]
    inner = p.borders[1:-1]
    assert len(inner) >= 6
    body = [ln.split(":") for ln in files[".prv"].splitlines()[1:] if ln[0] in "123"]
    states = [r for r in body if r[0] == "1"]
    # every state segment of a thread ends where its next one starts: no cut, no overlap
    by_thread: dict = {}
    for r in states:
        by_thread.setdefault(tuple(r[1:5]), []).append((int(r[5]), int(r[6])))
    for segs in by_thread.values():
        segs.sort()
        assert all(a[1] == b[0] for a, b in zip(segs, segs[1:]))
    summary = json.loads(files[".summary.json"])
    kinds = summary["categories"]
    assert kinds["kernels"]["translated_rows"] == kinds["kernels"]["source_rows"] == 600 + 24
    assert kinds["kernels"]["event_records"] == 2 * (600 + 24)
    assert kinds["nvtx"]["translated_rows"] == 1 + 2 * 600 + 86
    assert kinds["launch_links"]["translated_rows"] == 2 * 600 + 24
    assert kinds["mpi"]["translated_rows"] == 30
    assert kinds["nvtx_on_gpu"]["translated_rows"] == 2 * 600 + 24  # the innermost range of each launch
    # the long kernels overlap the next ones on stream 7: extra rows, lanes taken over the whole report
    where = p.groups["kernels"].where  # (stage A stored them in the table cache)
    assert p.lane_tag is not None and summary["overlap_rows"] >= 1
    lanes = TableCache(Path(where[0]), Path(where[1])).lanes(p.lane_tag)
    assert set(lanes) == {"kernels", "memcpy"} and int((lanes["kernels"] > 0).sum()) >= 1


def test_paint_groups_balance_the_threads_state_intervals():
    """Largest first into the lightest group: 600 -> g0; 406 -> g1; 212 -> g1 (618); 96 -> g0 (696);
    24 -> g1 (642); 0 -> g1; each group in thread order; one group when one job paints."""
    groups = slices.paint_groups(np.array([96, 0, 212, 406, 600, 24]), 2)
    assert [g.tolist() for g in groups] == [[0, 4], [1, 2, 3, 5]]
    assert [g.tolist() for g in slices.paint_groups(np.array([5, 3]), 1)] == [[0, 1]]
    assert [g.tolist() for g in slices.paint_groups(np.array([0, 7]), 4)] == [[1], [0]]  # (7 -> g0, 0 -> g1)


def test_a_sliced_reports_threads_are_painted_by_every_worker(report, tmp_path, monkeypatch):
    """The one sliced report of a run on two workers is painted by two jobs, each a group of its threads
    (``paint_groups`` by their state intervals, which the slices count): the whole report's bytes."""
    whole = _convert(report, tmp_path / "whole", 10**9, jobs=2)
    seen, chunks, metas = [], [], []
    real_groups, real_all = slices.paint_groups, slices.translate_all

    def groups(sizes, n):
        seen.append((sizes.copy(), n))
        return real_groups(sizes, n)

    def translate_all(*a, **k):
        res = real_all(*a, **k)
        chunks.extend(Path(c.path).name for r in res for c in r.chunk)
        for c in (c for r in res for c in r.chunk):  # (read while the files are there: before the merge)
            metas.append((c, np.fromfile(c.path, np.int64, 3).tolist(), os.path.getsize(c.path)))
        return res

    monkeypatch.setattr(slices, "paint_groups", groups)
    monkeypatch.setattr(slices, "translate_all", translate_all)
    plans = _plans(monkeypatch)
    sliced = _convert(report, tmp_path / "sliced", 300, jobs=2)
    assert sliced == whole
    ((sizes, n),) = seen
    k = plans[-1].slices
    assert n == 2 and k >= 3 and sizes.sum() > 0
    painted = sorted(c[c.rindex(".p") + 1 :] for c in chunks if ".p" in c)
    assert painted == sorted(f"p{s}.g{g}" for s in range(k) for g in range(2))
    # a painted chunk holds states only and no key section (the merge derives a state's key from its
    # thread): header, time int64, thread and sig int32, 2 tail fields; the slices' events keep their keys
    assert len(metas) == len(chunks) > 2 * k
    for m, (n, nfields, flag), size in metas:
        keyless = ".p" in Path(m.path).name
        assert (m.states == m.records) == keyless and m.records == n > 0, m.path
        assert (flag, nfields == 2 * n or not keyless) == (int(keyless), True), m.path
        assert m.trailer == 64 + (16 if keyless else 24) * n + 8 * nfields, m.path
        assert size == m.trailer + 16 * m.entries(), m.path


_TRANSLATE_SLICE = slices.translate_slice


def _held_spy(sj, models):
    """``translate_slice``, writing the rows its slice holds to the file TEST_SLICE_HELD_LOG names (it
    runs in a worker, which gets it by name: a function of this module)."""
    g, (lo, hi) = sj.plan.groups, sj.plan.borders[sj.k : sj.k + 2]
    n = sum(len(row_groups.owned(x, lo, hi)[1]) + len(row_groups.running_at(x, lo)[1]) for x in g.values())
    with open(os.environ["TEST_SLICE_HELD_LOG"], "a") as fh:
        fh.write(f"{n}\n")
    return _TRANSLATE_SLICE(sj, models)


def test_a_slice_holds_its_share_whatever_the_reports_size(tmp_path, monkeypatch):
    """Rows a slice job holds (its own, those running at its start, the launch calls of its
    kernels) stay about the slice size for a report four times as large (whose slices are twice
    ``slice_rows``: ``slices.slice_size``, at least four a worker)."""
    log = tmp_path / "held.txt"
    monkeypatch.setenv("TEST_SLICE_HELD_LOG", str(log))
    monkeypatch.setattr(slices, "translate_slice", _held_spy)
    most, size = {}, {400: 1_000, 1600: 2_000}
    for n in (400, 1600):
        log.unlink(missing_ok=True)
        _convert(build(tmp_path / f"r{n}.sqlite", n), tmp_path / f"o{n}", 1_000)
        held = [int(x) for x in log.read_text().split()]
        assert len(held) >= n * 1_000 // (170 * size[n])  # about 6.5 rows an iteration
        most[n] = max(held)
    assert most[400] <= 1.5 * size[400] and most[1600] <= 1.5 * size[1600]


def test_a_report_of_four_double_slices_a_worker_is_cut_in_double_slices():
    """Spread over the workers, a report is cut into slices of twice ``slice_rows`` from the size
    that gives each worker four of them; with more reports than workers, 2.5 x ``slice_rows``."""
    assert slices.slice_size(6_399_999, 2, 400_000, True) == 400_000
    assert slices.slice_size(6_400_000, 2, 400_000, True) == 800_000
    assert slices.slice_size(7_200_000, 2, 400_000, True) == 800_000  # r10m's rows in stage C: 9 slices
    assert slices.slice_size(3_199_999, 1, 400_000, True) == 400_000
    assert slices.slice_size(3_200_000, 1, 400_000, True) == 800_000
    assert slices.slice_size(50_000_000, 2, 400_000, False) == 1_000_000


def test_a_large_table_read_in_batches_caches_the_same_rows(report, tmp_path, monkeypatch):
    """Stage A reads a large table of a row-by-row reader a rowid range at a time into the cache:
    the cached tables, and so the outputs, are those of reading it whole."""
    whole = _convert(report, tmp_path / "whole", 10**9, cache_dir=tmp_path / "c1")
    monkeypatch.setattr(scan, "BATCH_ROWS", 97)
    batched = _convert(report, tmp_path / "batched", 10**9, cache_dir=tmp_path / "c2")
    assert batched == whole
    cache = TableCache(tmp_path / "c2" / "tables", report)
    with cache.parquet_file("cuda_api") as pf:
        groups = pf.metadata.num_row_groups
    assert groups >= 10  # one row group a batch (1,900 calls, 97 rows a batch)
    a = TableCache(tmp_path / "c1" / "tables", report).table("cuda_api")
    b = cache.table("cuda_api")
    assert len(a) == len(b) and (a["start"].to_numpy() == b["start"].to_numpy()).all()
    assert (a["name"].astype(str).to_numpy() == b["name"].astype(str).to_numpy()).all()


def test_a_runs_own_ipc_cache_of_tables_read_in_batches_converts_as_the_parquet_cache(report, tmp_path, monkeypatch):
    """``--no-cache``: a large table read in batches goes into the run's own cache as Arrow IPC too
    (``codec.write_ipc_batches``: its batches' names over one dictionary); whole and sliced
    conversions write the bytes of the conversion from the Parquet cache."""
    from nsys2prv.nsys import cache, codec

    monkeypatch.setattr(codec, "ROW_GROUP", 500)
    parquet = _convert(report, tmp_path / "p", 10**9, cache_dir=tmp_path / "c")
    monkeypatch.setattr(scan, "BATCH_ROWS", 97)
    log = tmp_path / "ipc.log"  # (the tables written in batches, from whichever process wrote them)

    def spy(frames, fh):
        names = codec.write_ipc_batches(frames, fh)
        with open(log, "a") as f:
            f.write(f"{names[0]}\n")
        return names

    monkeypatch.setattr(cache, "write_ipc_batches", spy)
    plans = _plans(monkeypatch)
    for rows in (10**9, 300):
        got = _convert(report, tmp_path / f"i{rows}", rows, table_cache=False, jobs=1)
        assert got == parquet
        assert len(log.read_text().split()) == 3  # (the CUDA calls, kernels, copies: more than 2 x 97 rows)
        log.unlink()
    assert plans[-1] is not None and plans[-1].slices >= 3


def test_stage_a_reads_and_visits_each_kind_once(tmp_path):
    """MPI is both a POP kind and an alignment kind of ``-t nvtx`` on a multi-rank run: stage A reads
    and reduces it once (twice doubled the alignment's sync points: 14 instead of 7)."""
    ranks = sorted((Path(__file__).parent / "data" / "mpi4").glob("rank*.sqlite"))
    convert(
        Config(
            inputs=ranks,
            output=tmp_path / "o",
            merge=True,
            show_progress=False,
            jobs=1,
            categories=parse_categories("nvtx"),
            cache_dir=tmp_path / "c",
        ),
        log=lambda *a, **k: None,
    )
    sync = json.loads(Path(f"{tmp_path / 'o'}.sync.json").read_text())
    assert sync["constraining_points"] == 7
    assert all(r.get("sync_points", 5) == 5 for r in sync["reports"])


def test_stage_c_reads_the_lanes_stage_a_stored(report, tmp_path, monkeypatch):
    """Stage A numbers the overlap lanes once and stores them beside the tables; stage C (whole or
    sliced) reads them.  Without them (a cache that could not hold them) or with a damaged file,
    stage C derives them again: the same bytes."""
    from nsys2prv.nsys.export import default_cache_dir

    src = tmp_path / "lanes.sqlite"
    src.write_bytes(report.read_bytes())
    real = lanes.add_lanes
    derived = []

    def spy(tables):
        derived.append(sorted(tables))
        return real(tables)

    monkeypatch.setattr(lanes, "add_lanes", spy)
    first = _convert(src, tmp_path / "a", 10**9)
    assert derived == [] and json.loads(first[".summary.json"])["overlap_rows"] >= 1
    assert _convert(src, tmp_path / "b", 500) == first and derived == []
    cache = TableCache(default_cache_dir() / "tables", src)
    files = sorted(cache.dir.glob("lanes-*.arrow"))
    assert len(files) == 1
    stored = cache.lanes(files[0].name[len("lanes-") : -len(".arrow")])
    assert set(stored) == {"kernels", "memcpy"} and stored["kernels"].max() == 1 and not stored["memcpy"].any()
    tables = {k: cache.table(k) for k in ("kernels", "memcpy")}
    assert real(tables) == int((stored["kernels"] > 0).sum()) == 400  # (the two kernels after each long one)
    assert (tables["kernels"]["lane"].to_numpy() == stored["kernels"]).all()
    files[0].unlink()
    assert _convert(src, tmp_path / "c", 10**9) == first
    assert derived == [["cuda_api", "kernels", "memcpy", "mpi", "nccl", "nvtx"]]
    files[0].write_bytes(b"not a file of lanes")
    damaged = _convert(src, tmp_path / "d", 10**9)
    assert len(derived) == 2 and {k: v for k, v in damaged.items() if k != ".summary.json"} == {
        k: v for k, v in first.items() if k != ".summary.json"
    }
    assert cache.lanes(files[0].name[len("lanes-") : -len(".arrow")]) is None
    assert any("lanes-" in note for note in cache.notes)
    said = json.dumps(json.loads(damaged[".summary.json"]))
    assert f"its table cache entry had an unusable {files[0].name}" in said


def test_stage_c_reads_the_launch_calls_stage_a_stored(report, tmp_path, monkeypatch):
    """Stage A finds each activity's launch call once and stores it beside the tables; stage C, whole
    or sliced, reads it.  Without it, a whole report derives it again and a large one is not sliced:
    the same bytes."""
    from nsys2prv.nsys.export import default_cache_dir
    from nsys2prv.pipeline import stages

    src = tmp_path / "launches.sqlite"
    src.write_bytes(report.read_bytes())
    real = stages.launches_of
    derived = []
    monkeypatch.setattr(stages, "launches_of", lambda calls, tables: derived.append(1) or real(calls, tables))
    plans = _plans(monkeypatch)
    first = _convert(src, tmp_path / "a", 10**9)
    assert derived == [] and _convert(src, tmp_path / "b", 500) == first and plans[-1] is not None
    cache = TableCache(default_cache_dir() / "tables", src)
    files = sorted(cache.dir.glob("launches-*.arrow"))
    assert len(files) == 1
    got = cache.launches(files[0].name[len("launches-") : -len(".arrow")])
    assert got is not None
    rows, shared = got
    calls = cache.table("cuda_api")
    assert shared == 0 and sorted(rows) == ["kernels", "memcpy"] and len(rows["kernels"]) == 600 + 24
    kernels = cache.table("kernels")
    assert (rows["kernels"] >= 0).all() and (
        calls["corr"].to_numpy()[rows["kernels"]] == kernels["corr"].to_numpy()
    ).all()
    files[0].unlink()
    assert _convert(src, tmp_path / "c", 10**9) == first and derived == [1]
    assert _convert(src, tmp_path / "d", 500) == first and plans[-1].slices == 1 and derived == [1, 1]


def _groups_file(path: Path, groups: list[tuple[list[int], list[int], list[str]]]) -> None:
    """A Parquet file of one row group per (starts, ends, names), each group's names a categorical of
    its own categories (as the table cache writes batches)."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    for s, e, names in groups:
        df = pd.DataFrame({"start": s, "end": e, "name": pd.Categorical(names)})
        table = pa.Table.from_pandas(df, preserve_index=False)
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
    assert writer is not None
    writer.close()


@pytest.mark.parametrize("same_names", [True, False])
def test_a_slices_rows_are_those_of_each_row_group_converted_and_cut(tmp_path, monkeypatch, same_names):
    """``owned``/``running_at``/``at_positions`` (Arrow cuts, one conversion) give the frame of
    converting each row group to pandas, filtering it and concatenating the parts: a run of rows or
    scattered rows, groups of equal categories (kept categorical) or of other ones (then text)."""
    import numpy as np
    import pandas as pd
    import pyarrow.parquet as pq

    path = tmp_path / "t.parquet"
    other = ["a", "b"] if same_names else ["c", "d"]
    _groups_file(
        path,
        [
            ([0, 10, 20, 30], [100, 15, 25, 35], ["a", "b", "a", "b"]),
            ([40, 50, 60, 70], [45, 55, 200, 75], [other[0], other[1], other[1], other[0]]),
            ([80, 90], [85, 95], ["a", "b"]),
        ],
    )

    @contextmanager
    def direct(where):
        yield pq.ParquetFile(where[0])

    monkeypatch.setattr(row_groups, "_parquet", direct)
    with direct((str(path),)) as pf:
        got = row_groups.scan_groups((str(path), "", ""), pf, 1)
        assert got is not None
        g = got[0]
        groups = [pf.read_row_group(i).to_pandas() for i in range(pf.metadata.num_row_groups)]

    def expect(keep):
        parts = [df[keep(df)] for df in groups]
        pos = np.concatenate([g.first[i] + np.flatnonzero(keep(df).to_numpy()) for i, df in enumerate(groups)])
        return pd.concat(parts, ignore_index=True), pos

    memo = row_groups.Decoded()
    for (df, pos), (want, want_pos) in [
        (row_groups.owned(g, 20, 61, memo=memo), expect(lambda d: (d["start"] >= 20) & (d["start"] < 61))),
        (row_groups.running_at(g, 62, memo=memo), expect(lambda d: (d["start"] < 62) & (d["end"] > 62))),
    ]:
        pd.testing.assert_frame_equal(df, want, check_exact=True)
        assert pos.tolist() == want_pos.tolist()
    assert row_groups.owned(g, 20, 61)[1].tolist() == [2, 3, 4, 5, 6]
    assert row_groups.running_at(g, 62)[1].tolist() == [0, 6]  # (one row of each of two groups: scattered)
    name = row_groups.owned(g, 0, 100)[0]["name"]
    assert isinstance(name.dtype, pd.CategoricalDtype) == same_names
    assert name.astype(str).tolist() == ["a", "b", "a", "b", other[0], other[1], other[1], other[0], "a", "b"]
    rows = row_groups.at_positions(g, np.array([1, 3, 5, 8]), memo=memo)
    assert rows["start"].tolist() == [10, 30, 50, 80]
    assert rows["name"].astype(str).tolist() == ["b", "b", other[1], "a"]
    assert len(memo.got) == 3  # (each group decoded once for all the reads above)


@pytest.mark.parametrize("step", [1, 3, 7, 64, 1000])
def test_a_groups_start_sample_is_every_step_th_sorted_start(tmp_path, step):
    """``scan_groups``' sample of each group's starts (the slice borders' quantiles): the values of ranks
    0, step, 2 x step, ... of each group, read from a Parquet file (random starts: partitioned where
    few are wanted, sorted otherwise)."""
    import numpy as np
    import pyarrow.parquet as pq

    rng = np.random.default_rng(step)
    starts = [rng.integers(0, 10**6, n) for n in (1, 700, 5000)]
    starts[1][::5] = 42  # (ties)
    path = tmp_path / "t.parquet"
    _groups_file(path, [(list(s), list(s + 1), ["a"] * len(s)) for s in starts])
    got = row_groups.scan_groups((str(path), "", ""), pq.ParquetFile(path), step)
    assert got is not None
    want = np.concatenate([np.sort(s)[::step] for s in starts])
    assert got[1].tolist() == want.tolist()
    assert len(want) == sum(len(range(0, len(s), step)) for s in starts)


def test_a_slices_pop_window_is_its_rows_and_the_running_ones_clipped():
    """``slices._cut``: the measured columns of a slice's own rows and of those running at its start,
    cut to the slice -- exactly what ``stages.clip`` makes of them concatenated (every row kept)."""
    import numpy as np
    import pandas as pd

    from nsys2prv.pipeline import stages
    from nsys2prv.translate.records import Translation

    lo, hi = 100, 200
    own = pd.DataFrame(  # (starting in [lo, hi): a mark at lo, one ending past hi, one at hi - 1)
        {
            "start": np.array([100, 120, 150, 199], np.int64),
            "end": np.array([100, 180, 260, 199], np.int64),
            "tid": np.array([1, 2, 1, 3], np.int64),
            "name": pd.Categorical(["a", "b", "a", "c"]),
            "nccl": np.array([True, False, False, True]),
        }
    )
    running = pd.DataFrame(  # (started before lo, ending after it: one past hi)
        {
            "start": np.array([40, 90], np.int64),
            "end": np.array([120, 300], np.int64),
            "tid": np.array([2, 4], np.int64),
            "name": pd.Categorical(["b", "d"]),
            "nccl": np.array([False, True]),
        }
    )
    cols = ["start", "end", "tid", "nccl"]
    want = {"t": pd.concat([own[cols], running[cols]], ignore_index=True)}
    kept = stages.clip(want, lo, hi, Translation())["t"]
    got = slices._cut(own, running, lo, hi)
    assert kept.all()
    pd.testing.assert_frame_equal(got, want["t"].reset_index(drop=True))
    assert got["start"].tolist() == [100, 120, 150, 199, 100, 100] and got["end"].tolist() == [
        100,
        180,
        200,
        199,
        120,
        200,
    ]
    pd.testing.assert_frame_equal(slices._cut(own, running.iloc[:0], lo, hi), slices._cut(own, None, lo, hi))
    assert slices._cut(own, None, lo, hi)["end"].tolist() == [100, 180, 200, 199]


@pytest.mark.parametrize("step", [1, 7, 500])
def test_a_row_groups_sample_of_starts_is_every_step_th_sorted_start(step):
    """``scan_groups``' sample: ``np.sort(starts)[::step]`` on starts in order (taken as they are),
    a few out of order (partitioned where at most 64 are wanted) and shuffled (sorted)."""
    ordered = np.arange(0, 3_000, 3, dtype=np.int64)
    nearly = ordered.copy()
    nearly[[10, 500]] = nearly[[500, 10]]
    shuffled = np.random.default_rng(7).permutation(ordered)
    for s in (ordered, nearly, shuffled, ordered[:1]):
        got = row_groups._every_sorted(s, step)
        assert got.tolist() == list(range(0, 3 * len(s), 3 * step)), (len(s), step)
