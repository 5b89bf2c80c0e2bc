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

import json
import re
from collections import defaultdict
from pathlib import Path

import oracle_cases as O
import pytest
from cfg_parser import parse_cfg
from conftest import CLOVERLEAF, MPI4, convert, convert_valid, need
from gpu_cluster import gpu_cluster_reports
from paraver_validator import validate_trace
from test_cfgs import SHIPPED, build

from nsys2prv.core import registry as R
from nsys2prv.paraver import palette
from nsys2prv.paraver.cfg_model import COLLECTIVE, LAUNCH_TAGS
from nsys2prv.paraver.cfg_render import TABLE_CHROME_PX, TABLE_MAX_WIDTH, TABLE_ROW_PX
from nsys2prv.paraver.text_width import text_px
from nsys2prv.paraver.trace_views import (
    COLLECTIVE_SIZES,
    pcf_types,
    pcf_value_names,
    pcf_values,
    row_counts,
    selected,
    task_rows,
    trace_info,
)

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
    if win.functions.get("thread") == "Int. Between Evt":
        return set()  # (times between events, not their values: CloverLeaf's main kernel is value 2)
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
        if rel in POP_VIEWS:
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


def assert_row_names_unique(threads: list[str]) -> None:
    """Every row's label is unique in the trace (issue 36): an analyst tells every row apart by name."""
    repeated = {lab: n for lab in set(threads) if (n := threads.count(lab)) > 1}
    assert repeated == {}


def test_rows_on_8_ranks_over_2_hosts_name_their_host_and_gpu(tmp_path):
    """Stream rows name their GPU (the number of the GPU's ``Metrics GPU<n>`` row: one numbering over the
    run, GPU ids being per host), host and, on a GPU several processes share, rank, in the forms
    BasicAnalysis reads; an overlap lane of a stream (right after it) adds its number, so every label
    is unique; the .row's comments give each number's host and GPU id."""
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
            assert m and m.group(3).startswith(f"{host}-rank{task}"), label
            streams.add((host, int(m.group(1)[1:])))
        elif label.startswith("Metrics"):
            gpu_row = BA_GPU_ROW.match(label)
            assert gpu_row, label
            gpus.add((host, int(gpu_row.group(1))))
        else:
            assert label.startswith(f"Rank {task} ") and not BA_STREAM.match(label), label
    assert streams == gpus == {("node000", 0), ("node001", 1)}
    assert_row_names_unique(threads)
    lane = threads.index("CUDA-D0.S10-node000-rank3")
    assert threads[lane + 1] == "CUDA-D0.S10-node000-rank3-overlap1"  # the overlap lane, right after its stream
    comments = [line for line in Path(f"{base}.row").read_text().splitlines() if line.startswith("#")]
    assert comments == ["# nsys2prv: GPU 0 = node000 GPU 0", "# nsys2prv: GPU 1 = node001 GPU 0"]


def test_streams_of_processes_sharing_a_gpu_name_their_rank(tmp_path):
    """Every rank of a host on one GPU and one stream id (each process's default stream): the stream rows
    say whose they are (the rank after the host), so no two rows share a label, and BasicAnalysis's
    pattern still reads each as a stream of GPU <n>."""
    from test_view_semantics import shared_gpu_rank

    reports = [shared_gpu_rank(tmp_path / f"rank{r}.sqlite", r, stream=7) for r in range(8)]
    threads = convert_valid(["-m", *reports], tmp_path / "shared")[0].row["THREAD"]
    assert_row_names_unique(threads)
    streams = [t for t in threads if t.startswith("CUDA")]
    want = [f"CUDA-D{r // 4}.S7-node00{r // 4}-rank{r}" for r in range(8)]
    assert streams == [*want[:4], f"{want[3]}-overlap1", *want[4:]]  # (rank 3's copy overlaps its kernel)
    assert [BA_STREAM.match(t).group(1) for t in streams] == ["D0"] * 5 + ["D1"] * 4  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def gpu8(tmp_path_factory):
    """The docs' GPU run (tests/gpu_cluster.py: 8 ranks on 2 hosts, one GPU each, GPU metrics) and its
    --cfgs views."""
    tmp = tmp_path_factory.mktemp("gpu8")
    reports = gpu_cluster_reports(tmp / "reports")
    convert(["--cfgs", tmp / "views", "-m", *reports, tmp / "gpu8"])
    return tmp / "gpu8", tmp / "views"


