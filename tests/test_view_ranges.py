"""Issue 36: what an analyst sees when a view opens in wxparaver, checked statically (no GUI).

On the Quick start's trace (the real 4-rank MPI reports), on a generated GPU trace holding every kind
of record and on the CloverLeaf export (when present), for every shipped view and every view --cfgs
writes for the trace:
- the y range of each code-colour window covers every value of its types the trace holds (Paraver
  draws a value above ``window_maximum_y`` as background), unless Paraver computes it on load;
- every value the trace holds that Paraver's code palette draws black (like "no data") or white (like
  "Not created") has a custom colour, and a state view's Idle (0) is not black;
- histograms open as tables of numbers (Zoom disabled), and views written for the trace are tall
  enough for a 16-pixel label per row;
- times read in microseconds (but in the POP views), GPU activity's column labels are short;
- rows on 8 ranks over 2 hosts name their host and GPU (one numbering with the GPU rows).
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import oracle_cases as O
import pytest
from cfg_parser import parse_cfg
from conftest import CLOVERLEAF, MPI4, convert, need
from paraver_validator import validate_trace
from test_cfgs import SHIPPED, build

from nsys2prv.core import registry as R
from nsys2prv.paraver import palette
from nsys2prv.paraver.trace_views import pcf_types, row_counts

ROW_PX = 16


def trace_values(prv: Path) -> tuple[dict[int, set[int]], set[int]]:
    """(event type -> values, states) of a .prv."""
    events: dict[int, set[int]] = defaultdict(set)
    states: set[int] = set()
    with prv.open() as f:
        next(f)
        for line in f:
            if line.startswith("2:"):
                fields = line.rstrip("\n").split(":")[6:]
                for t, v in zip(fields[::2], fields[1::2], strict=True):
                    events[int(t)].add(int(v))
            elif line.startswith("1:"):
                states.add(int(line.rsplit(":", 1)[1]))
    return events, states


def _traces(tmp: Path) -> dict[str, tuple[Path, Path]]:
    """name -> (trace base, --cfgs folder)."""
    out = {}
    mpi4 = tmp / "mpi4"
    convert(["-t", "mpi,nvtx,osrt", "-m", "--cfgs", tmp / "mpi4_views", *sorted(need(MPI4).glob("rank*.sqlite")), mpi4])
    out["mpi4"] = (mpi4, tmp / "mpi4_views")
    gpu = tmp / "gpu"
    convert(["-t", "all,osrt", "--cfgs", tmp / "gpu_views", build(tmp / "rank0.sqlite"), gpu])
    out["gpu"] = (gpu, tmp / "gpu_views")
    if CLOVERLEAF.exists():
        convert(["--cfgs", tmp / "clover_views", CLOVERLEAF, tmp / "clover"])
        out["clover"] = (tmp / "clover", tmp / "clover_views")
    return out


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ranges")
    return {name: (base, views, trace_values(Path(f"{base}.prv"))) for name, (base, views) in _traces(tmp).items()}


def _views(views: Path) -> dict[str, str]:
    """Every view to check: the shipped files and the trace's own (--cfgs) files."""
    mine = {f"trace:{p.relative_to(views).as_posix()}": p.read_text() for p in views.rglob("*.cfg")}
    return {**{f"shipped:{k}": v for k, v in SHIPPED.items()}, **mine}


def _shown(win, events, states) -> set[int]:
    if win.kind != "single" or win.gradient:
        return set()
    if win.compose.get("compose_thread") not in ("As Is", "Stacked Val") or win.compose.get("topcompose1") != "As Is":
        return {0, 1}  # Sign, 1-Sign: inside or not
    if not win.types:
        return set(states) if win.functions.get("thread") == "State As Is" else set()
    return set().union(*(events.get(t, set()) for t in win.types))


