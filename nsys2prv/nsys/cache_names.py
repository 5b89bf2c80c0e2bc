"""The names of the table cache's directories, without pandas or Arrow: ``cache.py`` makes its entries
under them; the command line's early process (``pipeline/early.py``) asks whether a report has any."""

from __future__ import annotations

import hashlib
from pathlib import Path

from nsys2prv.core.paths import user_cache_dir


def entry_hash(text: str) -> str:
    """16 hex digits of SHA-256, for names of cache entries and files."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def tables_root(cache_dir: Path | None) -> Path:
    """Where the table cache's entries are: CACHE_DIR/tables (``--cache-dir``, else the user's cache)."""
    return (cache_dir or user_cache_dir()) / "tables"


def report_dir(root: Path, resolved: Path) -> Path:
    """The directory of one input's entries (``resolved``: its resolved path), whatever its identity."""
    return root / f"{resolved.stem}-{entry_hash(str(resolved))}"
