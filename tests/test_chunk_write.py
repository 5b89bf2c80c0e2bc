"""paraver.chunks._write: a chunk's arrays in one writev, short writes continued, failures naming the file."""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest

from nsys2prv.paraver import chunks

ARRAYS = [
    np.arange(5, dtype=np.int64),
    np.zeros(0, np.int64),
    np.arange(1000, dtype=np.int32),
    np.full(3, -1, np.int64),
]


def _written(path) -> bytes:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        chunks._write(fd, ARRAYS, path)
    finally:
        os.close(fd)
    return path.read_bytes()


def test_the_arrays_one_after_the_other(tmp_path):
    assert _written(tmp_path / "c") == b"".join(a.tobytes() for a in ARRAYS)


def test_a_short_write_goes_on_where_it_stopped(tmp_path, monkeypatch):
    real, calls = os.writev, []

    def short(fd, views):  # (at most 7 bytes a call: every buffer cut, some several times)
        calls.append(len(views))
        head = b"".join(bytes(v) for v in views)[:7]
        return real(fd, [head])

    monkeypatch.setattr(chunks.os, "writev", short)
    assert _written(tmp_path / "c") == b"".join(a.tobytes() for a in ARRAYS)
    assert len(calls) == -(-sum(a.nbytes for a in ARRAYS) // 7)


def test_no_progress_is_a_full_disk_naming_the_file(tmp_path, monkeypatch):
    monkeypatch.setattr(chunks.os, "writev", lambda fd, views: 0)
    with pytest.raises(OSError) as got:
        _written(tmp_path / "c")
    assert (got.value.errno, got.value.filename) == (errno.ENOSPC, str(tmp_path / "c"))


def test_a_failed_write_names_the_file(tmp_path, monkeypatch):
    def fail(fd, views):
        raise OSError(errno.EFBIG, os.strerror(errno.EFBIG))

    monkeypatch.setattr(chunks.os, "writev", fail)
    with pytest.raises(OSError) as got:
        _written(tmp_path / "c")
    assert (got.value.errno, got.value.strerror, got.value.filename) == (
        errno.EFBIG,
        os.strerror(errno.EFBIG),
        str(tmp_path / "c"),
    )