@pytest.mark.parametrize("name", ["mpi4", "gpu", "clover"])
def test_every_window_covers_the_values_the_trace_holds(traces, name):
    if name not in traces:
        pytest.skip(f"{CLOVERLEAF} is absent (someone else's export, not redistributable)")
    _, views, (events, states) = traces[name]
    checked = 0
    for rel, text in _views(views).items():
        for win in parse_cfg(text, rel).windows:
            shown = _shown(win, events, states)
            if not shown:
                continue
            checked += 1
            hidden = sorted(v for v in shown if v > win.maximum_y)[:5]
            assert win.compute_y_max or not hidden, f"{rel} window {win.name!r}: maximum {win.maximum_y} hides {hidden}"
    assert checked >= 10, checked


@pytest.mark.parametrize("name", ["mpi4", "gpu", "clover"])
def test_no_value_the_trace_holds_is_drawn_black_or_white(traces, name):
    if name not in traces:
        pytest.skip(f"{CLOVERLEAF} is absent (someone else's export, not redistributable)")
    _, views, (events, states) = traces[name]
    for rel, text in _views(views).items():
        for win in parse_cfg(text, rel).windows:
            shown = _shown(win, events, states)
            bad = sorted(v for v in shown if v > 0 and palette.unreadable(v) and v not in win.palette)
            assert not bad, f"{rel} window {win.name!r}: values {bad[:5]} drawn black or white"
            if shown and not win.types:  # a state view: Idle has a colour, not the black of no data
                assert win.palette.get(R.IDLE) == palette.IDLE, f"{rel} window {win.name!r}: Idle is black"


def test_the_palette_port_gives_paraver_own_colours():
    """The values issue 36 saw: 2 white (CloverLeaf's main kernel), 0 black; 1 Running blue, 3 red."""
    assert palette.color_of(2) == (255, 255, 255) and palette.unreadable(2)
    assert palette.color_of(0) == palette.BACKGROUND and palette.unreadable(0)
    assert palette.color_of(1) == (0, 0, 255) and not palette.unreadable(1)
    assert palette.color_of(3) == (255, 0, 0) and not palette.unreadable(3)
    assert [v for v in range(1, 50) if palette.unreadable(v)] == [2, 16, 23, 29, 42]


@pytest.mark.parametrize("name", ["mpi4", "gpu"])
def test_histograms_open_as_numbers_and_views_fit_their_rows(traces, name):
    base, views, _ = traces[name]
    rows = row_counts(Path(f"{base}.row").read_text())
    for rel, text in _views(views).items():
        cfg = parse_cfg(text, rel)
        for a in cfg.analyzers:
            assert not a.zoom, f"{rel}: histogram {a.name!r} opens zoomed (an unlabelled colour table)"
            if rel.startswith("trace:"):
                level = cfg.windows[a.control - 1].level
                assert a.height >= ROW_PX * rows[level], f"{rel}: {a.name!r} {a.height} px for {rows[level]} rows"
        if rel.startswith("trace:"):
            for win in cfg.windows:
                assert win.height >= min(ROW_PX * rows[win.level], 1000), f"{rel}: {win.name!r} too short"


def test_nvtx_nesting_level_is_drawn_one_colour_per_level():
    """Not a gradient (which painted every row in the below-minimum colour): level 0 is no range."""
    for rel, text in SHIPPED.items():
        for win in parse_cfg(text, rel).windows:
            if win.name.startswith("NVTX nesting level"):
                assert not win.gradient and win.compute_y_max, rel


POP_VIEWS = {  # scripts/check_views.py compares them with OUT.pop.json to the ns: they stay in ns
    *(f"analysis/{v}.cfg" for v in ("host_useful", "host_cuda_api", "host_mpi", "gpu_activity")),
    *(
        f"analysis/{p}device_{q}.cfg"
        for p in ("", "node_")
        for q in ("useful", "transfer_nonoverlapped", "active", "idle")
    ),
}


def test_times_read_in_microseconds_but_the_pop_views():
    """paramedir prints 1242079.71 (µs) where ns gave 1242079711; the POP views equal OUT.pop.json in ns."""
    for rel, text in SHIPPED.items():
        units = {w.units for w in parse_cfg(text, rel).windows}
        if rel in POP_VIEWS or rel == "basics/kernel_duration.cfg":  # (a duration as the value: ns)
            assert units == {"Nanoseconds"}, rel
        else:
            assert units == {"Microseconds"}, rel
    assert len(POP_VIEWS) == 12


