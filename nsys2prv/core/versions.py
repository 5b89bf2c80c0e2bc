"""Versions of what nsys2prv caches, derived rather than bumped by hand.

A cache entry is valid for the code that wrote it and the libraries that encoded it.  ``code_version()``
is the package version followed by one fingerprint of

- the package's source: every ``.py`` file under ``nsys2prv/`` (its path and bytes, in path order), so
  that a reader's new column, a new field of a pickled record or a changed normalisation gives a new
  version;
- the versions of Python and of the libraries whose formats the caches hold (pickled numpy and pandas
  objects, Parquet written by pyarrow).

The table cache (``nsys.cache``) names its entries after it, and the per-report scan stored in an entry
with it, so an entry written by other code is never found again (and is replaced); nobody has to
remember to bump a constant.

Why the whole source and not the readers only: what a cache holds is decided by more modules than the
readers (the report's metadata record, the lanes and resource keys stage A adds, the sync-point rows),
and a list of them would go stale the way a hand-bumped constant does.  An edit anywhere re-reads each
report once; a release changes the package version anyway.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import sys
from pathlib import Path

from nsys2prv import __version__

PACKAGE_DIR = Path(__file__).resolve().parent.parent
LIBRARIES = ("numpy", "pandas", "pyarrow")


def source_fingerprint(root: Path = PACKAGE_DIR) -> str:
    """16 hex digits of SHA-256 over every ``*.py`` file under ``root`` (relative path and bytes, in
    path order); ``"no-source"`` when there is none (a frozen build: the package version then decides)."""
    files = sorted(root.rglob("*.py"), key=lambda p: p.relative_to(root).as_posix())
    if not files:
        return "no-source"
    h = hashlib.sha256()
    for f in files:
        data = f.read_bytes()
        h.update(f"{f.relative_to(root).as_posix()}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()[:16]


def library_versions() -> str:
    """Python's and the storage libraries' versions (``LIBRARIES``; "-" for one not installed)."""

    def version(name: str) -> str:
        try:
            return str(importlib.import_module(name).__version__)
        except ImportError:
            return "-"

    return ";".join(
        [f"python={sys.version_info[0]}.{sys.version_info[1]}", *(f"{name}={version(name)}" for name in LIBRARIES)]
    )


@functools.cache
def code_version() -> str:
    """``VERSION+FINGERPRINT`` of this code and its storage libraries (module doc), once per process."""
    mix = hashlib.sha256(f"{source_fingerprint()}|{library_versions()}".encode()).hexdigest()[:16]
    return f"{__version__}+{mix}"


__all__ = ["code_version", "source_fingerprint", "library_versions"]
