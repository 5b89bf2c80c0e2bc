"""The run Config and the ``-t`` parser (categories and aliases come from ``core/categories.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from nsys2prv.core.categories import CATEGORIES as _DECLARED
from nsys2prv.core.categories import GROUP_ALIASES
from nsys2prv.core.errors import UserError

# Internal category -> one-line description, and every -t name -> the categories it selects; both
# built from the declarations in core/categories.py.
CATEGORIES = {c.name: c.doc for c in _DECLARED}
ALWAYS = frozenset(c.name for c in _DECLARED if c.always)
OPT_IN = frozenset(c.name for c in _DECLARED if not c.default)  # not in the default (no -t) unless asked for
ALIASES = {
    **{alias: {c.name} for c in _DECLARED for alias in c.aliases},
    **{c.name: {c.name} for c in _DECLARED},
    **{name: set(cats) for name, cats in GROUP_ALIASES.items()},
    "all": set(CATEGORIES),  # every category, the opt-in ones too
}


NEGATION = "no-"  # -t no-NAME: without NAME (from the default when no name is given without it)


def parse_categories(spec: str | None) -> frozenset[str]:
    """``-t a,b,c`` -> the set of internal categories (always including ALWAYS).  ``no-NAME`` removes
    NAME's categories: from the names given, or from the default when every name is a ``no-`` one
    (``-t no-cpu``: the default without the scheduler's states and the CPU samples)."""
    default = frozenset(set(CATEGORIES) - OPT_IN)
    if spec is None or spec.strip() == "":
        return default
    chosen: set[str] = set(ALWAYS)
    removed: set[str] = set()
    positive = False
    for raw in spec.split(","):
        name = raw.strip()
        if not name:
            continue
        negated = name.startswith(NEGATION) and name[len(NEGATION) :] in ALIASES
        key = name[len(NEGATION) :] if negated else name
        if key not in ALIASES:
            valid = ", ".join(sorted(ALIASES))
            raise UserError(f"unknown category '{name}' in -t (valid: {valid}; no-NAME leaves NAME out)")
        if negated:
            removed |= ALIASES[key]
        else:
            chosen |= ALIASES[key]
            positive = True
    if not positive:
        chosen |= default
    return frozenset((chosen - removed) | ALWAYS)


@dataclass
class Config:
    inputs: list[Path]
    output: Path  # base path without extension
    categories: frozenset[str] = field(default_factory=lambda: parse_categories(None))
    merge: bool = False
    filter_nvtx: str | None = None
    compress: bool = False
    force_sqlite: bool = False
    force: bool = False  # merge despite duplicate ranks / different jobs / far-apart starts
    align: str = "auto"  # --align: auto, session, mpi, nccl, marker:NAME, none
    time_origin: str = "run"  # --time-origin: "run" (0 = the run's start, END = its end) | "session"
    cache_dir: Path | None = None
    show_progress: bool = True
    # POP metrics (nsys2prv/metrics)
    nccl_as: str = "communication"  # NCCL kernels: "communication" (BasicAnalysis) | "useful" (TALP)
    # --region: NVTX ranges (or MPI_Init..MPI_Finalize), one POP column each over the union of its occurrences
    region: tuple[str, ...] = ()
    iterations: str | None = None  # NVTX range marking iterations: per-iteration table
    warmup: int = 0  # iterations excluded from the start
    cfgs: Path | None = None  # --cfgs DIR: write the Paraver views there
    # speed and scale (stages.py, parallel.py)
    jobs: int | None = None  # local worker processes for the per-report stages (None: cores)
    dask: str | None = None  # Dask scheduler address or scheduler file (instead of --jobs)
    table_cache: bool = True  # keep the normalised tables as Parquet in CACHE_DIR/tables
    cache_max: int | None = None  # --cache-max in bytes (None: NSYS2PRV_CACHE_MAX, else the default)
    merge_round_records: int = 1 << 16  # records read per merge round over all reports (memory bound)
    slice_rows: int = 400_000  # rows of a time slice of a large report (pipeline/slices.py)
    own_process: bool = False  # the command line: this process's numba is ours (warmup.py)

    def __post_init__(self) -> None:
        if isinstance(self.region, str):  # one name given as a string (callers of 0.x): one column
            self.region = (self.region,)
        self.region = tuple(self.region or ())

    def wants(self, category: str) -> bool:
        return category in self.categories
