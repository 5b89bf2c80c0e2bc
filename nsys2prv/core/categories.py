"""Every ``-t`` category, declared once: a description, its aliases (BSC nsys2prv 0.5.8 names and short
forms), whether "everything" includes it, and the export tables reported as not translated when it is
off.  Plain data: the command line reads it without loading pandas; ``kinds.py`` says which data kinds
each category enables, and ``tests/test_kinds.py`` checks that both agree.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Category:
    name: str
    doc: str
    aliases: tuple[str, ...] = ()       # other -t names for exactly this category
    default: bool = True                # part of "everything" (no -t, -t all)
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

__all__ = ["CATEGORIES", "GROUP_ALIASES", "Category"]
