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
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from nsys2prv.core import libc

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


def exchange(src_fd: int, src: str, dst_fd: int, dst: str) -> bool:
    """Swap the entries ``src`` of ``src_fd`` and ``dst`` of ``dst_fd`` in one step (``renameat2``
    with ``RENAME_EXCHANGE``: neither name is ever absent, nothing is followed).  False, nothing done,
    where the system cannot (not Linux, a C library without it, a file system that refuses the flag)."""
    renameat2 = libc.function(
        "renameat2", [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    )
    if renameat2 is None:
        return False
    if renameat2(src_fd, os.fsencode(src), dst_fd, os.fsencode(dst), RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), dst)


_lock = threading.Lock()
_removing: list[tuple[str, threading.Thread]] = []  # the trees ``remove_later`` was given, each its thread


def _inside(path: str) -> list[threading.Thread]:
    """The threads removing trees inside ``path`` (under ``_lock``)."""
    return [t for q, t in _removing if q.startswith(path + os.sep)]


def _remove(path: str, inner: list[str]) -> None:
    """``path`` removed: first its entries but those holding the trees other threads remove
    (``inner``), at the same time as them; then, once they are done, the rest."""
    skip = {os.path.relpath(q, path).split(os.sep)[0] for q in inner}
    try:
        names = [n for n in os.listdir(path) if n not in skip] if skip else []
    except OSError:
        names = []
    for name in names:
        entry = os.path.join(path, name)
        try:
            if stat.S_ISDIR(os.lstat(entry).st_mode):
                shutil.rmtree(entry, ignore_errors=True)
            else:
                os.unlink(entry)
        except OSError:
            pass
    for _ in range(2):  # (again if a tree inside it was given after it: once its thread is done)
        with _lock:
            others = _inside(path)
        for t in others:
            t.join()
        shutil.rmtree(path, ignore_errors=True)  # (never through a link: rmtree refuses them)
        if not os.path.lexists(path):
            return


def _forked() -> None:
    global _lock
    _lock = threading.Lock()  # (a forked child has none of the threads, maybe a held lock)
    _removing.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def remove_later(path: str | os.PathLike) -> None:
    """Remove the tree ``path`` (this process's own: a private directory) in a thread of its own, at
    the same time as those given before it (``wait_removed`` waits for them all; so does the
    interpreter's exit); a tree holding one given before removes the rest of itself, then what that
    one leaves.  Freeing a large file's pages and blocks takes the kernel 0.03-0.1 s of wall time,
    more while others write to the disk: not on the run's critical path, and on both cores at a
    conversion's end (the work files, and the earlier outputs swapped out, each in its thread)."""
    p = os.path.abspath(os.fspath(path))
    with _lock:
        inner = [q for q, _ in _removing if q.startswith(p + os.sep)]
        t = threading.Thread(target=_remove, args=(p, inner), name="nsys2prv-remove")
        _removing.append((p, t))
        t.start()


def wait_removed() -> None:
    """Until every tree given to ``remove_later`` is gone."""
    while True:
        with _lock:
            if not _removing:
                return
            _, t = _removing[0]
        t.join()
        with _lock:
            if _removing and _removing[0][1] is t:
                _removing.pop(0)
