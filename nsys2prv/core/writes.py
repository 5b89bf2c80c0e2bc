"""Whole writes to a descriptor: several buffers with one ``writev``, again for the rest of a short
write; an array saved to a file (``save_array``).  Both name the file they failed to write."""

from __future__ import annotations

import errno
import os

import numpy as np

IOV_MAX = 1024  # buffers a writev takes (POSIX's least)


def write_all(fd: int, views: list[memoryview], path: str | os.PathLike | None = None) -> None:
    """``views`` (bytes: format "B") written one after the other; a failed write names ``path``
    (when given), and one that makes no progress is reported as a full disk."""
    views = [v for v in views if v.nbytes]
    name = None if path is None else str(path)
    while views:
        try:
            n = os.writev(fd, views[:IOV_MAX])
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, name) from None
        if n == 0:
            raise OSError(
                errno.ENOSPC, "could not write all bytes (no space left on device, or a file size limit)", name
            )
        while views and n >= len(views[0]):
            n -= len(views.pop(0))
        if n:
            views[0] = views[0][n:]


def save_array(path: str, arr: np.ndarray) -> None:
    """``np.save(path, arr)``; a failed write names ``path`` (numpy's own errors name no file: a work
    file that could not be written is then told apart from the outputs, ``conversion.convert``)."""
    try:
        np.save(path, arr)
    except OSError as exc:
        if exc.filename is None:
            exc.filename = path
        raise
