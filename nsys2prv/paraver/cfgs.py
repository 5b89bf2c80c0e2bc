"""Paraver views (.cfg) for the traces nsys2prv writes, described in Python against the registry.

Every event type, state or tag a view filters on comes from ``registry.py``: no id is written
twice.  ``VIEWS`` describes the views shipped in the package (``nsys2prv/cfgs/``, also reachable
as ``cfgs/`` at the repository root); ``trace_views`` describes the views whose ids depend on one
trace (NVTX domains, GPU metrics), read from that trace's .pcf.

The text follows the reader of BSC's paraver-kernel (``api/cfg.cpp``): windows are numbered by
their order in the file (``window_id`` is written for humans, the loader counts), a derived
window names its two parents by that number (``window_identifiers``), and a 2D analyzer names
its control and data windows the same way.  ``window_filter_module evt_type N ids`` is followed
by ``evt_type_label N "labels"``, as Paraver writes it itself: when a label matches a type of
the loaded trace, Paraver uses that type's id, so a view keeps working if ids move.

    python -m nsys2prv.paraver.cfgs regenerate          # rewrite nsys2prv/cfgs from VIEWS
    python -m nsys2prv.paraver.cfgs check               # exit 1 if the shipped files are stale
    python -m nsys2prv.paraver.cfgs render TRACE DIR    # shipped views + this trace's views into DIR
"""

from __future__ import annotations

import re
import shutil
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from nsys2prv.core import registry as R

# Statistics of a histogram that count communications (paraver-kernel histogramstatistic.cpp); the
# vocabulary the test parser accepts is in tests/cfg_parser.py.
COMM_STATISTICS = frozenset({"#Sends", "#Receives", "Bytes sent"})

FULL_SCALE = "1.000000000000"
ZERO = "0.000000000000"


def _f(x: float) -> str:
    return f"{x:.12f}"


@dataclass(frozen=True)
class Window:
    """A timeline.  Single: a thread function over the event types in ``types`` (empty: none is
    filtered, i.e. a state or communication view); derived: ``operation`` of two earlier windows."""

    name: str
    thread: str = "State As Is"
    types: tuple[int, ...] = ()
    values: tuple[int, ...] = ()  # evt_value filter (values of a type with a fixed value list)
    tags: tuple[int, ...] = ()  # communication tag filter
    compose_thread: str = "As Is"
    level: str = "thread"
    task: str = "Adding"  # aggregation at task level (when level is task)
    node: str = "Adding"  # aggregation at node level (when level is node: over its CPUs,
    # one per thread: the threads of the node's tasks)
    comm_lines: bool = False
    gradient: bool = False  # numeric values: gradient colours instead of one colour per value
    open: bool = True
    maximum_y: float = 20.0
    operation: str | None = None  # derived window: operation over ``parents``
    parents: tuple[int, int] | None = None
    labels: tuple[str, ...] | None = None  # evt_type labels; None: from the registry (or none, if unknown)
    top: str = "As Is"  # topcompose1: a function of the window's final value


@dataclass(frozen=True)
class Histogram:
    name: str
    control: int  # 1-based window numbers in the file
    data: int
    statistic: str = "Time"


@dataclass(frozen=True)
class View:
    path: str  # folder/name.cfg
    description: str
    windows: tuple[Window, ...]
    histograms: tuple[Histogram, ...] = ()
    summary: str = ""  # one line for the README: what to look for


# --- Rendering ---------------------------------------------------------------------------------

_BAR = "#" * 80


def type_label(type_id: int) -> str | None:
    """The .pcf label of a type the writer defines for every trace, else None."""
    t = R.BY_ID.get(type_id)
    return t.label if t else None


def _labels(w: Window) -> list[str] | None:
    found = list(w.labels) if w.labels is not None else [type_label(t) for t in w.types]
    labels = [lab for lab in found if lab is not None and '"' not in lab]
    return labels if labels and len(labels) == len(found) else None


def _window(w: Window, number: int) -> list[str]:
    lines = [_BAR, f"< NEW DISPLAYING WINDOW {w.name} >", _BAR, f"window_name {w.name}"]
    derived = w.operation is not None
    lines.append(f"window_type {'composed' if derived else 'single'}")
    lines.append(f"window_id {number}")
    if derived:
        assert w.parents is not None, f"derived window {w.name} without parents"
        lines += [
            f"window_factors {FULL_SCALE} {FULL_SCALE}",
            f"window_operation {w.operation}",
            f"window_identifiers {w.parents[0]} {w.parents[1]}",
        ]
    lines += [
        "window_position_x 0",
        f"window_position_y {30 * (number - 1)}",
        "window_width 600",
        "window_height 115",
        f"window_comm_lines_enabled {'true' if w.comm_lines else 'false'}",
        "window_flags_enabled false",
        "window_noncolor_mode true",
    ]
    if w.gradient:
        lines.append("window_color_mode window_in_gradient_mode")
    if not derived:
        lines += [
            "window_logical_filtered true",
            "window_physical_filtered false",
            "window_comm_fromto true",
            "window_comm_tagsize true",
            "window_comm_typeval true",
        ]
    lines += [
        "window_units Nanoseconds",
        f"window_maximum_y {_f(w.maximum_y)}",
        f"window_minimum_y {ZERO}",
        f"window_compute_y_max {'true' if w.gradient else 'false'}",
        f"window_level {w.level}",
        f"window_scale_relative {FULL_SCALE}",
        f"window_end_time_relative {FULL_SCALE}",
        "window_object appl { 1, { All } }",
        f"window_begin_time_relative {ZERO}",
        f"window_open {'true' if w.open else 'false'}",
        "window_drawmode draw_maximum",
        "window_drawmode_rows draw_maximum",
        "window_pixel_size 1",
        "window_labels_to_draw 1",
    ]
    if derived:
        lines.append(
            "window_selected_functions { 5, { {appl, Adding}, {task, "
            + w.task
            + "}, {node, "
            + w.node
            + "}, {system, Adding}, {workload, Adding}, } }"
        )
    else:
        evt_type = "=" if w.types else "All"
        evt_value = "=" if w.values else "All"
        tag = "=" if w.tags else "All"
        lines.append(
            "window_selected_functions { 14, { {cpu, Active Thd}, {appl, Adding}, "
            f"{{task, {w.task}}}, {{thread, {w.thread}}}, {{node, {w.node}}}, {{system, Adding}}, "
            "{workload, Adding}, {from_obj, All}, {to_obj, All}, "
            f"{{tag_msg, {tag}}}, {{size_msg, All}}, {{bw_msg, All}}, {{evt_type, {evt_type}}}, "
            f"{{evt_value, {evt_value}}} }} }}"
        )
    lines.append(
        "window_compose_functions { 9, { {compose_cpu, As Is}, {compose_appl, As Is}, "
        f"{{compose_task, As Is}}, {{compose_thread, {w.compose_thread}}}, {{compose_node, As Is}}, "
        f"{{compose_system, As Is}}, {{compose_workload, As Is}}, {{topcompose1, {w.top}}}, "
        "{topcompose2, As Is} } }"
    )
    if not derived:
        if w.tags:
            lines.append(f"window_filter_module tag_msg {len(w.tags)} " + " ".join(map(str, w.tags)))
        if w.types:
            lines.append(f"window_filter_module evt_type {len(w.types)} " + " ".join(map(str, w.types)))
            labels = _labels(w)
            if labels:
                lines.append(
                    f"window_filter_module evt_type_label {len(labels)} " + " ".join(f'"{lab}"' for lab in labels)
                )
        if w.values:
            lines.append(f"window_filter_module evt_value {len(w.values)} " + " ".join(map(str, w.values)))
    return lines + [""]