def test_every_row_name_of_a_multi_host_gpu_metrics_run_is_unique(gpu8):
    """GPU ids are per host (both hosts have GPUs 0-3): the run numbers them 0-7, so no two 'Metrics
    GPU<n>' rows (nor streams) share a label; the .row's comments name each number's host and id."""
    base, _ = gpu8
    trace = validate_trace(str(base))
    threads = trace.row["THREAD"]
    assert len(threads) == 32 and len(set(threads)) == 32
    assert [t for t in threads if t.startswith("Metrics")] == [f"Metrics GPU{n}" for n in range(8)]
    assert [t for t in threads if t.startswith("CUDA")][-2:] == ["CUDA-D7.S7-node1", "CUDA-D7.S13-node1"]
    comments = [line for line in Path(f"{base}.row").read_text().splitlines() if line.startswith("#")]
    assert comments == [f"# nsys2prv: GPU {n} = node{n // 4} GPU {n % 4}" for n in range(8)]


def _selected_rows(base: Path, win) -> list[str]:
    """The row labels a thread window shows (its window_object thread selections)."""
    trace = validate_trace(str(base))
    counts = [n for n, _ in trace.header.apps[0]]
    labels, shown, at = trace.row["THREAD"], [], 0
    for task, n in enumerate(counts):
        flags = win.rows.get(task, [True] * n)
        shown += [lab for lab, f in zip(labels[at : at + n], flags, strict=True) if f]
        at += n
    return shown


def test_states_view_of_a_trace_leaves_out_the_rows_without_states(gpu8):
    """A GPU's metric row carries no state (wxparaver drew it Idle over the whole run): the states view
    --cfgs writes shows the CPU threads and streams only, sized to them."""
    base, views = gpu8
    (win,) = parse_cfg((views / "basics" / "states.cfg").read_text(), "states").windows
    shown = _selected_rows(base, win)
    assert len(shown) == 24 and not [lab for lab in shown if lab.startswith("Metrics")]
    assert sorted(win.rows) == list(range(8)) and win.height == 24 * ROW_PX + 40
    (shipped,) = parse_cfg(SHIPPED["basics/states.cfg"], "states").windows
    assert shipped.rows == {}  # (the shipped file knows no trace: every row)


def test_launch_matrix_of_a_trace_has_no_receiving_cells(gpu8):
    """Paraver puts a receive record's cell (stream row, CPU column) in a #Sends matrix too, at 0: the
    launch matrix --cfgs writes has the CPU threads as rows and hides the empty columns, so its cells
    are the launches from each CPU thread to each stream."""
    base, views = gpu8
    cfg = parse_cfg((views / "analysis" / "launch_matrix.cfg").read_text(), "launch_matrix")
    shown = _selected_rows(base, cfg.windows[0])
    assert shown == [f"Rank {r} main ({5000 + r})" for r in range(8)]
    assert [(a.statistic, a.hide_cols) for a in cfg.analyzers] == [("#Sends", True)]


@pytest.mark.parametrize("name", ["mpi4", "gpu", "clover"])
def test_the_pcf_declares_what_the_trace_holds_and_views_filter_on_it(traces, name):
    """The .pcf declares the types the records use (and the memory-operation type of a trace with GPU
    work, BasicAnalysis's marker; and the CUDA API and MPI types the host POP views filter on:
    Paraver lets every event through a filter whose types the .pcf does not declare); the views
    --cfgs writes filter on declared types only, so Paraver has no "Some of the events specified in
    the filter doesn't appear in the trace" to say."""
    if name not in traces:
        pytest.skip(f"{CLOVERLEAF} is absent (someone else's export, not redistributable)")
    base, views, (events, _) = traces[name]
    declared = set(pcf_types(Path(f"{base}.pcf").read_text()))
    marker = {R.MEMOP.id} if set(events) & R.GPU_WORK_TYPES else set()
    pop_host = {R.CUDA_API.id, *range(50000001, 50000006)}  # (host_useful/host_cuda_api, host_mpi)
    assert declared == set(events) | marker | pop_host
    if name == "mpi4":  # a CPU-only run: no kernel, NCCL, OpenACC or GPU metric type
        assert not declared & {*R.GPU_WORK_TYPES, R.NCCL_RANGE.id, R.OPENACC_REGION.id}
        assert not {t for t in declared if R.GPU_METRIC_BASE <= t < R.GPU_METRIC_BASE + R.GPU_METRIC_MAX}
    for p in views.rglob("*.cfg"):
        for win in parse_cfg(p.read_text(), str(p)).windows:
            assert set(win.types) <= declared, f"{p.relative_to(views)} {win.name!r}: {set(win.types) - declared}"


