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
)
from nsys2prv.nsys.readers.base import Reader
from nsys2prv.translate import cuda, gpu_links, host
from nsys2prv.translate import gpu_metrics as metrics_tr
from nsys2prv.translate import graphs as graph_tr
from nsys2prv.translate import openacc as openacc_tr
from nsys2prv.translate.context import Context
from nsys2prv.translate.records import Translation

CPU, GPU, METRIC = "cpu", "gpu", "metric"   # model sides: CPU threads (tid), GPU streams (gpid/device/stream), GPU rows


@dataclass(frozen=True)
class Translator:
    fn: Callable[[pd.DataFrame, Context, Translation], int]   # returns the rows translated
    count: str = ""                                           # summary name (default: the kind's name)


@dataclass(frozen=True)
class Kind:
    name: str                           # the normalised table
    reader: Reader
    categories: tuple[str, ...]         # -t categories that enable it (any of them)
    side: str                           # CPU, GPU or METRIC
    translators: tuple[Translator, ...]
    types: tuple[R.EventType, ...] = ()     # fixed event types its translators write
    doc: str = ""


@dataclass(frozen=True)
class Link:
    """Records that join two tables of one report; counted only when they have something to say."""
    name: str
    fn: Callable[[Context, Translation], int]
    types: tuple[R.EventType, ...] = ()


@dataclass(frozen=True)
class Category:
    name: str
    doc: str
    aliases: tuple[str, ...] = ()       # other -t names for exactly this category
    default: bool = True                # part of the default (no -t); "-t all" takes every category
    always: bool = False                # translated whatever -t says
    needs_calls: bool = False           # also reads the CUDA API calls (links) when cuda_api is off
    optional_tables: tuple[str, ...] = ()       # counted as "not requested with -t" when off
    untranslated_tables: tuple[str, ...] = ()   # read by no kind: counted as not translated


CATEGORIES: tuple[Category, ...] = (
    Category("gpu", "CUDA kernels, memory copies and memsets (always translated)", always=True,
             untranslated_tables=("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",)),
    Category("cuda_api", "CUDA runtime and driver API calls", ("cuda_api_trace",)),
    Category("nvtx_pushpop", "NVTX push/pop ranges and marks", ("nvtx_pushpop_trace",), needs_calls=True),
    Category("nvtx_startend", "NVTX start/end ranges", ("nvtx_startend_trace",)),
    Category("mpi", "MPI calls", ("mpi_event_trace",)),
    Category("osrt", "OS runtime library calls (opt-in)", default=False),
    Category("nccl", "NCCL NVTX ranges, and their payloads on the NCCL kernels they launched", needs_calls=True),
    Category("gpu_metrics", "GPU metrics samples (one row per GPU) and their attribution to kernels/NVTX ranges",
             optional_tables=("GPU_METRICS", "GENERIC_EVENTS")),
    Category("openacc", "OpenACC data, launch and other events",
             optional_tables=("CUPTI_ACTIVITY_KIND_OPENACC_DATA", "CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH",
                              "CUPTI_ACTIVITY_KIND_OPENACC_OTHER")),
    Category("graphs", "CUDA graph executions and graph API events",
             optional_tables=("CUDA_GRAPH_EVENTS", "CUDA_GRAPH_NODE_EVENTS", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE")),
)
# -t names that stand for several categories
GROUP_ALIASES = {"nvtx": ("nvtx_pushpop", "nvtx_startend")}

KINDS: tuple[Kind, ...] = (
    Kind("cuda_api", cuda_api.READER, ("cuda_api",), CPU, (Translator(cuda.cuda_api),), (R.CUDA_API, R.CORRELATION),
         doc="CUDA runtime/driver API calls"),
    Kind("kernels", kernels.READER, ("gpu",), GPU,
         (Translator(cuda.kernels), Translator(cuda.nccl_kernels, "nccl_kernels")),
         (R.CUDA_KERNEL, R.CUDA_KERNEL_FULL, R.NCCL_KERNEL, *R.KERNEL_PARAMS.values(), R.GRAPH_NODE),
         doc="CUDA kernels"),
    Kind("memcpy", memops.MEMCPY_READER, ("gpu",), GPU, (Translator(cuda.memcpy),), (R.MEMOP, R.MEMOP_SIZE),
         doc="CUDA memory copies"),
    Kind("memset", memops.MEMSET_READER, ("gpu",), GPU, (Translator(cuda.memset),), (R.MEMOP, R.MEMOP_SIZE),
         doc="CUDA memsets"),
    Kind("nvtx", nvtx.READER, ("nvtx_pushpop", "nvtx_startend"), CPU, (Translator(host.nvtx),),
         doc="NVTX ranges and marks (all domains but MPI/NCCL; event types per domain)"),
    Kind("nccl_ranges", nccl.READER, ("nccl",), CPU, (Translator(host.nccl_ranges),), (R.NCCL_RANGE,),
         doc="NVTX ranges of the NCCL domain, with their payloads"),
    Kind("mpi", mpi.READER, ("mpi",), CPU, (Translator(host.mpi),),
         (*R.MPI_TYPES.values(), R.MPI_SEND_SIZE, R.MPI_RECV_SIZE, R.MPI_ROOT, R.MPI_COMM), doc="MPI calls"),
    Kind("osrt", osrt.READER, ("osrt",), CPU, (Translator(host.osrt),), (R.OSRT,), doc="OS runtime library calls"),
    Kind("gpu_metrics", gpu_metrics.READER, ("gpu_metrics",), METRIC, (Translator(metrics_tr.gpu_metrics),),
         doc="GPU metric samples (event types per metric name)"),
    Kind("graph_exec", graphs.EXEC_READER, ("graphs",), GPU, (Translator(graph_tr.graph_exec),),
         (R.GRAPH_EXEC, R.GRAPH_ID, R.GRAPH_EXEC_ID), doc="CUDA graph executions on streams"),
    Kind("graph_api", graphs.API_READER, ("graphs",), CPU, (Translator(graph_tr.graph_api),),
         (R.GRAPH_API, R.GRAPH_ID, R.GRAPH_NODE), doc="CUDA graph API events"),
    Kind("openacc", openacc.READER, ("openacc",), CPU, (Translator(openacc_tr.openacc),),
         (*R.OPENACC_TABLE_TYPES.values(), R.OPENACC_REGION, R.OPENACC_FUNCTION, R.OPENACC_DATA_SIZE),
         doc="OpenACC data, launch and other events"),
)
LINKS: tuple[Link, ...] = (
    Link("launch_links", cuda.launch_links),
    Link("nccl_payloads", gpu_links.nccl_payloads, (R.NCCL_OPERATION, *R.NCCL_FIELDS.values())),
    Link("nvtx_on_gpu", gpu_links.nvtx_on_gpu),
)
# Summary names that appear only when they have rows or records (a link or a split with nothing to do).
OPTIONAL_COUNTS = ("nccl_kernels", *(link.name for link in LINKS))

BY_NAME: dict[str, Kind] = {k.name: k for k in KINDS}
CATEGORY_BY_NAME: dict[str, Category] = {c.name: c for c in CATEGORIES}


def kinds_of(categories) -> tuple[str, ...]:
    """The kinds the chosen categories enable, in declaration order."""
    return tuple(k.name for k in KINDS if any(c in categories for c in k.categories))


def side_kinds(side: str) -> tuple[str, ...]:
    return tuple(k.name for k in KINDS if k.side == side)


def export_tables() -> tuple[str, ...]:
    """Every export table some reader may read (for ``nsys export --tables``)."""
    return tuple(dict.fromkeys(t for k in KINDS for t in k.reader.tables))