def _histogram(h: Histogram, windows: tuple[Window, ...]) -> list[str]:
    comm = h.statistic in COMM_STATISTICS
    control = windows[h.control - 1]
    return [
        "< NEW ANALYZER2D >",
        f"Analyzer2D.Name: {h.name}",
        "Analyzer2D.X: 0",
        "Analyzer2D.Y: 0",
        "Analyzer2D.Width: 600",
        "Analyzer2D.Height: 300",
        f"Analyzer2D.ControlWindow: {h.control}",
        f"Analyzer2D.DataWindow: {h.data}",
        f"Analyzer2D.Accumulator: {control.level.capitalize() if comm else 'Semantic'}",
        f"Analyzer2D.Statistic: {h.statistic}",
        "Analyzer2D.CalculateAll: True",
        "Analyzer2D.HideCols: False",
        "Analyzer2D.HorizVert: Horizontal",
        "Analyzer2D.Color: True",
        "Analyzer2D.SemanticColor: False",
        "Analyzer2D.Zoom: Enabled",
        "Analyzer2D.SortCols: False",
        "Analyzer2D.SortCriteria: Average",
        "Analyzer2D.AnalysisLimits: Alltrace",
        "Analyzer2D.ComputeYScale: True",
        "Analyzer2D.Minimum: 0",
        "Analyzer2D.Maximum: 20",
        "Analyzer2D.Delta: 1",
        "Analyzer2D.ComputeGradient: True",
        "Analyzer2D.PixelSize: 1",
        "Analyzer2D.ShowOnlyTotals: False",
        "Analyzer2D.ShortHeaderLabels: False",
        "",
    ]


def render(view: View) -> str:
    lines = [
        "#ParaverCFG",
        "ConfigFile.Version: 3.4",
        f"ConfigFile.NumWindows: {len(view.windows)}",
        "ConfigFile.BeginDescription",
        *view.description.strip().splitlines(),
        "ConfigFile.EndDescription",
        "",
    ]
    for i, w in enumerate(view.windows, 1):
        lines += _window(w, i)
    for h in view.histograms:
        lines += _histogram(h, view.windows)
    return "\n".join(lines) + "\n"


# --- Building blocks ----------------------------------------------------------------------------


def events(name: str, *types: int, gradient: bool = False, stacked: bool = False, **kw) -> Window:
    """The value of the last event of ``types`` on each thread (names, kinds, sizes)."""
    return Window(
        name,
        "Last Evt Val",
        tuple(types),
        compose_thread="Stacked Val" if stacked else "As Is",
        gradient=gradient,
        **kw,
    )


def inside(name: str, *types: int, level: str = "thread", **kw) -> Window:
    """1 while a begin value of ``types`` is open on a thread (0 after its end); at task level,
    1 while any thread of the task is inside (the union over the task's threads)."""
    return Window(
        name,
        "Last Evt Val",
        tuple(types),
        compose_thread="Sign",
        level=level,
        task="Maximum" if level == "task" else "Adding",
        node="Maximum" if level == "node" else "Adding",
        open=False,
        maximum_y=1.0,
        **kw,
    )


def transfer_windows(level: str, where: str) -> tuple[Window, ...]:
    """POP non-overlapped transfer at ``level`` (task or node): transfer or NCCL on any stream minus
    compute kernel on any stream (window 3)."""
    return (
        inside(f"Transfer or NCCL on any stream{where}", MEMOP, NCCL_KERNEL, level=level),
        inside(f"Compute kernel on any stream{where}", KERNEL, level=level),
        Window(
            "Transfer not overlapped by kernels",
            operation="substract",
            parents=(1, 2),
            level=level,
            task="Maximum" if level == "task" else "Adding",
            node="Maximum" if level == "node" else "Adding",
            maximum_y=1.0,
        ),
    )


def time_per_value(name: str, window: int = 1, statistic: str = "Time") -> Histogram:
    return Histogram(name, window, window, statistic)


