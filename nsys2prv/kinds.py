"""Every data kind and every ``-t`` category, declared once.

A *data kind* is one normalised table: the nsys reader that builds it, the ``-t`` categories that
enable it, the side of the resource model its rows live on, the translators that turn it into
Paraver records (each counted under a summary name) and the fixed event types they write.  A
*category* is what the user names with ``-t``: a description, its aliases (BSC nsys2prv 0.5.8
names and short forms), whether the default (no ``-t``) includes it, and the export tables reported as not
translated when it is off.  *Links* join the tables of one report (host call -> GPU activity).

Every lookup the pipeline, the command line and the summary use (readers, translators, category
names and aliases, model sides, optional tables) is built from these tuples; ``tests/test_kinds.py``
fails when a kind or a category is half-declared.

Adding a data kind: write its reader in ``nsys/readers/`` (a module with ``READER``), point a
translator at it (often a generic one such as ``host.calls``) and add one ``Kind`` below.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pandas as pd

from nsys2prv.core import registry as R
from nsys2prv.core.categories import CATEGORIES, GROUP_ALIASES, Category
from nsys2prv.nsys.readers import (
    cuda_api,
    gpu_metrics,
    graphs,
    kernels,
    memops,
    mpi,
    nccl,
    nvtx,
    openacc,
    osrt,
    samples,
    sched,
)
from nsys2prv.nsys.readers.base import Reader
from nsys2prv.translate import cpu_side, cuda, gpu_links, host
from nsys2prv.translate import gpu_metrics as metrics_tr
from nsys2prv.translate import graphs as graph_tr
from nsys2prv.translate import openacc as openacc_tr
from nsys2prv.translate.context import Context
from nsys2prv.translate.records import Translation

CPU, GPU, METRIC = "cpu", "gpu", "metric"  # model sides: CPU threads (tid), GPU streams (gpid/device/stream), GPU rows


@dataclass(frozen=True)
class Translator:
    fn: Callable[[pd.DataFrame, Context, Translation], int]  # returns the rows translated
    count: str = ""  # summary name (default: the kind's name)


@dataclass(frozen=True)
class Kind:
    name: str  # the normalised table
    reader: Reader
    categories: tuple[str, ...]  # -t categories that enable it (any of them)
    side: str  # CPU, GPU or METRIC
    translators: tuple[Translator, ...]
    types: tuple[R.EventType, ...] = ()  # fixed event types its translators write
    doc: str = ""
    # its reader is row by row (no row depends on another: no nesting, no pairing), so a large
    # table is read a batch of rows at a time (pipeline/stages.py read_each)
    batched: bool = False


@dataclass(frozen=True)
class Link:
    """Records that join two tables of one report; counted only when they have something to say."""

    name: str
    fn: Callable[[Context, Translation], int]
    types: tuple[R.EventType, ...] = ()


KINDS: tuple[Kind, ...] = (
    Kind(
        "cuda_api",
        cuda_api.READER,
        ("cuda_api",),
        CPU,
        (Translator(cuda.cuda_api),),
        (R.CUDA_API, R.CORRELATION, *R.CALLER.values()),
        doc="CUDA runtime/driver API calls",  # (with their call stacks as caller levels, where the report has them)
        batched=True,
    ),
    Kind(
        "kernels",
        kernels.READER,
        ("gpu",),
        GPU,
        (Translator(cuda.kernels), Translator(cuda.nccl_kernels, "nccl_kernels")),
        (R.CUDA_KERNEL, R.CUDA_KERNEL_FULL, R.NCCL_KERNEL, *R.KERNEL_PARAMS.values(), R.GRAPH_NODE),
        doc="CUDA kernels",
        batched=True,
    ),
    Kind(
        "memcpy",
        memops.MEMCPY_READER,
        ("gpu",),
        GPU,
        (Translator(cuda.memcpy),),
        (R.MEMOP, R.MEMOP_SIZE),
        doc="CUDA memory copies",
        batched=True,
    ),
    Kind(
        "memset",
        memops.MEMSET_READER,
        ("gpu",),
        GPU,
        (Translator(cuda.memset),),
        (R.MEMOP, R.MEMOP_SIZE),
        doc="CUDA memsets",
        batched=True,
    ),
    Kind(
        "nvtx",
        nvtx.READER,
        ("nvtx_pushpop", "nvtx_startend"),
        CPU,
        (Translator(host.nvtx),),
        doc="NVTX ranges and marks (all domains but MPI/NCCL; event types per domain)",
    ),
    Kind(
        "nccl",
        nccl.READER,
        ("nccl",),
        CPU,
        (Translator(host.nccl_ranges),),
        (R.NCCL_RANGE,),
        doc="NVTX ranges of the NCCL domain, with their payloads",
    ),
    Kind(
        "mpi",
        mpi.READER,
        ("mpi",),
        CPU,
        (Translator(host.mpi),),
        (*R.MPI_TYPES.values(), R.MPI_SEND_SIZE, R.MPI_RECV_SIZE, R.MPI_ROOT, R.MPI_COMM, R.APPLICATION),
        doc="MPI calls",
    ),
    Kind(
        "osrt",
        osrt.READER,
        ("osrt",),
        CPU,
        (Translator(host.osrt),),
        (R.OSRT, *R.CALLER.values()),
        doc="OS runtime library calls",  # (with their call stacks as caller levels, where the report has them)
        batched=True,
    ),
    Kind(
        "sched",
        sched.READER,
        ("sched",),
        CPU,
        (Translator(cpu_side.sched),),
        (R.EXECUTING_CPU,),
        doc="thread scheduling: states from the scheduler (Running only on a CPU), the CPU as an event",
    ),
    Kind(
        "samples",
        samples.READER,
        ("samples",),
        CPU,
        (Translator(cpu_side.samples),),
        (*R.SAMPLED.values(), R.SAMPLED_KERNEL),
        doc="CPU samples with their call stacks (sampled function, callers, kernel-mode frame)",
        batched=True,  # (a rowid range of samples at a time, each with its stacks: bounded memory)
    ),
    Kind(
        "gpu_metrics",
        gpu_metrics.READER,
        ("gpu_metrics",),
        METRIC,
        (Translator(metrics_tr.gpu_metrics),),
        doc="GPU metric samples (event types per metric name)",
    ),
    Kind(
        "graph_exec",
        graphs.EXEC_READER,
        ("graphs",),
        GPU,
        (Translator(graph_tr.graph_exec),),
        (R.GRAPH_EXEC, R.GRAPH_ID, R.GRAPH_EXEC_ID),
        doc="CUDA graph executions on streams",
    ),
    Kind(
        "graph_api",
        graphs.API_READER,
        ("graphs",),
        CPU,
        (Translator(graph_tr.graph_api),),
        (R.GRAPH_API, R.GRAPH_ID, R.GRAPH_NODE),
        doc="CUDA graph API events",
    ),
    Kind(
        "openacc",
        openacc.READER,
        ("openacc",),
        CPU,
        (Translator(openacc_tr.openacc),),
        (*R.OPENACC_TABLE_TYPES.values(), R.OPENACC_REGION, R.OPENACC_FUNCTION, R.OPENACC_DATA_SIZE),
        doc="OpenACC data, launch and other events",
    ),
)
LINKS: tuple[Link, ...] = (
    Link("launch_links", cuda.launch_links),
    Link("nccl_payloads", gpu_links.nccl_payloads, (R.NCCL_OPERATION, *R.NCCL_FIELDS.values())),
    Link("nvtx_on_gpu", gpu_links.nvtx_on_gpu),
)
# Records made from the run as a whole rather than from one report's tables: the GPU rows' activity,
# from the POP device intervals of every process on the GPU (pipeline/gpu_rows.py).
DERIVED_TYPES: tuple[R.EventType, ...] = (R.GPU_ACTIVITY,)
# Summary names that appear only when they have rows or records (a link or a split with nothing to do).
OPTIONAL_COUNTS = ("nccl_kernels", *(link.name for link in LINKS))

# ---------------------------------------------------------------------------------------------------
# The fate of every export table (OUT.summary.json "tables"): a table that describes others (names,
# enumerations, devices, the capture, the export) is metadata and not listed; every other non-empty
# table is listed with its rows, each row read by a kind (translated, or left out by -t) or not
# translated with the reason declared here.
METADATA_PREFIXES = ("ENUM_", "TARGET_INFO_", "META_DATA_", "sqlite_")
METADATA_TABLES = frozenset(
    {
        "StringIds",
        "ThreadNames",
        "ProcessStreams",
        "PROCESSES",
        "EXPORT_META_DATA",
        "ANALYSIS_DETAILS",
        "ANALYSIS_FILE",
        "UnwindMethodType",
        "MPI_RANKS",
        "MPI_COMMUNICATORS",
        "NVTX_PAYLOAD_SCHEMAS",
        "NVTX_PAYLOAD_SCHEMA_ENTRIES",
        "NVTX_PAYLOAD_ENUMS",
        "NVTX_PAYLOAD_ENUM_ENTRIES",
        "GENERIC_EVENT_SOURCES",
        "GENERIC_EVENT_TYPES",
        "OSRT_FILE_ACCESS_DESCRIPTORS_NAMES",
        "CUDA_CALLCHAINS_NAMES",
    }
)
NOT_THIS_VERSION = "not translated by this version of nsys2prv"
UNTRANSLATED_TABLES = {  # table -> why its rows are not translated (tables read by no kind)
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": "CUDA synchronization activities: not translated by this version of "
    "nsys2prv (the API calls that wait are)",
    "CUPTI_ACTIVITY_KIND_CUDA_EVENT": "CUDA event records (cudaEventRecord on streams): " + NOT_THIS_VERSION,
    "CUPTI_ACTIVITY_KIND_OVERHEAD": "CUPTI's own overhead: " + NOT_THIS_VERSION,
    "PROFILER_OVERHEAD": "Nsight Systems' own overhead: " + NOT_THIS_VERSION,
    "DIAGNOSTIC_EVENT": "Nsight Systems diagnostic messages (warnings and errors are shown as capture warnings)",
    "OSRT_FILE_ACCESS_EVENTS": "OS runtime file accesses: " + NOT_THIS_VERSION,
    "OSRT_FILE_ACCESS_DESCRIPTORS": "file descriptors of the OS runtime file accesses: " + NOT_THIS_VERSION,
    "CUDA_GPU_MEMORY_USAGE_EVENTS": "CUDA memory allocations and frees: " + NOT_THIS_VERSION,
    "CUDA_GPU_MEMORY_POOL_EVENTS": "CUDA memory pool events: " + NOT_THIS_VERSION,
    "CUDA_UM_CPU_PAGE_FAULT_EVENTS": "unified memory CPU page faults: " + NOT_THIS_VERSION,
    "CUDA_UM_GPU_PAGE_FAULT_EVENTS": "unified memory GPU page faults: " + NOT_THIS_VERSION,
}
# NVTX_EVENTS rows by class (nsys.readers.nvtx.row_classes): the kind that reads them, or why none does.
NVTX_TABLE = "NVTX_EVENTS"
NVTX_CLASS_KINDS = {"ranges": "nvtx", "nccl": "nccl", "mpi": "mpi"}
NVTX_CLASS_REASONS = {
    "names": "NVTX domain, category and thread names (they name ranges, threads and ranks: no record of their own)",
    "mpi_marks": "NVTX marks in the MPI domain: " + NOT_THIS_VERSION,
    "other": "NVTX event type not translated by this version of nsys2prv",
}


# Event types a .pcf lists only when a report of the trace has the table they come from, read by a
# translated kind (registry.CPU_SIDE_TYPES): export table -> (kind, its types).
TABLE_TYPES: dict[str, tuple[str, tuple[R.EventType, ...]]] = {
    "SCHED_EVENTS": ("sched", (R.EXECUTING_CPU,)),
    "COMPOSITE_EVENTS": ("samples", (*R.SAMPLED.values(), R.SAMPLED_KERNEL)),
    "OSRT_CALLCHAINS": ("osrt", tuple(R.CALLER.values())),
    "CUDA_CALLCHAINS": ("cuda_api", tuple(R.CALLER.values())),
}


def table_types(kinds: tuple[str, ...], tables: set[str]) -> list[R.EventType]:
    """The types of ``TABLE_TYPES`` the trace lists: their table among ``tables`` (the reports' non-empty
    tables) and their kind translated."""
    found = [t for table, (kind, types) in TABLE_TYPES.items() if kind in kinds and table in tables for t in types]
    return list({t.id: t for t in found}.values())  # (the caller types: OS runtime and CUDA API calls alike)


def is_metadata(table: str) -> bool:
    return table in METADATA_TABLES or table.startswith(METADATA_PREFIXES)


def table_kind(table: str) -> str | None:
    """The kind that reads every row of ``table`` (None: no kind does; NVTX_EVENTS: split by class)."""
    readers = [k.name for k in KINDS if table in k.reader.tables]
    return readers[0] if len(readers) == 1 else None


def flag_of(kind: str) -> str:
    """The -t name that enables ``kind``."""
    cats = set(BY_NAME[kind].categories)
    group = [name for name, members in GROUP_ALIASES.items() if set(members) == cats]
    return group[0] if group else BY_NAME[kind].categories[0]


def table_fates(
    counts: dict[str, int], nvtx_classes: dict[str, int], kinds: tuple[str, ...], dropped: dict[str, int] | None = None
) -> list[dict]:
    """``[{"table", "rows", "fates": [{"rows", "fate", "kind" and/or "flag", or "reason"}]}]`` of one report:
    ``counts`` its non-metadata tables' rows, ``nvtx_classes`` its NVTX_EVENTS rows by class,
    ``kinds`` the kinds translated, ``dropped`` the rows of each translated kind its reader or
    translators dropped (their reasons: the summary's categories), taken from its tables in order:
    the fate "dropped" (the rest is "translated")."""
    left = dict(dropped or {})

    def parts(rows: int, kind: str | None, reason: str | None = None) -> list[dict]:
        if kind is None:
            return [{"rows": rows, "fate": "not translated", "reason": reason or NOT_THIS_VERSION}]
        if kind in kinds:
            d = min(rows, left.get(kind, 0))
            left[kind] = left.get(kind, 0) - d
            return ([{"rows": rows - d, "fate": "translated", "kind": kind}] if rows > d else []) + (
                [{"rows": d, "fate": "dropped", "kind": kind}] if d else []
            )
        return [{"rows": rows, "fate": "left out", "kind": kind, "flag": f"-t {flag_of(kind)}"}]

    out = []
    for table, rows in sorted(counts.items()):
        if not rows or is_metadata(table):
            continue
        if table == NVTX_TABLE and nvtx_classes:
            fates = [
                f
                for c, n in nvtx_classes.items()
                if n
                for f in parts(n, NVTX_CLASS_KINDS.get(c), NVTX_CLASS_REASONS.get(c, NVTX_CLASS_REASONS["other"]))
            ]
        else:
            fates = parts(rows, table_kind(table), UNTRANSLATED_TABLES.get(table))
        out.append({"table": table, "rows": rows, "fates": fates})
    return out


BY_NAME: dict[str, Kind] = {k.name: k for k in KINDS}
# the summary name of every translator's count -> its kind (a kind's rows may be counted under several)
KIND_OF_COUNT: dict[str, str] = {tr.count or k.name: k.name for k in KINDS for tr in k.translators}
CATEGORY_BY_NAME: dict[str, Category] = {c.name: c for c in CATEGORIES}


def kinds_of(categories) -> tuple[str, ...]:
    """The kinds the chosen categories enable, in declaration order."""
    return tuple(k.name for k in KINDS if any(c in categories for c in k.categories))


def side_kinds(side: str) -> tuple[str, ...]:
    return tuple(k.name for k in KINDS if k.side == side)


def export_tables() -> tuple[str, ...]:
    """Every export table some reader may read (for ``nsys export --tables``)."""
    return tuple(dict.fromkeys(t for k in KINDS for t in k.reader.tables))
