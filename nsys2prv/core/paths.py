"""Where nsys2prv keeps what it can rebuild: exports, normalised tables, compiled kernels."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/nsys2prv``, else ``~/.cache/nsys2prv``."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "nsys2prv"