# --- Round two (issue 36): what wxparaver still showed wrong -----------------------------------


@pytest.mark.parametrize("name", ["mpi4", "gpu"])
def test_gradients_draw_rows_and_times_without_a_value_as_background(traces, name):
    """In window_in_gradient_mode Paraver painted every row without the value, for the whole run, in
    the below-minimum (khaki) colour; the null-gradient mode draws 0 (no value) as background."""
    _, views, _ = traces[name]
    gradients = 0
    for rel, text in _views(views).items():
        for win in parse_cfg(text, rel).windows:
            if win.gradient:
                gradients += 1
                assert win.color_mode == "window_in_null_gradient_mode", f"{rel} {win.name!r}: {win.color_mode}"
    assert gradients >= 5, gradients


def test_collective_sizes_last_only_while_the_collective_runs():
    """The sizes are written at the collective's entry and never closed (Extrae's records): the view
    shows size x (1 inside a collective), not the last size until the next collective."""
    cfg = parse_cfg(SHIPPED["views/mpi_collective_sizes.cfg"], "mpi_collective_sizes")
    shown = [w for w in cfg.windows if w.open]
    assert [w.name for w in shown] == ["MPI collective bytes sent", "MPI collective bytes received"]
    for win, size_type in zip(shown, (R.MPI_SEND_SIZE.id, R.MPI_RECV_SIZE.id), strict=True):
        assert win.kind == "composed" and win.operation == "product" and win.parents is not None
        size, inside = (cfg.windows[i - 1] for i in win.parents)
        assert size.types == [size_type] and size.functions["thread"] == "Last Evt Val"
        assert inside.types == [COLLECTIVE] and inside.compose["compose_thread"] == "Sign"


def test_collective_sizes_view_only_for_a_run_with_collective_sizes(traces):
    """mpi4 (MPI as NVTX ranges: its 24 collectives carry size 0) gets no collective-size view."""
    _, views, (events, _) = traces["mpi4"]
    assert events[R.MPI_SEND_SIZE.id] == events[R.MPI_RECV_SIZE.id] == {0}
    assert (views / "views" / "mpi_calls.cfg").exists()
    assert not (views / "views" / "mpi_collective_sizes.cfg").exists()
    assert "views/mpi_collective_sizes.cfg" not in selected({"mpi"})
    assert "views/mpi_collective_sizes.cfg" in selected({"mpi", COLLECTIVE_SIZES})


def test_kernel_durations_read_in_microseconds():
    cfg = parse_cfg(SHIPPED["basics/kernel_duration.cfg"], "kernel_duration")
    assert {w.units for w in cfg.windows} == {"Microseconds"}
    assert cfg.windows[-1].name == "Kernel duration (us)"


def test_message_matrix_counts_mpi_messages_only():
    """Every communication but the launch links (whose copies put 6,291,456 bytes next to MPI's 24,576
    on gpu8): tag filter != the launch tags; empty columns hidden in every histogram but the matrices."""
    cfg = parse_cfg(SHIPPED["analysis/message_matrix.cfg"], "message_matrix")
    (win,) = cfg.windows
    assert win.functions["tag_msg"] == "!=" and win.tags == list(LAUNCH_TAGS)
    for rel, text in SHIPPED.items():  # (a matrix keeps its square: a column per thread)
        for a in parse_cfg(text, rel).analyzers:
            # (but the launch matrix, whose CPU-thread columns only receive: hidden)
            assert a.hide_cols == (a.statistic not in ("#Sends", "Bytes sent") or "launch" in rel), (rel, a.name)