KERNEL, KERNEL_FULL, NCCL_KERNEL = R.CUDA_KERNEL.id, R.CUDA_KERNEL_FULL.id, R.NCCL_KERNEL.id
MEMOP, MEMOP_SIZE, API = R.MEMOP.id, R.MEMOP_SIZE.id, R.CUDA_API.id
MPI_CALLS = tuple(sorted(R.MPI_TYPES))
NVTX_DEFAULT = R.nvtx_types(0, "")
NVTX_INDEX1 = R.nvtx_types(1, "?")
LAUNCH_TAGS = tuple(sorted(R.COMM_TAGS))
DEFAULT_DOMAIN_LABEL = R.NVTX_DEFAULT_DOMAIN_NAME

DOMAIN_NOTE = (
    "NVTX domains are numbered in sorted name order over the whole trace, the default domain "
    f"(if present) first: domain index k has types {R.NVTX_BASE} + {R.NVTX_DOMAIN_STRIDE}*k + offset. "
    "The .pcf lists them as '" + R.NVTX_LABELS["pushpop"].format("(domain)") + "'."
)


def _nvtx_windows(types: dict[str, R.EventType], domain: str, labelled: bool) -> tuple[Window, ...]:
    lab = (lambda k: (types[k].label,)) if labelled else (lambda k: None)
    return (
        events(f"NVTX push/pop ({domain})", types["pushpop"].id, stacked=True, labels=lab("pushpop")),
        events(f"NVTX start/end ({domain})", types["startend"].id, labels=lab("startend")),
        events(f"NVTX nesting level ({domain})", types["depth"].id, gradient=True, labels=lab("depth")),
        events(f"NVTX on GPU ({domain})", types["gpu"].id, labels=lab("gpu")),
    )


