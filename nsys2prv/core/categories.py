"""Every ``-t`` category, declared once: a description, its aliases (BSC nsys2prv 0.5.8 names and short
forms), whether the default (no ``-t``) includes it, and whether it is always translated.  Plain data:
the command line reads it without loading pandas; ``kinds.py`` says which data kinds each category
enables, and ``tests/test_kinds.py`` checks that both agree.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Category:
    name: str
    doc: str
    aliases: tuple[str, ...] = ()  # other -t names for exactly this category
    default: bool = True  # part of the default (no -t); "-t all" takes every category
    always: bool = False  # translated whatever -t says
    needs_calls: bool = False  # also reads the CUDA API calls (links) when cuda_api is off


CATEGORIES: tuple[Category, ...] = (
    Category("gpu", "CUDA kernels, memory copies and memsets (always translated)", always=True),
    Category("cuda_api", "CUDA runtime and driver API calls", ("cuda_api_trace",)),
    Category("nvtx_pushpop", "NVTX push/pop ranges and marks", ("nvtx_pushpop_trace",), needs_calls=True),
    Category("nvtx_startend", "NVTX start/end ranges", ("nvtx_startend_trace",)),
    Category("mpi", "MPI calls", ("mpi_event_trace",)),
    Category("osrt", "OS runtime library calls (opt-in)", default=False),
    Category(
        "sched",
        "thread states from the scheduler where the report has them: Running only on a CPU, Blocked off it; "
        "the CPU as an event",
    ),
    Category("samples", "CPU samples with their call stacks where the report has them: sampled functions, callers"),
    Category("nccl", "NCCL NVTX ranges, and their payloads on the NCCL kernels they launched", needs_calls=True),
    Category("gpu_metrics", "GPU metrics samples (one row per GPU) and their attribution to kernels/NVTX ranges"),
    Category("openacc", "OpenACC data, launch and other events"),
    Category("graphs", "CUDA graph executions and graph API events"),
)
# -t names that stand for several categories
GROUP_ALIASES = {
    "nvtx": ("nvtx_pushpop", "nvtx_startend"),
    "cuda": ("gpu", "cuda_api"),
    "cpu": ("sched", "samples"),
}  # nsys's own -t cuda: the API calls and the GPU work


__all__ = ["CATEGORIES", "GROUP_ALIASES", "Category"]