@pytest.mark.parametrize("name", ["mpi4", "gpu"])
def test_histograms_rendered_for_a_trace_show_every_row_and_column(traces, name):
    """A table of N rows and M columns: N rows of the table's row height, M columns at least as wide as
    wxparaver draws their labels (the names of the values the control window can show, from the .pcf;
    a matrix: the rows' labels), up to the largest window."""
    base, views, _ = traces[name]
    row_text = Path(f"{base}.row").read_text()
    rows = row_counts(row_text)
    values = pcf_values(Path(f"{base}.pcf").read_text())
    labels = pcf_value_names(Path(f"{base}.pcf").read_text())
    header = Path(f"{base}.prv").open().readline()
    checked = 0
    for p in views.rglob("*.cfg"):
        cfg = parse_cfg(p.read_text(), str(p))
        for a in cfg.analyzers:
            control = cfg.windows[a.control - 1]
            n = rows[control.level]
            assert a.height >= min(1000, n * TABLE_ROW_PX), f"{p.name} {a.name!r}: {a.height} px for {n} rows"
            if a.statistic in ("#Sends", "Bytes sent"):  # a column per thread
                names = [lab for task in task_rows(header, row_text) for lab in task]
                assert len(names) == n
                if a.hide_cols and control.rows:  # (the launch matrix: CPU rows, the other rows' columns)
                    shown = _selected_rows(base, control)
                    names = [lab for lab in names if lab not in shown]
            elif control.kind == "single" and control.compose["compose_thread"] in ("As Is", "Stacked Val"):
                # the names of the values (types may share values) but 0, which Paraver leaves out
                assert set().union(*(labels.get(t, {}) for t in control.types)) == set().union(
                    *(values.get(t, ()) for t in control.types)
                )
                names = [name for v, name in set().union(*(labels[t].items() for t in control.types)) if v != 0]
            else:
                continue
            least = TABLE_CHROME_PX + sum(text_px(lab, bold=True) for lab in names)  # every column label drawn
            assert min(TABLE_MAX_WIDTH, least) <= a.width <= TABLE_MAX_WIDTH, f"{p.name} {a.name!r}: {a.width} px"
            checked += 1
    assert checked >= 2, checked


def test_table_texts_are_sized_as_wxparaver_draws_them():
    """text_px bounds what wxparaver 4.11.4 draws (measured on the Quick start's MPI time table under
    Xvfb: a column's width, padding and grid line included), by at most 10 px: the labels' bold font,
    the cells' numbers, a row label."""
    measured = {
        ("MPI_Isend", True): 86,
        ("MPI_Irecv", True): 83,
        ("MPI_Barrier", True): 99,
        ("MPI_Allreduce", True): 117,
        ("MPI_Sendrecv", True): 116,
        ("2,596,602.23 us", False): 113,
        ("Rank 0 worker (25223)", True): 175,
    }
    assert {k: 0 <= text_px(*k) - px <= 10 for k, px in measured.items()} == dict.fromkeys(measured, True)


def test_mpi_histogram_of_the_quick_start_is_as_wide_as_its_columns(traces):
    """The Quick start's MPI time table: 10 columns (the calls; Outside MPI, value 0, is left out) and
    16 rows; it opened 1560 px wide (120 px a listed value, 0 included) for 1,225 px of table and border
    in wxparaver.  Sized from its labels and the longest time a row can hold (the trace's 1.24 s,
    "1,242,079.71 us"), it opens 1371 px wide."""
    base, views, _ = traces["mpi4"]
    info = trace_info(Path(f"{base}.pcf"))
    assert info.duration_ns == 1_242_079_711
    cfg = parse_cfg((views / "analysis" / "mpi_time.cfg").read_text(), "mpi_time")
    (hist,) = cfg.analyzers
    names = {v: n for t in cfg.windows[hist.control - 1].types for v, n in info.names[t].items()}
    labels = [names[v] for v in sorted(names) if v]
    assert len(labels) == 10 and "Outside MPI" not in labels
    number = text_px("1,242,079.71 us", bold=False)
    columns = [max(text_px(lab, bold=True), number) for lab in labels]
    row_label = max(text_px(lab, bold=True) for task in info.tasks for lab in task)
    assert (row_label, number, sum(columns)) == (184, 113, 1139)
    assert hist.width == TABLE_CHROME_PX + row_label + sum(columns) == 1371