def _views() -> tuple[View, ...]:
    v: list[View] = []
    add = v.append
    # basics/ ----------------------------------------------------------------------------------
    add(
        View(
            "basics/states.cfg",
            """
Thread state: CPU threads Running / Synchronization (CUDA *Synchronize) / MPI states (Extrae's);
GPU streams Running (compute kernel) / Group Communication (NCCL kernel) / Memory transfer / Idle.""",
            (Window("States"),),
            summary="State of every CPU thread and GPU stream; look for streams mostly Idle and CPU threads "
            "stuck in Synchronization or MPI.",
        )
    )
    add(
        View(
            "basics/cuda_api_calls.cfg",
            f"""
CUDA runtime and driver API call (type {API}) on CPU threads.""",
            (events("CUDA API calls", API),),
            summary="Which CUDA call each CPU thread is in; long cudaMemcpy/cudaStreamSynchronize bars are the "
            "host waiting for the GPU.",
        )
    )
    add(
        View(
            "basics/kernels.cfg",
            f"""
Compute kernel running on each GPU stream (type {KERNEL}, short name; NCCL kernels are apart).""",
            (events("CUDA kernels", KERNEL),),
            summary="Which compute kernel runs on each stream; gaps between kernels are device idle.",
        )
    )
    add(
        View(
            "basics/kernel_names_demangled.cfg",
            f"""
Any kernel (compute or NCCL) by its demangled name (type {KERNEL_FULL}).""",
            (events("CUDA kernels (demangled)", KERNEL_FULL),),
            summary="Same as kernels.cfg with full demangled names (template arguments tell instances apart).",
        )
    )
    add(
        View(
            "basics/kernel_duration.cfg",
            f"""
Duration in ns of each compute kernel (type {KERNEL}), drawn over the kernel; 0 between kernels.
Window 3 = window 1 (time from a kernel event to the next one) x window 2 (1 inside a kernel).""",
            (
                Window("Time to next kernel event", "Int. Between Evt", (KERNEL,), open=False, maximum_y=1e6),
                inside("Inside a compute kernel", KERNEL),
                Window("Kernel duration (ns)", operation="product", parents=(1, 2), gradient=True, maximum_y=1e6),
            ),
            summary="Kernel durations as a gradient: spot the few long kernels and irregular instances of one kernel.",
        )
    )
    add(
        View(
            "basics/memory_operations.cfg",
            f"""
Memory operations on GPU streams: kind (type {MEMOP}: HtoD, DtoH, DtoD, PtoP, Memset, ...) and size in
bytes (type {MEMOP_SIZE}).""",
            (
                events("Memory operation kind", MEMOP),
                events("Memory operation size (bytes)", MEMOP_SIZE, gradient=True, maximum_y=1e9),
            ),
            summary="Copies and memsets on each stream, and how large they are; many small copies cost latency.",
        )
    )
    # views/ -----------------------------------------------------------------------------------
    add(
        View(
            "views/launch_links.cfg",
            f"""
States with the launch communications: each kernel or graph launch call to the kernel it started
(tag {R.TAG_KERNEL_LAUNCH}) and each memcpy/memset call to its memory operation (tag {R.TAG_MEMORY_OP},
size = bytes).""",
            (Window("Launches (comm lines)", tags=LAUNCH_TAGS, comm_lines=True),),
            summary="Lines from the CPU call to the GPU work it launched; long slanted lines are launch "
            "latency or queued work.",
        )
    )
    add(
        View(
            "views/nccl_kernels.cfg",
            f"""
NCCL kernels on GPU streams (type {NCCL_KERNEL}; state Group Communication).""",
            (events("NCCL kernels", NCCL_KERNEL),),
            summary="Where NCCL collectives run on each stream and how they overlap compute kernels.",
        )
    )
    nccl = R.NCCL_FIELDS
    add(
        View(
            "views/nccl_payload.cfg",
            f"""
NCCL regions on CPU threads (type {R.NCCL_RANGE.id}) and, on the NCCL kernel each one launched, the
operation (type {R.NCCL_OPERATION.id}), message size in bytes ({nccl['bytes'].id}), data type
({nccl['datatype'].id}) and reduction operation ({nccl['redop'].id}).""",
            (
                events("NCCL regions", R.NCCL_RANGE.id),
                events("NCCL operation", R.NCCL_OPERATION.id),
                events("NCCL message size (bytes)", nccl["bytes"].id, gradient=True, maximum_y=1e9),
                events("NCCL data type", nccl["datatype"].id),
                events("NCCL reduction operation", nccl["redop"].id),
            ),
            summary="Which collective each NCCL kernel performs and on how many bytes; compare sizes with "
            "kernel durations for bandwidth.",
        )
    )
    add(
        View(
            "views/nvtx_default_domain.cfg",
            f"""
NVTX of the default domain (domain index 0 when the trace has it): push/pop ranges (innermost, Stacked Val),
start/end ranges, nesting level, and the range projected on the GPU work it launched.
{DOMAIN_NOTE}
The type labels name the default domain, so Paraver picks the right ids by label; if the trace has no
default domain, the ids fall back to domain index 0, the first named domain.""",
            _nvtx_windows(NVTX_DEFAULT, DEFAULT_DOMAIN_LABEL, labelled=True),
            summary="The program's phases (NVTX ranges) on CPU threads and on the GPU work they launched.",
        )
    )
    add(
        View(
            "views/nvtx_domain_1.cfg",
            f"""
NVTX of domain index 1 (types {NVTX_INDEX1['pushpop'].id}..{NVTX_INDEX1['gpu'].id}): push/pop (Stacked Val),
start/end, nesting level, on GPU.
{DOMAIN_NOTE}
nsys2prv --cfgs DIR writes one such view per domain of the trace, named after it.""",
            _nvtx_windows(NVTX_INDEX1, "domain index 1", labelled=False),
            summary="Second NVTX domain in sorted order (e.g. a library's annotations); prefer the per-trace "
            "nvtx/ views.",
        )
    )
    add(
        View(
            "views/nvtx_on_gpu.cfg",
            f"""
Innermost push/pop range of the default domain (domain index 0) that enclosed the launch call of each
kernel, copy, memset or graph (type {NVTX_DEFAULT['gpu'].id}), drawn on GPU streams.
{DOMAIN_NOTE}""",
            (events("NVTX on GPU (default domain)", NVTX_DEFAULT["gpu"].id, labels=(NVTX_DEFAULT["gpu"].label,)),),
            summary="Which program phase each piece of GPU work belongs to.",
        )
    )
    add(
        View(
            "views/mpi_calls.cfg",
            f"""
MPI call on each thread (Extrae's types {', '.join(map(str, MPI_CALLS))}: point-to-point, collective,
other, one-sided, I/O; value 0 = Outside MPI).""",
            (events("MPI call", *MPI_CALLS),),
            summary="MPI calls per rank, as Extrae's MPI call view; look for long waits and imbalance.",
        )
    )
    add(
        View(
            "views/mpi_messages.cfg",
            f"""
MPI calls (Extrae's types) with the MPI point-to-point messages drawn as communication lines: logical
send = send call start, physical receive = end of the receive (or of the Wait completing an Irecv);
tag = the MPI tag, size = bytes.  Messages exist where the export identifies peers (the MPI_* tables of
newer Nsight Systems); launch links (tags {', '.join(map(str, LAUNCH_TAGS))}) go to GPU streams.""",
            (events("MPI calls and messages", *MPI_CALLS, comm_lines=True),),
            summary="Who sends to whom and when; a receive that waits long for its line is a late sender.",
        )
    )
    add(
        View(
            "views/mpi_collective_sizes.cfg",
            f"""
Bytes sent and received by each MPI collective (types {R.MPI_SEND_SIZE.id}, {R.MPI_RECV_SIZE.id}).""",
            (
                events("MPI collective bytes sent", R.MPI_SEND_SIZE.id, gradient=True, maximum_y=1e9),
                events("MPI collective bytes received", R.MPI_RECV_SIZE.id, gradient=True, maximum_y=1e9),
            ),
            summary="Message sizes of MPI collectives (exports with MPI_* tables).",
        )
    )
    add(
        View(
            "views/os_runtime_calls.cfg",
            f"""
OS runtime library call on each CPU thread (type {R.OSRT.id}; translated with -t osrt).""",
            (events("OS runtime calls", R.OSRT.id),),
            summary="pthread, I/O and sleep calls; host time that is neither CUDA nor MPI.",
        )
    )
    add(
        View(
            "views/sampled_functions.cfg",
            f"""
Sampled function of each CPU thread (type {R.SAMPLED[0].id}, Extrae's; reports with CPU samples):
the innermost user-mode frame of the last CPU sample, "function [module]" ("module @ address" when
unresolved). Histogram thread x function: number of samples.""",
            (events("Sampled functions", R.SAMPLED[0].id, open=False),),
            (time_per_value("Samples per function", statistic="# Bursts"),),
            summary="Where the CPU time goes, by function: the sample counts per thread.",
        )
    )
    add(
        View(
            "views/sampled_caller_level_1.cfg",
            f"""
Caller at level 1 of the sampled function (type {R.SAMPLED[1].id}; level N is type
{R.SAMPLED[0].id} + N, up to {R.SAMPLED_LEVELS - 1}: change the window's type for another level).
Histogram thread x caller: number of samples.""",
            (events(R.SAMPLED[1].label, R.SAMPLED[1].id, open=False),),
            (time_per_value("Samples per caller", statistic="# Bursts"),),
            summary="Which callers the sampled functions are reached from.",
        )
    )
    add(
        View(
            "analysis/host_during_gpu_idle.cfg",
            f"""
Host activity during GPU idle: histogram task x sampled function (type {R.SAMPLED[0].id}, reports with CPU samples)
while no compute kernel, memory operation or NCCL kernel (types {KERNEL}, {MEMOP}, {NCCL_KERNEL}) runs on
any stream of the process: window 3 = window 1 (the process's sampled function: the largest value over
its threads, i.e. the function of its one sampled thread) x window 2 (1 while its GPU work is idle).
Histogram: time per function while the GPU is idle, each sample's function held until the next sample
(about 1 ms a sample at nsys's default rate; values: the .pcf's Sampled functions).""",
            (
                Window(
                    "Sampled function of the process",
                    "Last Evt Val",
                    (R.SAMPLED[0].id,),
                    level="task",
                    task="Maximum",
                    open=False,
                ),
                inside("GPU idle", KERNEL, MEMOP, NCCL_KERNEL, level="task", top="1-Sign"),
                Window("Sampled function while the GPU is idle", operation="product", parents=(1, 2), level="task"),
            ),
            (time_per_value("Host time per function while the GPU is idle", window=3),),
            summary="What the host was doing while its GPU sat idle: time per sampled function.",
        )
    )
    # analysis/ --------------------------------------------------------------------------------
    add(
        View(
            "analysis/kernel_time.cfg",
            f"""
Histogram thread x compute kernel (type {KERNEL}): total time in ns.""",
            (events("CUDA kernels", KERNEL, open=False),),
            (time_per_value("Kernel time"),),
            summary="Time per kernel per stream: the kernels worth optimising first.",
        )
    )
    add(
        View(
            "analysis/kernel_count.cfg",
            f"""
Histogram thread x compute kernel (type {KERNEL}): number of executions.""",
            (events("CUDA kernels", KERNEL, open=False),),
            (time_per_value("Kernel count", statistic="# Bursts"),),
            summary="Executions per kernel per stream: many tiny kernels suggest fusing or graphs.",
        )
    )
    add(
        View(
            "analysis/kernel_avg_duration.cfg",
            f"""
Histogram thread x compute kernel (type {KERNEL}): average duration in ns.""",
            (events("CUDA kernels", KERNEL, open=False),),
            (time_per_value("Kernel average duration", statistic="Average Burst Time"),),
            summary="Mean duration per kernel and stream; differences between ranks show device imbalance.",
        )
    )
    add(
        View(
            "analysis/memop_time.cfg",
            f"""
Histogram thread x memory operation kind (type {MEMOP}): total time in ns.""",
            (events("Memory operation kind", MEMOP, open=False),),
            (time_per_value("Memory operation time"),),
            summary="Time per copy direction and memset per stream.",
        )
    )
    add(
        View(
            "analysis/nccl_time.cfg",
            f"""
Histogram thread x NCCL kernel (type {NCCL_KERNEL}): total time in ns.""",
            (events("NCCL kernels", NCCL_KERNEL, open=False),),
            (time_per_value("NCCL kernel time"),),
            summary="Time in each NCCL kernel per stream: the cost of GPU collectives.",
        )
    )
    add(
        View(
            "analysis/cuda_api_time.cfg",
            f"""
Histogram thread x CUDA API call (type {API}): total time in ns.""",
            (events("CUDA API calls", API, open=False),),
            (time_per_value("CUDA API time"),),
            summary="Host time per CUDA call: synchronisation and copies dominate when the host waits.",
        )
    )
    add(
        View(
            "analysis/mpi_time.cfg",
            f"""
Histogram thread x MPI call (types {', '.join(map(str, MPI_CALLS))}): total time in ns.""",
            (events("MPI call", *MPI_CALLS, open=False),),
            (time_per_value("MPI time"),),
            summary="Time per MPI call per rank (column Outside MPI = the rest).",
        )
    )
    add(
        View(
            "analysis/nvtx_time.cfg",
            f"""
Histogram thread x innermost NVTX push/pop range of the default domain (type {NVTX_DEFAULT['pushpop'].id}):
total time in ns. {DOMAIN_NOTE}""",
            (
                events(
                    "NVTX push/pop (default domain)",
                    NVTX_DEFAULT["pushpop"].id,
                    stacked=True,
                    open=False,
                    labels=(NVTX_DEFAULT["pushpop"].label,),
                ),
            ),
            (time_per_value("NVTX range time"),),
            summary="Time per program phase (exclusive of nested ranges) per thread.",
        )
    )
    add(
        View(
            "analysis/launch_matrix.cfg",
            f"""
Communication matrix thread x thread: number of launch links (tags {', '.join(map(str, LAUNCH_TAGS))}),
from the CPU thread that made the call to the stream that ran the work.""",
            (Window("Launches", tags=LAUNCH_TAGS, open=False),),
            (time_per_value("Launches per thread and stream", statistic="#Sends"),),
            summary="Which CPU thread feeds which stream, and how many launches each.",
        )
    )
    add(
        View(
            "analysis/message_matrix.cfg",
            """
Communication matrix thread x thread: bytes sent, over every communication record (MPI messages
between rank threads, and launch links from CPU threads to GPU streams, whose copies carry bytes).""",
            (Window("Communications", open=False, comm_lines=True),),
            (time_per_value("Bytes sent per thread pair", statistic="Bytes sent"),),
            summary="Who sends how much to whom: the MPI communication pattern and its volume.",
        )
    )
    # POP device quantities (docs/pop-metrics.md): per process = per device with one GPU per rank.
    add(
        View(
            "analysis/device_useful.cfg",
            f"""
POP useful device time U: histogram task x (1 = any compute kernel (type {KERNEL}) running on a stream
of the process, 0 = none). Column 1 is the union over the process's streams (concurrent kernels count
once). Per process, which is per device when each rank uses one GPU.""",
            (inside("Compute kernel on any stream", KERNEL, level="task"),),
            (time_per_value("Useful device time (column 1)"),),
            summary="POP useful device time per process (column 1); its max and mean give Device LB.",
        )
    )
    add(
        View(
            "analysis/device_transfer_nonoverlapped.cfg",
            f"""
POP non-overlapped transfer time X: histogram task x (window 1 - window 2), window 1 = 1 while a memory
operation (type {MEMOP}) or NCCL kernel (type {NCCL_KERNEL}) runs on any stream of the process,
window 2 = 1 while a compute kernel (type {KERNEL}) does. Column 1 = transfer not hidden by kernels;
column -1 = kernels without transfers; column 0 = both or neither.""",
            transfer_windows("task", ""),
            (time_per_value("Non-overlapped transfer time (column 1)", window=3),),
            summary="POP device communication: transfer and NCCL time not hidden behind kernels (column 1).",
        )
    )
    add(
        View(
            "analysis/device_active.cfg",
            f"""
POP device active time A (useful + non-overlapped transfer): histogram task x (1 = a compute kernel,
memory operation or NCCL kernel (types {KERNEL}, {MEMOP}, {NCCL_KERNEL}) runs on some stream of the
process). Column 1 = A of the process; Device OrchE = max A / T.""",
            (inside("Any GPU activity", KERNEL, MEMOP, NCCL_KERNEL, level="task"),),
            (time_per_value("Device active time (column 1)"),),
            summary="POP device active time per process (column 1); Device OrchE = max active / T.",
        )
    )
    add(
        View(
            "analysis/device_idle.cfg",
            f"""
POP device idle time T - A: histogram task x (1 = no compute kernel, memory operation or NCCL kernel
(types {KERNEL}, {MEMOP}, {NCCL_KERNEL}) runs on any stream of the process). Column 1 = idle time
(Paraver leaves value 0 out of a histogram, so idle is 1 here: 1-Sign of the activity).""",
            (inside("No GPU activity", KERNEL, MEMOP, NCCL_KERNEL, level="task", top="1-Sign"),),
            (time_per_value("Device idle time (column 1)"),),
            summary="POP device idle time per process (column 1).",
        )
    )
    # The same per node: the union over every stream of every process of the host, which is per GPU
    # when a host has one GPU (several ranks sharing it: OUT.pop.json's per-GPU numbers).
    node_note = (
        "\nPer node (host): the union over the streams of every process on it, which is OUT.pop.json's"
        "\nper-GPU number when the host has one GPU, however many ranks share it."
    )
    add(
        View(
            "analysis/node_device_useful.cfg",
            f"""
POP useful device time U per node: histogram node x (1 = a compute kernel (type {KERNEL}) runs on some
stream of the node). Column 1 = U.{node_note}""",
            (inside("Compute kernel on any stream of the node", KERNEL, level="node"),),
            (time_per_value("Useful device time per node (column 1)"),),
            summary="POP useful device time per node = per GPU when each host has one (column 1).",
        )
    )
    add(
        View(
            "analysis/node_device_transfer_nonoverlapped.cfg",
            f"""
POP non-overlapped transfer time X per node: histogram node x (window 1 - window 2), window 1 = 1 while
a memory operation (type {MEMOP}) or NCCL kernel (type {NCCL_KERNEL}) runs on some stream of the node,
window 2 = 1 while a compute kernel (type {KERNEL}) does. Column 1 = X.{node_note}""",
            transfer_windows("node", " of the node"),
            (time_per_value("Non-overlapped transfer time per node (column 1)", window=3),),
            summary="POP device data movement per node = per GPU when each host has one (column 1).",
        )
    )
    add(
        View(
            "analysis/node_device_active.cfg",
            f"""
POP device active time A per node: histogram node x (1 = a compute kernel, memory operation or NCCL
kernel (types {KERNEL}, {MEMOP}, {NCCL_KERNEL}) runs on some stream of the node). Column 1 = A.{node_note}""",
            (inside("Any GPU activity on the node", KERNEL, MEMOP, NCCL_KERNEL, level="node"),),
            (time_per_value("Device active time per node (column 1)"),),
            summary="POP device active time per node = per GPU when each host has one (column 1).",
        )
    )
    add(
        View(
            "analysis/node_device_idle.cfg",
            f"""
POP device idle time T - A per node: histogram node x (1 = no compute kernel, memory operation or NCCL
kernel (types {KERNEL}, {MEMOP}, {NCCL_KERNEL}) runs on any stream of the node). Column 1 = idle time.{node_note}""",
            (inside("No GPU activity on the node", KERNEL, MEMOP, NCCL_KERNEL, level="node", top="1-Sign"),),
            (time_per_value("Device idle time per node (column 1)"),),
            summary="POP device idle time per node = per GPU when each host has one (column 1).",
        )
    )
    add(
        View(
            "analysis/gpu_activity.cfg",
            f"""
POP time per GPU: histogram thread x GPU activity (type {R.GPU_ACTIVITY.id}) on the 'Metrics GPU<id>' rows,
over every stream of every process on the GPU: column {R.GPU_USEFUL} = useful U (a compute kernel runs),
{R.GPU_DATA_MOVEMENT} = data movement X (only memory operations or NCCL kernels), {R.GPU_IDLE} = idle; active A = U + X.
The rows exist when processes and GPUs are not one to one (a GPU shared by ranks, or a rank using several
GPUs); otherwise device_*.cfg (per process = per GPU) give these numbers.""",
            (events("GPU activity (all streams and processes)", R.GPU_ACTIVITY.id, open=False, maximum_y=3.0),),
            (time_per_value("Time per GPU activity (1 useful, 2 data movement, 3 idle)"),),
            summary="POP per-GPU useful (1), data movement (2) and idle (3) time, whoever shares the GPU.",
        )
    )
    add(
        View(
            "analysis/host_useful.cfg",
            f"""
POP useful host time: histogram thread x (window 1 - window 2), window 1 = 1 in state Running
(state {R.RUNNING}), window 2 = 1 inside a CUDA API call (type {API}). Column 1 = Running outside CUDA calls
(useful, an upper bound as in BasicAnalysis); MPI calls are not Running. Read the CPU thread rows.""",
            (
                Window("Running", "Useful", open=False, maximum_y=1.0),
                inside("In a CUDA API call", API),
                Window("Useful host time", operation="substract", parents=(1, 2), maximum_y=1.0),
            ),
            (time_per_value("Useful host time (column 1)", window=3),),
            summary="POP useful host time per CPU thread (column 1).",
        )
    )
    add(
        View(
            "analysis/host_cuda_api.cfg",
            f"""
POP device offload on the host: histogram thread x (1 = inside a CUDA API call, type {API}).""",
            (inside("In a CUDA API call", API),),
            (time_per_value("CUDA API time (column 1)"),),
            summary="Host time in the CUDA runtime/driver per thread (column 1): offload cost.",
        )
    )
    add(
        View(
            "analysis/host_mpi.cfg",
            f"""
POP MPI time: histogram thread x (1 = inside an MPI call, types {', '.join(map(str, MPI_CALLS))}).""",
            (inside("In an MPI call", *MPI_CALLS),),
            (time_per_value("MPI time (column 1)"),),
            summary="Time in MPI per thread (column 1); T minus it is OutsideMPI for MPI PE and LB.",
        )
    )
    return tuple(v)


