"""Directories by descriptor: what a run creates or descends below a place it was given (``--cfgs DIR``,
OUT's directory, the cache) is opened relative to its parent's descriptor with ``O_NOFOLLOW |
O_DIRECTORY`` -- a symbolic link planted at a subdirectory's name is never followed -- and files are
moved with ``renameat`` between such descriptors."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

O_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
O_SUBDIR = O_DIR | os.O_NOFOLLOW


def open_dir(path: str | os.PathLike) -> int:
    """The descriptor of a directory the user named (a link there is the user's choice: followed)."""
    return os.open(path, O_DIR)


def subdir(fd: int, name: str, create: bool = False, mode: int = 0o777) -> int:
    """The directory ``name`` of ``fd`` opened without following a link (``ELOOP`` or ``ENOTDIR``
    when it is one); ``create``: made first when absent."""
    if name in ("", ".", "..") or "/" in name:
        raise OSError(errno.EINVAL, "not a plain directory name", name)
    if create:
        try:
            os.mkdir(name, mode, dir_fd=fd)
        except FileExistsError:
            pass
    try:
        return os.open(name, O_SUBDIR, dir_fd=fd)
    except NotADirectoryError:  # (O_DIRECTORY before O_NOFOLLOW: a link to a directory says ENOTDIR)
        if _is_link(fd, name):
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), name) from None
        raise


def _is_link(fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=fd).st_mode)
    except OSError:
        return False


def descend(fd: int, parts: tuple[str, ...] | list[str], create: bool = False) -> int:
    """``fd`` / ``parts``, each component through ``subdir`` (a new descriptor; ``fd`` stays open)."""
    cur = os.dup(fd)
    try:
        for name in parts:
            nxt = subdir(cur, name, create)
            os.close(cur)
            cur = nxt
    except BaseException:
        os.close(cur)
        raise
    return cur


@contextmanager
def opened(fd: int) -> Iterator[int]:
    """Close ``fd`` after the block."""
    try:
        yield fd
    finally:
        os.close(fd)


def rel_parts(rel: str) -> tuple[str, ...] | None:
    """The components of a relative path of plain names, or None (absolute, ``..``, empty)."""
    parts = Path(rel).parts
    if not parts or Path(rel).is_absolute() or any(p in ("", ".", "..") for p in parts):
        return None
    return tuple(parts)