def test_os_runtime_calls_of_a_trace_get_distinct_colours(traces):
    """Paraver's palette drew epoll_wait and fread in near-identical magentas and pthread_create, recv,
    usleep and write in reds: a view rendered for the trace gives each name the trace holds its own
    colour, at least one grid step (51) apart in every pair, none lost on the black background."""
    _, views, (events, _) = traces["mpi4"]
    (win,) = parse_cfg((views / "views" / "os_runtime_calls.cfg").read_text(), "os_runtime_calls").windows
    held = sorted(events[R.OSRT.id] - {0})
    assert len(held) >= 10 and set(held) <= set(win.palette), held
    colours = [win.palette[v] for v in held]
    gaps = [
        sum((x - y) ** 2 for x, y in zip(a, b, strict=True)) ** 0.5 for i, a in enumerate(colours) for b in colours[:i]
    ]
    assert min(gaps) >= 51, min(gaps)
    assert all(palette.luminance(c) >= palette.DIM for c in colours)


def test_the_pcf_lists_the_mpi_calls_the_trace_holds_and_histograms_fit_them(traces):
    """Extrae's .pcf lists the MPI calls a trace made; ours listed all 220, so the per-trace MPI
    histograms opened 1600 px wide (120 px a listed value): the .pcf lists 0 (Outside MPI) and the
    values the trace's MPI records use, every one named; the MPI time histogram is sized to them."""
    base, views, (events, _) = traces["mpi4"]
    listed = pcf_values(Path(f"{base}.pcf").read_text())
    held = set().union(*(events.get(t, set()) for t in R.MPI_TYPES))
    assert held == {0, 3, 4, 6, 7, 8, 9, 10, 31, 32, 41}
    assert {t: listed[t] for t in R.MPI_TYPES} == dict.fromkeys(R.MPI_TYPES, frozenset(held))
    (hist,) = parse_cfg((views / "analysis" / "mpi_time.cfg").read_text(), "mpi_time").analyzers
    assert hist.width == 1371  # (test_mpi_histogram_of_the_quick_start_is_as_wide_as_its_columns)
    (win,) = parse_cfg((views / "views" / "mpi_calls.cfg").read_text(), "mpi_calls").windows
    assert win.maximum_y == 41.0


def test_host_pop_views_are_not_written_for_a_trace_without_the_calls_pop_counted(traces, tmp_path):
    """POP counts MPI time whatever -t; a `-t nvtx` trace of the MPI ranks has no MPI record, so its
    host_useful view would count Rank 0's 1,211,824,166 ns in MPI as useful: --cfgs writes neither it
    nor host_mpi.cfg, and the summary says why (with -t mpi both views are there and no such note)."""
    base = tmp_path / "nvtx"
    convert(["-t", "nvtx", "--cfgs", tmp_path / "views", "-m", *sorted(need(MPI4).glob("rank*.sqlite")), base])
    assert sorted(p.name for p in (tmp_path / "views" / "analysis").glob("host_*")) == []
    pop = json.loads(Path(f"{base}.pop.json").read_text())["host"]["mpi_time_ns"]
    assert pop["Rank 0"] == 1_211_824_166 and sum(pop.values()) == 3_024_779_605
    notes = [n for n in json.loads(Path(f"{base}.summary.json").read_text())["notes"] if n.startswith("--cfgs")]
    assert notes == [
        "--cfgs: analysis/host_useful.cfg, analysis/host_mpi.cfg not written, their numbers would not be "
        "OUT.pop.json's: OUT.pop.json counts 3,024,779,605 ns in MPI calls (Rank 0: 1,211,824,166 ns), the "
        "trace holds no MPI call (-t)"
    ]
    mpi4, views, _ = traces["mpi4"]
    assert (views / "analysis" / "host_mpi.cfg").exists()
    assert not [n for n in json.loads(Path(f"{mpi4}.summary.json").read_text())["notes"] if n.startswith("--cfgs")]
