"""Where nsys2prv keeps what it can rebuild (exports, normalised tables, compiled kernels), and whom it
trusts in the places others can write (``distrust``: files of the running user or root, writable by no one
else)."""

from __future__ import annotations

import os
import pwd
from pathlib import Path


def user_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/nsys2prv``, else ``~/.cache/nsys2prv``."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "nsys2prv"


def owner_name(uid: int) -> str:
    """``user (uid N)``, or ``uid N`` when the system has no such user."""
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def distrust(st: os.stat_result) -> str | None:
    """Why a file or directory in a place others can write (a shared cache, a report's folder, OUT's
    directory) is not to be trusted, or None: it must belong to the running user (or root) and be
    writable by no one else (no group or other write bit)."""
    if st.st_uid not in (os.getuid(), 0):
        return f"owned by {owner_name(st.st_uid)}, not by this user"
    if st.st_mode & 0o022:
        return f"writable by others (mode {st.st_mode & 0o7777:04o})"
    return None