VIEWS: tuple[View, ...] = _views()

# --- Views that depend on one trace (ids allocated per trace) -----------------------------------

# GPU metric families: a metric belongs to a family when its name matches (Nsight Systems names vary
# with the GPU and the version, e.g. "SM Active" / "SMs Active [Throughput %]").
METRIC_FAMILIES = {
    "sm_active": ("SM active", re.compile(r"(?i)^SMs? Active")),
    "sm_issue": ("SM issue", re.compile(r"(?i)^SMs? Issue")),
    "tensor_active": ("Tensor active", re.compile(r"(?i)Tensor.*Active")),
    "dram_bandwidth": ("DRAM bandwidth", re.compile(r"(?i)^DRAM .*Bandwidth")),
}
_PCF_TYPE = re.compile(r"^\s*\d+\s+(\d+)\s+(.*?)\s*$")


def pcf_types(pcf_text: str) -> dict[int, str]:
    """Event type id -> label, from the EVENT_TYPE blocks of a .pcf."""
    types: dict[int, str] = {}
    in_types = False
    for line in pcf_text.splitlines():
        if line.strip() == "EVENT_TYPE":
            in_types = True
            continue
        if in_types:
            m = _PCF_TYPE.match(line)
            if m:
                types[int(m.group(1))] = m.group(2)
                continue
            in_types = False
    return types


