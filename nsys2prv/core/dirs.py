"""Directories by descriptor: what a run creates or descends below a place it was given (``--cfgs DIR``,
OUT's directory, the cache) is opened relative to its parent's descriptor with ``O_NOFOLLOW |
O_DIRECTORY`` -- a symbolic link planted at a subdirectory's name is never followed -- and files are
moved with ``renameat`` between such descriptors (``exchange``: a file swapped with the one it replaces,
whose removal ``remove_later`` takes off the critical path)."""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import stat
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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


RENAME_EXCHANGE = 2  # renameat2's flag (linux/fs.h)
_renameat2: Any = None  # the C library's renameat2, False where there is none (``exchange``)


def exchange(src_fd: int, src: str, dst_fd: int, dst: str) -> bool:
    """Swap the entries ``src`` of ``src_fd`` and ``dst`` of ``dst_fd`` in one step (``renameat2``
    with ``RENAME_EXCHANGE``: neither name is ever absent, nothing is followed).  False, nothing done,
    where the system cannot (not Linux, a C library without it, a file system that refuses the flag)."""
    global _renameat2
    if _renameat2 is None:
        _renameat2 = False
        if sys.platform.startswith("linux"):
            try:
                fn = ctypes.CDLL(None, use_errno=True).renameat2
                fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
                fn.restype = ctypes.c_int
                _renameat2 = fn
            except (OSError, AttributeError):
                pass
    if not _renameat2:
        return False
    if _renameat2(src_fd, os.fsencode(src), dst_fd, os.fsencode(dst), RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), dst)


_lock = threading.Lock()
_pending: list[str] = []  # the trees ``remove_later`` was given, in order
_thread: threading.Thread | None = None  # removing them; it ends when none is left


def _remove_pending() -> None:
    global _thread
    while True:
        with _lock:
            if not _pending:
                _thread = None
                return
            path = _pending.pop(0)
        shutil.rmtree(path, ignore_errors=True)  # (never through a link: rmtree refuses them)


def _forked() -> None:
    global _lock, _thread
    _lock, _thread = threading.Lock(), None  # (a forked child has no such thread, maybe a held lock)
    _pending.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def remove_later(path: str | os.PathLike) -> None:
    """Remove the tree ``path`` (this process's own: a private directory) in a thread, after those
    given before it (``wait_removed`` waits for them all; so does the interpreter's exit).  Freeing a
    large file's pages and blocks takes the kernel 0.03-0.1 s of wall time, more while others write
    to the disk: not on the run's critical path."""
    global _thread
    with _lock:
        _pending.append(os.fspath(path))
        if _thread is None:
            _thread = threading.Thread(target=_remove_pending, name="nsys2prv-remove")
            _thread.start()


def wait_removed() -> None:
    """Until every tree given to ``remove_later`` is gone."""
    while (t := _thread) is not None:
        t.join()