def test_histogram_column_labels_nsys2prv_chooses_are_short():
    """GPU activity's values are the columns of analysis/gpu_activity.cfg: short, the meaning in the type's label."""
    assert [len(label) <= 24 for label in R.GPU_ACTIVITY.values.values()] == [True] * 4
    assert "Data movement" in R.GPU_ACTIVITY.values.values() and "no compute kernel" in R.GPU_ACTIVITY.label


# BasicAnalysis's nsys2prv path (nsys2prvmetrics.py): a stream row, its suffix read as the node; a GPU row;
# every other row is a host thread (issue 17).
BA_STREAM = re.compile(r"^(?:CUDA|HIP)-(D\d+)\.S(\d+)(?:-(\S+))?\s*$")
BA_GPU_ROW = re.compile(r"^Metrics GPU(\d+)\s*$")


def test_rows_on_8_ranks_over_2_hosts_name_their_host_and_gpu(tmp_path):
    """Stream rows name their GPU (the id of the GPU's ``Metrics GPU<id>`` row: one numbering) and host,
    in the forms BasicAnalysis reads; a label repeats only for an overlap lane of a stream (right after
    it) and for the GPU rows of GPUs with the same id on different hosts (BasicAnalysis's GPU-row pattern
    allows nothing else)."""
    base = O.convert("gpu-shared", tmp_path)
    trace = validate_trace(str(base))
    tasks, threads = trace.row["TASK"], trace.row["THREAD"]
    host_of_task = [re.match(r"Rank \d+ \((\S+), pid \d+\)", t).group(1) for t in tasks]  # type: ignore[union-attr]
    task_of_row = [i for i, (n, _) in enumerate(trace.header.apps[0]) for _ in range(n)]
    streams, gpus = set(), set()
    for label, task in zip(threads, task_of_row, strict=True):
        host = host_of_task[task]
        if label.startswith("CUDA-"):
            m = BA_STREAM.match(label)
            assert m and m.group(3) == host, label
            streams.add((host, int(m.group(1)[1:])))
        elif label.startswith("Metrics"):
            gpu_row = BA_GPU_ROW.match(label)
            assert gpu_row, label
            gpus.add((host, int(gpu_row.group(1))))
        else:
            assert label.startswith(f"Rank {task} ") and not BA_STREAM.match(label), label
    assert streams == gpus == {("node000", 0), ("node001", 0)}
    repeated = {lab: n for lab in set(threads) if (n := threads.count(lab)) > 1}
    assert repeated == {"CUDA-D0.S10-node000": 2, "Metrics GPU0": 2}
    lane = threads.index("CUDA-D0.S10-node000")
    assert threads[lane + 1] == threads[lane]  # the overlap lane, right after its stream


@pytest.mark.parametrize("name", ["mpi4", "gpu", "clover"])
def test_the_pcf_declares_what_the_trace_holds_and_views_filter_on_it(traces, name):
    """The .pcf declares the types the records use (and the memory-operation type of a trace with GPU
    work, BasicAnalysis's marker); the views --cfgs writes filter on declared types only, so Paraver has
    no "Some of the events specified in the filter doesn't appear in the trace" to say."""
    if name not in traces:
        pytest.skip(f"{CLOVERLEAF} is absent (someone else's export, not redistributable)")
    base, views, (events, _) = traces[name]
    declared = set(pcf_types(Path(f"{base}.pcf").read_text()))
    marker = {R.MEMOP.id} if set(events) & R.GPU_WORK_TYPES else set()
    assert declared == set(events) | marker
    if name == "mpi4":  # a CPU-only run: no CUDA, NCCL, OpenACC or GPU metric type
        assert not declared & {*R.GPU_WORK_TYPES, R.CUDA_API.id, R.NCCL_RANGE.id, R.OPENACC_REGION.id}
        assert not {t for t in declared if R.GPU_METRIC_BASE <= t < R.GPU_METRIC_BASE + R.GPU_METRIC_MAX}
    for p in views.rglob("*.cfg"):
        for win in parse_cfg(p.read_text(), str(p)).windows:
            assert set(win.types) <= declared, f"{p.relative_to(views)} {win.name!r}: {set(win.types) - declared}"