def nvtx_domains(types: dict[int, str]) -> dict[int, str]:
    """Domain index -> domain name ('' = default domain) of the NVTX domains in a trace's .pcf."""
    prefix, suffix = R.NVTX_LABELS["pushpop"].split("{}")
    out = {}
    for tid, label in types.items():
        k, off = divmod(tid - R.NVTX_BASE, R.NVTX_DOMAIN_STRIDE)
        if k >= 0 and off == R.NVTX_OFFSETS["pushpop"] and label.startswith(prefix) and label.endswith(suffix):
            name = label[len(prefix) : len(label) - len(suffix) if suffix else None]
            out[k] = "" if name == R.NVTX_DEFAULT_DOMAIN_NAME else name
    return dict(sorted(out.items()))


def gpu_metrics(types: dict[int, str]) -> dict[int, str]:
    """Type id -> metric name of the GPU metrics in a trace's .pcf."""
    prefix = R.GPU_METRIC_LABEL.split("{}")[0]
    return {
        t: lab[len(prefix) :]
        for t, lab in sorted(types.items())
        if R.GPU_METRIC_BASE <= t < R.GPU_METRIC_BASE + R.GPU_METRIC_MAX and lab.startswith(prefix)
    }


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_").lower()[:40] or "domain"


def trace_views(pcf_text: str) -> tuple[View, ...]:
    """Views for the NVTX domains and GPU metric families of one trace (ids from its .pcf)."""
    types = pcf_types(pcf_text)
    views = []
    for k, domain in nvtx_domains(types).items():
        t = R.nvtx_types(k, domain)
        name = domain or R.NVTX_DEFAULT_DOMAIN_NAME
        safe = name.replace("<", "(").replace(">", ")")
        views.append(
            View(
                f"nvtx/nvtx_{k}_{_slug(name)}.cfg",
                f"""
NVTX domain '{safe}' (domain index {k}, types {t['pushpop'].id}..{t['gpu'].id}) of this trace: push/pop ranges
(innermost, Stacked Val), start/end ranges, nesting level, ranges projected on the GPU work they launched.
{DOMAIN_NOTE}""",
                _nvtx_windows(t, safe, labelled=True),
                summary=f"NVTX domain '{safe}' on CPU threads and GPU streams.",
            )
        )
    if R.EXECUTING_CPU.id in types:
        views.append(
            View(
                "basics/states_from_the_scheduler.cfg",
                f"""
Thread state of this trace, whose CPU threads have the scheduler's data (SCHED_EVENTS): Running only while
on a CPU, {R.STATES[R.OFF_CPU_STATE]} when descheduled outside MPI and CUDA synchronisation calls (inside them:
the call's state); a thread without scheduling data is Running from its first to its last event.
Window 2: the CPU each thread runs on (type {R.EXECUTING_CPU.id}, CPU number + 1; 0 off CPU).""",
                (Window("States"), events("Executing CPU", R.EXECUTING_CPU.id, open=False)),
                summary="States from the scheduler: where threads wait off CPU, and on which CPU they run.",
            )
        )
    metrics = gpu_metrics(types)
    for key, (title, pattern) in METRIC_FAMILIES.items():
        chosen = {t: n for t, n in metrics.items() if pattern.search(n)}
        if not chosen:
            continue
        windows = tuple(
            events(f"GPU metric: {n}", t, gradient=True, maximum_y=100.0, labels=(types[t],)) for t, n in chosen.items()
        )
        views.append(
            View(
                f"hwcounters/gpu_{key}.cfg",
                f"""
GPU metric family '{title}' of this trace, one timeline per metric ({', '.join(chosen.values())}),
drawn on the 'GPU(id) metrics' rows. Metric types are {R.GPU_METRIC_BASE} + index in the trace's sorted metric names,
so this view was generated for this trace (nsys2prv --cfgs).""",
                windows,
                summary=f"{title} over time on each GPU.",
            )
        )
    return tuple(views)


