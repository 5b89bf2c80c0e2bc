"""The views whose ids depend on one trace (NVTX domains, GPU metrics, scheduler states), read from
its .pcf, what a view needs to show something, and what a rendered-for-a-trace view knows of it
(``trace_info``: the .pcf's values per type, the .row's rows per level)."""

from __future__ import annotations

import gzip
import re
from dataclasses import replace
from pathlib import Path

from nsys2prv.core import registry as R
from nsys2prv.paraver.cfg_model import (
    API,
    DOMAIN_NOTE,
    KERNEL,
    KERNEL_FULL,
    LAUNCH_TAGS,
    MEMOP,
    MEMOP_SIZE,
    NCCL_KERNEL,
    View,
    Window,
    events,
    nvtx_windows,
)
from nsys2prv.paraver.cfg_render import TraceInfo
from nsys2prv.paraver.views_shipped import STATE_ROWS, VIEWS

# GPU metric families: a metric belongs to a family when its name matches (Nsight Systems names vary
# with the GPU and the version, e.g. "SM Active" / "SMs Active [Throughput %]").
# Collectives with sizes come from the exports' MPI collectives table (MPI as NVTX ranges has none and
# writes size 0): a run whose reports have rows there counts as having this (``selected``).
COLLECTIVES_TABLE, COLLECTIVE_SIZES = "MPI_COLLECTIVES_EVENTS", "mpi_collective_sizes"
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
    """Domain index -> domain name ('' = default domain) of the NVTX domains in a trace's .pcf (any
    of a domain's types names it: the .pcf declares only the types a trace's records use)."""
    kind_of = {off: kind for kind, off in R.NVTX_OFFSETS.items()}
    out: dict[int, str] = {}
    for tid, label in types.items():
        k, off = divmod(tid - R.NVTX_BASE, R.NVTX_DOMAIN_STRIDE)
        if k < 0 or tid >= R.NVTX_BASE + R.NVTX_DOMAIN_STRIDE * 10000 or off not in kind_of:
            continue
        prefix, suffix = R.NVTX_LABELS[kind_of[off]].split("{}")
        if label.startswith(prefix) and label.endswith(suffix):
            name = label[len(prefix) : len(label) - len(suffix) if suffix else None]
            out.setdefault(k, "" if name == R.NVTX_DEFAULT_DOMAIN_NAME else name)
    return dict(sorted(out.items()))


def fit(view: View, declared: set[int]) -> View | None:
    """``view`` with its event filters narrowed to the types the trace declares, so that Paraver has
    no filter event the trace lacks to warn about; a window left without types is dropped when the
    view's windows are independent timelines, else the view shows nothing here (None)."""
    independent = not view.histograms and all(w.operation is None for w in view.windows)
    windows = []
    for w in view.windows:
        keep = [i for i, t in enumerate(w.types) if t in declared]
        if len(keep) == len(w.types):
            windows.append(w)
        elif keep:
            labels = tuple(w.labels[i] for i in keep) if w.labels is not None else None
            windows.append(replace(w, types=tuple(w.types[i] for i in keep), labels=labels))
        elif not independent:
            return None
    return replace(view, windows=tuple(windows)) if windows else None


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
                nvtx_windows(t, safe, labelled=True),
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
                (Window("States", rows=STATE_ROWS), events("Executing CPU", R.EXECUTING_CPU.id, open=False)),
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


def pcf_value_names(pcf_text: str) -> dict[int, dict[int, str]]:
    """Event type id -> {value: name} its .pcf block lists (the types of one block share them)."""
    out: dict[int, dict[int, str]] = {}
    block: list[int] = []
    values: dict[int, str] = {}
    section = ""
    for line in [*pcf_text.splitlines(), "EVENT_TYPE"]:
        s = line.strip()
        if s == "EVENT_TYPE":
            out.update((t, values) for t in block)
            block, values, section = [], {}, "types"
        elif s == "VALUES" and section == "types":
            section = "values"
        elif not s:
            section = ""
        elif section == "types" and (m := _PCF_TYPE.match(line)):
            block.append(int(m.group(1)))
        elif section == "values" and (v := s.split(maxsplit=1))[0].lstrip("-").isdigit():
            values[int(v[0])] = v[1] if len(v) > 1 else ""
    return out


def pcf_values(pcf_text: str) -> dict[int, frozenset[int]]:
    """Event type id -> the values its .pcf block lists (the types of one block share them)."""
    return {t: frozenset(names) for t, names in pcf_value_names(pcf_text).items()}


def row_counts(row_text: str) -> dict[str, int]:
    """Level (thread, task, node) -> number of rows, from a .row file."""
    out = {}
    for m in re.finditer(r"^LEVEL (\w+) SIZE (\d+)", row_text, re.M):
        out[m.group(1).lower()] = int(m.group(2))
    return out


