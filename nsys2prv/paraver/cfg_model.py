"""What a Paraver view is, in Python: windows (timelines), 2D analyzers (histograms) and the view
file that holds them, plus the building blocks the view entries (``views_shipped.py``) are made of.
Every event type, state or tag comes from ``core/registry.py``; ``cfg_render.py`` writes the text."""

from __future__ import annotations

from dataclasses import dataclass

from nsys2prv.core import registry as R

# Statistics of a histogram that count communications (paraver-kernel histogramstatistic.cpp); the
# vocabulary the test parser accepts is in tests/cfg_parser.py.
COMM_STATISTICS = frozenset({"#Sends", "#Receives", "Bytes sent"})
# Time units of a window (paraver-kernel paraverlabels.h): the timeline's ruler and the histograms of
# time use them.  Microseconds (ns gives 10-digit numbers), but for the POP views, which stay in ns so
# that paramedir's numbers equal OUT.pop.json's to the ns (scripts/check_views.py).
US, NS = "Microseconds", "Nanoseconds"


@dataclass(frozen=True)
class Window:
    """A timeline.  Single: a thread function over the event types in ``types`` (empty: none is
    filtered, i.e. a state or communication view); derived: ``operation`` of two earlier windows."""

    name: str
    thread: str = "State As Is"
    types: tuple[int, ...] = ()
    values: tuple[int, ...] = ()  # evt_value filter (values of a type with a fixed value list)
    tags: tuple[int, ...] = ()  # communication tag filter
    tag_function: str = "="  # "=": only these tags; "!=": every tag but these (Paraver's filter functions)
    compose_thread: str = "As Is"
    level: str = "thread"
    task: str = "Adding"  # aggregation at task level (when level is task)
    node: str = "Adding"  # aggregation at node level (when level is node: over its CPUs,
    # one per thread: the threads of the node's tasks)
    comm_lines: bool = False
    gradient: bool = False  # numeric values: gradient colours instead of one colour per value
    open: bool = True
    maximum_y: float | None = None  # None: from the values the window can show (cfg_render.y_range)
    operation: str | None = None  # derived window: operation over ``parents``
    parents: tuple[int, int] | None = None
    labels: tuple[str, ...] | None = None  # evt_type labels; None: from the registry (or none, if unknown)
    top: str = "As Is"  # topcompose1: a function of the window's final value
    # the kinds of rows shown (cfg_render.ROW_KINDS: "cpu", "stream", "metric"; empty: every row), in a
    # view rendered for a trace (its .row names the rows): e.g. no metric row in a states view
    rows: tuple[str, ...] = ()


@dataclass(frozen=True)
class Histogram:
    name: str
    control: int  # 1-based window numbers in the file
    data: int
    statistic: str = "Time"
    hide_cols: bool | None = None  # None: hide empty columns but in a communication matrix


@dataclass(frozen=True)
class View:
    path: str  # folder/name.cfg
    description: str
    windows: tuple[Window, ...]
    histograms: tuple[Histogram, ...] = ()
    summary: str = ""  # one line for the README: what to look for
    units: str = US


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
COLLECTIVE = R.extrae_mpi.MPITYPE_COLLECTIVE
NVTX_DEFAULT = R.nvtx_types(0, "")
NVTX_INDEX1 = R.nvtx_types(1, "?")
LAUNCH_TAGS = tuple(sorted(R.COMM_TAGS))
DEFAULT_DOMAIN_LABEL = R.NVTX_DEFAULT_DOMAIN_NAME
NCCL = R.NCCL_FIELDS

DOMAIN_NOTE = (
    "NVTX domains are numbered in sorted name order over the whole trace, the default domain "
    f"(if present) first: domain index k has types {R.NVTX_BASE} + {R.NVTX_DOMAIN_STRIDE}*k + offset. "
    "The .pcf lists them as '" + R.NVTX_LABELS["pushpop"].format("(domain)") + "'."
)
NODE_NOTE = (
    "\nPer node (host): the union over the streams of every process on it, which is OUT.pop.json's"
    "\nper-GPU number when the host has one GPU, however many ranks share it."
)


def nvtx_windows(types: dict[str, R.EventType], domain: str, labelled: bool) -> tuple[Window, ...]:
    """Push/pop (innermost), start/end, nesting level (one colour per level) and on-GPU windows of a domain."""
    lab = (lambda k: (types[k].label,)) if labelled else (lambda k: None)
    return (
        events(f"NVTX push/pop ({domain})", types["pushpop"].id, stacked=True, labels=lab("pushpop")),
        events(f"NVTX start/end ({domain})", types["startend"].id, labels=lab("startend")),
        events(f"NVTX nesting level ({domain})", types["depth"].id, labels=lab("depth")),
        events(f"NVTX on GPU ({domain})", types["gpu"].id, labels=lab("gpu")),
    )
