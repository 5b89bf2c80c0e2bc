"""Issue 40 (the cold run's margin): a split merge's forked parts are placed into the .prv by their own
processes (``paraver.placement``).  The split merge's bytes against one merge, with 2 and 3 parts and
gzip: tests/test_scale.py::test_merge_split_by_time_over_processes_is_one_merge."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from nsys2prv.paraver import placement
from nsys2prv.paraver.placement import Chain, copy_at, plain_file

ROOT = Path(__file__).resolve().parent.parent


def _parts(tmp_path: Path) -> list[tuple[Path, bytes]]:
    out = []
    for i, body in enumerate([b"1:part one\n" * 1000, b"2:part two\n" * 7 + b"tail", b"3:x\n" * 30_001]):
        path = tmp_path / f"part{i + 1}.prv"
        path.write_bytes(body)
        out.append((path, body))
    return out


def test_each_part_lands_after_the_one_before_and_the_offset_stays(tmp_path):
    head = b"#Paraver header\n1:main part\n"
    out = tmp_path / "out.prv"
    parts = _parts(tmp_path)
    with open(out, "wb", buffering=1 << 20) as fh:
        assert plain_file(fh)
        fh.write(head)
        fh.flush()
        chain = Chain(fh.fileno(), len(parts))
        try:
            chain.start(fh.tell())
            # (in a conversion each slot's process places its part; here one after the other)
            sizes = [slot.place(str(path)) for slot, (path, _) in zip(chain.slots, parts)]
        finally:
            chain.close()
        assert sizes == [len(b) for _, b in parts]
        assert os.lseek(fh.fileno(), 0, os.SEEK_CUR) == len(head)  # (the shared file offset not moved)
        fh.seek(len(head) + sum(sizes))
        fh.write(b"after\n")
    assert out.read_bytes() == head + b"".join(b for _, b in parts) + b"after\n"
    assert not any(path.exists() for path, _ in parts)  # (each removed by the process that placed it)


def test_a_part_waits_for_its_offset_and_fails_when_it_never_comes(tmp_path):
    (path, _), *_ = _parts(tmp_path)
    with open(tmp_path / "out.prv", "wb") as fh:
        chain = Chain(fh.fileno(), 2)
        slot = chain.slots[0]
        os.close(chain.pipes[0][1])  # (the sender gone without a word)
        chain.pipes[0] = (chain.pipes[0][0], os.open(os.devnull, os.O_WRONLY))
        try:
            with pytest.raises(EOFError, match="offset never came"):
                slot.place(str(path))
        finally:
            chain.close()
    assert path.exists()  # (nothing placed, nothing removed)


def test_copy_falls_back_to_reads_and_writes_where_the_kernel_cannot(tmp_path, monkeypatch):
    src = tmp_path / "src"
    data = bytes(range(256)) * 40_000  # (10 MB: more than one fallback block)
    src.write_bytes(data)
    calls = []

    def partial_then_refuse(fd_in, fd_out, count, offset_src, offset_dst):
        calls.append(count)
        if len(calls) == 1:
            return os.pwrite(fd_out, os.pread(fd_in, 1000, offset_src), offset_dst)  # (1000 bytes copied)
        raise OSError(errno.EXDEV, "cross-device")

    monkeypatch.setattr(os, "copy_file_range", partial_then_refuse)
    out = tmp_path / "out"
    out.write_bytes(b"0123456789")
    with open(src, "rb") as s, open(out, "r+b") as o:
        copy_at(s.fileno(), o.fileno(), 7, len(data))
    assert calls == [len(data), len(data) - 1000]
    assert out.read_bytes() == b"0123456" + data

    def broken(*_):
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(os, "copy_file_range", broken)
    with open(src, "rb") as s, open(out, "r+b") as o, pytest.raises(OSError, match="I/O error"):
        copy_at(s.fileno(), o.fileno(), 0, len(data))  # (a real error is not hidden by the fallback)


def test_gzip_and_pipes_are_not_plain_files(tmp_path):
    import gzip

    with gzip.open(tmp_path / "x.gz", "wb") as gz:
        assert not plain_file(gz)
    r, w = os.pipe()
    with os.fdopen(w, "wb") as fh:
        assert not plain_file(fh)
    os.close(r)
    assert placement.COPY_BLOCK == 1 << 22


def test_the_placing_parts_take_fewer_records(tmp_path):
    import numpy as np
    from chunk_files import save_chunk

    from nsys2prv.paraver.merge import split_times

    def chunk(path, times):
        n = len(times)
        return save_chunk(
            str(path), np.asarray(times, np.int64), np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(2 * n), states=n
        )

    spread = [chunk(tmp_path / "c", range(0, 300_000, 3)), chunk(tmp_path / "d", range(1, 300_000, 3))]
    # the first part's process has other work worth 50,000 of the 200,000 records and the other part's
    # process places its bytes at a quarter of a record's merge each: (1.25 - 0.25) / 2.25 = 0.444 of
    # the records are the first part's (0.375 without the placing: test_scale)
    (cut,) = split_times(spread, 2, first_less=50_000, placed=0.25)
    assert 130_000 <= cut <= 136_000
    # placing alone: 1.25 / 2.25 = 0.556; three parts: 1.25 / 3.25 = 0.385, the others 0.308 each
    (cut,) = split_times(spread, 2, placed=0.25)
    assert 164_000 <= cut <= 170_000
    a, b = split_times(spread, 3, placed=0.25)
    assert 112_000 <= a <= 119_000 and 204_000 <= b <= 211_000
