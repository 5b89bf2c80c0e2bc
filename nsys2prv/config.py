"""Translation categories, their aliases (nsys2prv 0.5.8 names) and the run Config."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from nsys2prv.core.errors import UserError

# Internal category -> one-line description.  "gpu" (kernels, memcpy, memset) is always on.
CATEGORIES = {
    "gpu": "CUDA kernels, memory copies and memsets (always translated)",
    "cuda_api": "CUDA runtime and driver API calls",
    "nvtx_pushpop": "NVTX push/pop ranges and marks",
    "nvtx_startend": "NVTX start/end ranges",
    "mpi": "MPI calls",
    "osrt": "OS runtime library calls (opt-in)",
    "nccl": "NCCL NVTX ranges, and their payloads on the NCCL kernels they launched",
    "gpu_metrics": "GPU metrics samples (one row per GPU) and their attribution to kernels/NVTX ranges",
    "openacc": "OpenACC data, launch and other events",
    "graphs": "CUDA graph executions and graph API events",
}
ALWAYS = frozenset({"gpu"})
OPT_IN = frozenset({"osrt"})  # not part of "everything" unless asked for

ALIASES = {
    # nsys2prv 0.5.8 names
    "cuda_api_trace": {"cuda_api"},
    "nvtx_pushpop_trace": {"nvtx_pushpop"},
    "nvtx_startend_trace": {"nvtx_startend"},
    "mpi_event_trace": {"mpi"},
    "gpu_metrics": {"gpu_metrics"},
    "openacc": {"openacc"},
    "graphs": {"graphs"},
    "nccl": {"nccl"},
    # short forms
    "cuda_api": {"cuda_api"},
    "nvtx": {"nvtx_pushpop", "nvtx_startend"},
    "mpi": {"mpi"},
    "osrt": {"osrt"},
    "all": set(CATEGORIES) - OPT_IN,
}


def parse_categories(spec: str | None) -> frozenset[str]:
    """``-t a,b,c`` -> the set of internal categories (always including ALWAYS)."""
    if spec is None or spec.strip() == "":
        return frozenset(set(CATEGORIES) - OPT_IN)
    chosen: set[str] = set(ALWAYS)
    for raw in spec.split(","):
        name = raw.strip()
        if not name:
            continue
        if name not in ALIASES:
            valid = ", ".join(sorted(ALIASES))
            raise UserError(f"unknown category '{name}' in -t (valid: {valid})")
        chosen |= ALIASES[name]
    return frozenset(chosen)


@dataclass
class Config:
    inputs: list[Path]
    output: Path                      # base path without extension
    categories: frozenset[str] = field(default_factory=lambda: parse_categories(None))
    merge: bool = False
    filter_nvtx: str | None = None
    compress: bool = False
    force_sqlite: bool = False
    force: bool = False               # merge despite duplicate ranks / different jobs / far-apart starts
    align: str = "auto"               # --align: auto, session, mpi, nccl, marker:NAME, none
    cache_dir: Path | None = None
    show_progress: bool = True
    # POP metrics (nsys2prv/metrics)
    nccl_as: str = "communication"    # NCCL kernels: "communication" (BasicAnalysis) | "useful" (TALP)
    region: str | None = None         # NVTX range: metrics over the union of its occurrences
    iterations: str | None = None     # NVTX range marking iterations: per-iteration table
    warmup: int = 0                   # iterations excluded from the start
    cfgs: Path | None = None          # --cfgs DIR: write the Paraver views there
    # speed and scale (stages.py, parallel.py)
    jobs: int | None = None           # local worker processes for the per-report stages (None: cores)
    dask: str | None = None           # Dask scheduler address or scheduler file (instead of --jobs)
    table_cache: bool = True          # keep the normalised tables as Parquet in CACHE_DIR/tables
    chunk_records: int = 1 << 16      # records read per merge round over all reports (memory bound)
    in_memory: bool = False           # reference writer: all records in memory, one global sort
    own_process: bool = False         # the command line: this process's numba is ours (warmup.py)

    def wants(self, category: str) -> bool:
        return category in self.categories
