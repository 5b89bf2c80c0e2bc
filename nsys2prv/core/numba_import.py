"""numba imported without the two modules its start-up imports for a check nsys2prv never needs.

``import numba`` imports SciPy only to check that its version is at least 1.0 (numba needs SciPy
for ``np.linalg`` only, which no kernel of nsys2prv uses; ``warmup`` blocks that probe too) and
PyYAML only to read a ``.numba_config.yaml`` in the current directory: some 0.02 s of CPU, on every
run's start-up.  ``import_numba`` (``core.jit``, the one module that imports numba first) imports it
with both answered "not importable" (SciPy: unless imported already; PyYAML: unless such a file is
there), then takes the answers back: a later ``import scipy`` or ``import yaml`` imports it.
"""

from __future__ import annotations

import os
import sys

NUMBA_CONFIG = ".numba_config.yaml"  # (numba's own name for it, relative to the current directory)


def import_numba() -> None:
    """``import numba``, SciPy and PyYAML left out where nothing needs them (module doc)."""
    if "numba" in sys.modules:
        return
    blocked = [m for m in ("scipy", "yaml") if m not in sys.modules]
    if "yaml" in blocked and os.path.isfile(NUMBA_CONFIG):
        blocked.remove("yaml")  # (numba reads it: with PyYAML, as without us)
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]  # import's "not importable"
    try:
        import numba  # noqa: F401
    finally:
        for name in blocked:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]