# --- Files ---------------------------------------------------------------------------------------


def shipped_dir():
    """The packaged cfgs/ folder (an importlib.resources Traversable)."""
    return resources.files("nsys2prv") / "cfgs"


def write_views(views, dest: Path) -> list[Path]:
    out = []
    for view in views:
        p = dest / view.path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(render(view), encoding="utf-8")
        out.append(p)
    return out


def _copy_tree(src, dest: Path, out: list[Path]) -> None:
    for item in sorted(src.iterdir(), key=lambda i: i.name):
        if item.is_dir():
            _copy_tree(item, dest / item.name, out)
        elif item.name.endswith(".cfg"):
            (dest / item.name).parent.mkdir(parents=True, exist_ok=True)
            (dest / item.name).write_bytes(item.read_bytes())
            out.append(dest / item.name)


def _data_of(type_id: int) -> frozenset[str]:
    """The summary counts (data kinds, translators, links) whose records carry event type ``type_id``;
    empty: not known here (a view using it is always installed)."""
    gpu = frozenset({"kernels", "nccl_kernels", "memcpy", "memset"})
    if type_id == API:
        return frozenset({"cuda_api"})
    if type_id in (KERNEL, KERNEL_FULL):
        return frozenset({"kernels"})
    if type_id == NCCL_KERNEL:
        return frozenset({"nccl_kernels"})
    if type_id in (MEMOP, MEMOP_SIZE):
        return frozenset({"memcpy", "memset"})
    if type_id == R.GPU_ACTIVITY.id:
        return gpu
    if type_id in R.MPI_TYPES or 50_100_000 < type_id < 50_200_000:
        return frozenset({"mpi"})
    if type_id == R.OSRT.id:
        return frozenset({"osrt"})
    if type_id in {t.id for t in R.SAMPLED.values()}:
        return frozenset({"samples"})
    if type_id == R.NCCL_RANGE.id:
        return frozenset({"nccl"})
    if type_id == R.NCCL_OPERATION.id or type_id in {t.id for t in R.NCCL_FIELDS.values()}:
        return frozenset({"nccl", "nccl_payloads"})
    if type_id == R.nvtx_types(0, "")["gpu"].id:
        return frozenset({"nvtx_on_gpu"})
    if R.NVTX_BASE <= type_id < R.NVTX_BASE + R.NVTX_DOMAIN_STRIDE * 10000:
        return frozenset({"nvtx"})
    return frozenset()