_HEADER_TASKS = re.compile(r"_ns:\d+\([^)]*\):1:\d+\(([\d:,]*)\)")
_HEADER_DURATION = re.compile(r"^#Paraver \([^)]*\):(\d+)(?:_ns)?:")


def trace_duration(header: str) -> int:
    """The trace's duration (ns) from its .prv header (0: not known)."""
    m = _HEADER_DURATION.match(header)
    return int(m.group(1)) if m else 0


def task_rows(header: str, row_text: str) -> tuple[tuple[str, ...], ...]:
    """Per task, its threads' labels: the thread counts of the .prv header's application
    (``T(th1:node1,...)``), the labels of the .row's THREAD block; () when they do not agree."""
    m = _HEADER_TASKS.search(header.splitlines()[0] if header else "")
    block = re.search(r"^LEVEL THREAD SIZE (\d+)\n", row_text, re.M)
    if not m or not block:
        return ()
    counts = [int(x.split(":")[0]) for x in m.group(1).split(",") if x]
    labels = row_text[block.end() :].splitlines()[: int(block.group(1))]
    if sum(counts) != len(labels):
        return ()
    starts = [sum(counts[:i]) for i in range(len(counts))]
    return tuple(tuple(labels[a : a + n]) for a, n in zip(starts, counts))


def _first_line(prv: Path) -> str:
    for p, opener in ((prv, open), (prv.with_name(prv.name + ".gz"), gzip.open)):
        if p.exists():
            with opener(p, "rt", encoding="utf-8", errors="replace") as fh:
                return fh.readline()
    return ""


def trace_info(pcf: Path) -> TraceInfo:
    """What views rendered for the trace of ``pcf`` know of it (its .row and .prv beside it, if any)."""
    row = pcf.with_suffix(".row")
    row_text = row.read_text(encoding="utf-8", errors="replace") if row.exists() else ""
    names = pcf_value_names(pcf.read_text(encoding="utf-8", errors="replace"))
    header = _first_line(pcf.with_suffix(".prv"))
    return TraceInfo(
        {t: frozenset(v) for t, v in names.items()},
        row_counts(row_text),
        task_rows(header, row_text),
        names,
        trace_duration(header),
    )


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
    if type_id in (R.MPI_SEND_SIZE.id, R.MPI_RECV_SIZE.id):
        return frozenset({COLLECTIVE_SIZES})
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
        if w.tag_function == "=" and set(w.tags) & set(LAUNCH_TAGS):  # ("!=": every message but the links)
            need.add("launch_links")
    for alone in ("samples", COLLECTIVE_SIZES):  # a view of these shows nothing without them, whatever else
        if alone in need:
            return frozenset({alone})
    return frozenset(need) or None


def selected(present: set[str] | None) -> list[str]:
    """Paths of the shipped views worth installing for a trace whose data are ``present`` (summary
    count names with records; None: every view): a CPU-only trace gets no kernel, NCCL or device view."""
    return [v.path for v in VIEWS if present is None or (n := needs(v)) is None or n & present]


# The host POP views and the calls their numbers depend on (summary count names): OUT.pop.json's host
# tree counts the time in CUDA API and MPI calls whatever -t translates, a view only what the trace holds.
HOST_INPUTS = {
    "analysis/host_useful.cfg": ("cuda_api", "mpi"),
    "analysis/host_cuda_api.cfg": ("cuda_api",),
    "analysis/host_mpi.cfg": ("mpi",),
}
POP_HOST_TIMES = {"cuda_api": ("offload_time_ns", "CUDA API"), "mpi": ("mpi_time_ns", "MPI")}


def host_views_left_out(present: set[str], pop_host: dict) -> dict[str, str]:
    """The host POP views that cannot reproduce OUT.pop.json on a trace whose data are ``present``
    (summary count names with records) -> why: POP counted time in calls the trace does not hold (-t
    left them out; e.g. an MPI rank converted with -t nvtx, whose useful time would include its MPI
    calls)."""
    missing = {}
    for kind, (key, what) in POP_HOST_TIMES.items():
        per = {p: int(t) for p, t in (pop_host.get(key) or {}).items()}
        if sum(per.values()) > 0 and kind not in present:
            most = max(per, key=lambda p: per[p])
            missing[kind] = (
                f"OUT.pop.json counts {sum(per.values()):,} ns in {what} calls ({most}: {per[most]:,} ns), "
                f"the trace holds no {what} call (-t)"
            )
    return {
        path: "; ".join(missing[k] for k in kinds if k in missing)
        for path, kinds in HOST_INPUTS.items()
        if any(k in missing for k in kinds)
    }
