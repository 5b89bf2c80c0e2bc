"""The ``NSYS2PRV_*`` environment variables the conversion reads, all here, in one record (the table
in docs/development.md says what each is for).

``environment()`` reads them when asked, not once at import: a test sets one with
``monkeypatch.setenv`` and the next call sees it.  Not here: the profiling wrapper's settings
(``nsys2prv/data/nsys-rank.sh``, docs/profiling.md) and the places things are looked up in
(``XDG_CACHE_HOME``, ``NUMBA_CACHE_DIR``, ``NSYS_HOME``, ``NSYS2PRV_IMPORTER``: ``core/paths.py``,
``core/jit.py``, ``nsys/export.py``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

KernelForm = Literal["python", "compiled"]


@dataclass(frozen=True)
class Environment:
    in_process: bool = False  # NSYS2PRV_IN_PROCESS=1: -j 1 runs the per-report stages in this process
    no_adbc: bool = False  # NSYS2PRV_NO_ADBC (set): read the exports through sqlite3 only
    kernels: KernelForm | None = None  # NSYS2PRV_KERNELS=python|compiled: every numba kernel in that form
    timing: bool = False  # NSYS2PRV_TIMING (set): each stage's time and memory on stderr
    cache_max: str | None = None  # NSYS2PRV_CACHE_MAX=SIZE: the cache's size cap (--cache-max; nsys/cache_size.py)


def environment() -> Environment:
    """The variables as they are now (unset or empty: the defaults)."""
    get = os.environ.get
    form = get("NSYS2PRV_KERNELS")
    kernels: KernelForm | None = "python" if form == "python" else "compiled" if form == "compiled" else None
    return Environment(
        in_process=get("NSYS2PRV_IN_PROCESS") == "1",
        no_adbc=bool(get("NSYS2PRV_NO_ADBC")),
        kernels=kernels,
        timing=bool(get("NSYS2PRV_TIMING")),
        cache_max=get("NSYS2PRV_CACHE_MAX") or None,
    )