def needs(view: View) -> frozenset[str] | None:
    """The data a view shows, as summary count names (any one of them suffices); None: it shows
    something in any trace (states, MPI message lines) or uses types not classified here."""
    need: set[str] = set()
    for w in view.windows:
        for t in w.types:
            d = _data_of(t)
            if not d:
                return None
            need |= d
        if set(w.tags) & set(LAUNCH_TAGS):
            need.add("launch_links")
    if "samples" in need:  # a view of the samples shows nothing without them, whatever else it shows
        return frozenset({"samples"})
    return frozenset(need) or None


def selected(present: set[str] | None) -> list[str]:
    """Paths of the shipped views worth installing for a trace whose data are ``present`` (summary
    count names with records; None: every view): a CPU-only trace gets no kernel, NCCL or device view."""
    return [v.path for v in VIEWS if present is None or (n := needs(v)) is None or n & present]


def install_views(dest: Path, pcf: Path | None = None, present: set[str] | None = None) -> list[Path]:
    """Copy the shipped views into ``dest`` (given ``present``, the trace's data: only those that show
    something, ``selected``) and, given a trace's .pcf, render its own views there."""
    dest.mkdir(parents=True, exist_ok=True)
    out: list[Path] = []
    if present is None:
        _copy_tree(shipped_dir(), dest, out)
    else:
        src = shipped_dir()
        for rel in selected(present):
            item = src.joinpath(*rel.split("/"))
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            (dest / rel).write_bytes(item.read_bytes())
            out.append(dest / rel)
    if pcf is not None:
        out += write_views(trace_views(pcf.read_text(encoding="utf-8", errors="replace")), dest)
    return out


def _source_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "cfgs"


def stale_files(root: Path | None = None) -> list[str]:
    """Shipped files that differ from VIEWS (missing, changed or extra)."""
    root = root or _source_dir()
    expected = {v.path: render(v) for v in VIEWS}
    have = {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in root.rglob("*.cfg")}
    return sorted(k for k in expected.keys() | have.keys() if expected.get(k) != have.get(k))


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["regenerate"]:
        root = _source_dir()
        if root.exists():
            shutil.rmtree(root)
        for p in write_views(VIEWS, root):
            print(p)
        return 0
    if args[:1] == ["check"]:
        stale = stale_files()
        for s in stale:
            print(f"stale: {s}")
        return 1 if stale else 0
    if args[:1] == ["render"] and len(args) == 3:
        base = Path(args[1].removesuffix(".prv").removesuffix(".pcf"))
        for p in install_views(Path(args[2]), base.with_name(base.name + ".pcf")):
            print(p)
        return 0
    print(__doc__.split("\n\n")[-1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
