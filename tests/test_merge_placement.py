"""Issue 40 (CPU per row): a relayed merge's blocks are written into the .prv by the processes that
formatted them, at offsets passed on in a ring (``paraver.placement``): no part file copied in
afterwards.  The relayed merge's bytes against one merge, through the real merge on generated chunks
(many blocks, 1-3 processes, an empty block, a failed process); whole conversions split 2-3 ways and
gzip: tests/test_scale.py::test_merge_split_by_time_over_processes_is_one_merge."""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import pytest

from nsys2prv.paraver import merge as M
from nsys2prv.paraver import placement
from nsys2prv.paraver.placement import Ring, plain_file, write_at

ROOT = Path(__file__).resolve().parent.parent


def test_each_block_lands_after_the_one_before_and_the_offset_stays(tmp_path):
    head = b"#Paraver header\n"
    blocks = [b"1:block zero\n" * 1000, b"", b"2:block two\n" * 7, b"3:x\n" * 30_001, b"4:last\n"]
    out = tmp_path / "out.prv"
    with open(out, "wb", buffering=1 << 20) as fh:
        assert plain_file(fh)
        fh.write(head)
        fh.flush()
        ring = Ring(fh.fileno(), 2)
        try:
            ring.start(fh.tell())
            # (in a conversion each process takes its blocks in turn; here one after the other)
            for b, text in enumerate(blocks):
                p = b % 2
                at = ring.receive(p)
                ring.send(p, at + len(text))
                write_at(ring.out, memoryview(text), at)
            end = ring.receive(len(blocks) % 2)  # (the last block's end, sent on to the next process)
        finally:
            ring.close()
        assert end == len(head) + sum(map(len, blocks))
        assert os.lseek(fh.fileno(), 0, os.SEEK_CUR) == len(head)  # (the shared file offset not moved)
        fh.seek(end)
        fh.write(b"after\n")
    assert out.read_bytes() == head + b"".join(blocks) + b"after\n"


def test_a_block_waits_for_its_offset_and_fails_when_it_never_comes(tmp_path):
    with open(tmp_path / "out.prv", "wb") as fh:
        ring = Ring(fh.fileno(), 2)
        os.close(ring.pipes[1][1])  # (the sender gone without a word)
        ring.pipes[1] = (ring.pipes[1][0], os.open(os.devnull, os.O_WRONLY))
        try:
            with pytest.raises(EOFError, match="offset never came"):
                ring.receive(1)
        finally:
            ring.close()


def test_write_at_goes_on_after_a_short_write(tmp_path, monkeypatch):
    real, calls = os.pwrite, []

    def short(fd, data, at):
        calls.append(len(data))
        return real(fd, bytes(data)[:1000], at)  # (at most 1000 bytes a call)

    monkeypatch.setattr(os, "pwrite", short)
    out = tmp_path / "out"
    out.write_bytes(b"0123456789")
    data = bytes(range(256)) * 10
    with open(out, "r+b") as fh:
        write_at(fh.fileno(), memoryview(data), 7)
    assert calls == [2560, 1560, 560]
    assert out.read_bytes() == b"0123456" + data


def test_gzip_and_pipes_are_not_plain_files(tmp_path):
    import gzip

    with gzip.open(tmp_path / "x.gz", "wb") as gz:
        assert not plain_file(gz)
    r, w = os.pipe()
    with os.fdopen(w, "wb") as fh:
        assert not plain_file(fh)
    os.close(r)


def _chunks(tmp_path, seed=3):
    from test_scale import _synthetic_chunks

    metas, expected = _synthetic_chunks(tmp_path, 40, seed)
    return metas, expected, [np.zeros(0, np.int64)] * len(metas), (np.zeros(1, np.int64),) * 3


def _one_merge(metas, values, objs) -> bytes:
    fh = io.BytesIO()
    M.merge(metas, values, 0, fh, 1 << 16, objs=objs)
    return fh.getvalue()


@pytest.mark.parametrize(
    "parts,block,spill", [(2, 64, 1 << 24), (3, 200, 1 << 24), (1, 500, 1 << 24), (2, 10**9, 1 << 24), (2, 3000, 2000)]
)
def test_the_relayed_merge_writes_the_bytes_of_one_merge(tmp_path, monkeypatch, parts, block, spill):
    """Blocks of a few records (64: dozens of blocks) or one block, taken in turn by 1-3 forked
    processes, with this process's other work beside them: the bytes of one merge, after the header,
    and the file offset after them.  Blocks larger than a process's buffer (``spill``: 2,000 bytes):
    their text beyond it spilled to a file, copied in, the file removed."""
    metas, expected, values, objs = _chunks(tmp_path)
    one = _one_merge(metas, values, objs)
    assert len(one.splitlines()) == len(expected) > 1000
    monkeypatch.setattr(M, "BLOCK_RECORDS", block)
    monkeypatch.setattr(M, "BLOCK_ROUNDS", 0)  # (blocks of BLOCK_RECORDS whatever the chunks' count)
    monkeypatch.setattr(placement, "SPILL_BYTES", spill)
    if spill < 1 << 24:  # (the formatter's pieces small too: a few of them fill the buffer)
        from nsys2prv.paraver import format as F

        monkeypatch.setattr(F, "BUFFER", 1024)
    real_close = placement.BlockText.close

    def close(text):  # (in the forked processes: a file tells the test that they spilled)
        if text.fd >= 0:
            (tmp_path / f"spilled{os.getpid()}").touch()
        real_close(text)

    monkeypatch.setattr(placement.BlockText, "close", close)
    cuts = M.block_times(metas, parts)
    assert (len(cuts) > 10) if block == 64 else True
    beside = []
    out = tmp_path / "out.prv"
    with open(out, "wb", buffering=1 << 20) as fh:
        fh.write(b"#head\n")
        stats = M.merge_split(metas, values, 0, fh, 700, parts, tmp_path, objs=objs, beside=lambda: beside.append(1))
        fh.write(b"#tail\n")
    assert out.read_bytes() == b"#head\n" + one + b"#tail\n"
    assert beside == [1] and stats.events == len(expected)
    assert not list(tmp_path.glob("block*.prv"))  # (the spill files removed by their processes)
    assert len(list(tmp_path.glob("spilled*"))) == (2 if spill < 1 << 24 else 0)


def test_a_block_spills_beyond_its_buffer_and_lands_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(placement, "SPILL_BYTES", 100)
    text = placement.BlockText(64, str(tmp_path / "spill"))
    data = bytes(range(256)) * 3
    for i in range(0, len(data), 50):  # (as the formatter: room, then advance; or write)
        piece = data[i : i + 50]
        if i % 100:
            text.write(piece)
        else:
            text.room(len(piece))[: len(piece)] = np.frombuffer(piece, np.uint8)
            text.advance(len(piece))
    assert text.size() == len(data) and text.spilled >= 100 and text.n < 200
    out = tmp_path / "out"
    out.write_bytes(b"0123456789")
    with open(out, "r+b") as fh:
        text.land(fh.fileno(), 4)
    assert out.read_bytes() == b"0123" + data and text.size() == 0
    text.close()
    assert not (tmp_path / "spill").exists()


def test_blocks_give_every_chunk_a_few_rounds(tmp_path, monkeypatch):
    """With many chunks a block holds BLOCK_ROUNDS merge rounds of each (each block looks every
    chunk's borders up), else about BLOCK_RECORDS records."""
    metas, _, _, _ = _chunks(tmp_path)
    total = sum(c.records for c in metas)
    monkeypatch.setattr(M, "BLOCK_RECORDS", 200)
    monkeypatch.setattr(M, "ROUND_PER_CHUNK", 10)  # (rounds of 10 records a chunk: these chunks are small)
    per_block = M.BLOCK_ROUNDS * M.ROUND_PER_CHUNK * len(metas)  # (4 x 10 x 40 chunks: 1,600 records)
    assert per_block == 1_600 and total > 4 * per_block
    rounds = len(M.block_times(metas, 2)) + 1
    assert 3 <= rounds <= -(-total // per_block)  # (equal times kept together: maybe fewer)
    monkeypatch.setattr(M, "BLOCK_ROUNDS", 0)  # (the few chunks' rule alone: blocks of 200 records)
    assert len(M.block_times(metas, 2)) + 1 > 4 * rounds


def test_an_empty_block_and_every_process_forked(tmp_path):
    """A block after the last record (nothing to write: the offset passed on as it came) and a run
    whose process keeps no merge buffers (``here`` False): still the bytes of one merge."""
    metas, expected, values, objs = _chunks(tmp_path, seed=5)
    one = _one_merge(metas, values, objs)
    with pytest.MonkeyPatch.context() as mp:  # (blocks of BLOCK_RECORDS here; merge_split below: as it is)
        mp.setattr(M, "BLOCK_ROUNDS", 0)
        cuts = M.block_times(metas, 2)
    last = max(int(M.chunk_index(c)[-1]) for c in metas if c.records)
    cuts = [*cuts, last + 10**9]
    out = tmp_path / "out.prv"
    with open(out, "wb") as fh:
        stats, size = M._relayed(metas, values, 0, fh, 500, 3, cuts, tmp_path, None, objs, None)
        fh.write(b"#tail\n")
    assert out.read_bytes() == one + b"#tail\n" and size == len(one) and stats.events == len(expected)
    with open(out, "wb") as fh:
        M.merge_split(metas, values, 0, fh, 500, 1, tmp_path, objs=objs, here=False)
    assert out.read_bytes() == one


def test_a_failed_process_fails_the_merge_without_waiting_forever(tmp_path, monkeypatch):
    """The second process fails on its first block: the first, waiting for that block's end, is
    stopped and the merge raises the failure (the caller then writes nothing: no partial output)."""
    metas, _, values, objs = _chunks(tmp_path, seed=7)
    real = M._merge
    calls = []

    def second_fails(readers, *a):
        calls.append(1)
        if os.getpid() != parent and len(calls) == 1 and any(r.first > 0 for r in readers):
            raise OSError("chunk file damaged (for the test)")
        return real(readers, *a)

    parent = os.getpid()
    monkeypatch.setattr(M, "_merge", second_fails)
    monkeypatch.setattr(M, "BLOCK_RECORDS", 100)
    monkeypatch.setattr(M, "BLOCK_ROUNDS", 0)
    with open(tmp_path / "out.prv", "wb") as fh, pytest.raises(OSError, match="for the test"):
        M.merge_split(metas, values, 0, fh, 700, 2, tmp_path, objs=objs)


def _large_chunks(tmp_path, n_chunks=3, n=20_000, seed=5):
    """A few chunk files of many records each (events of one field: a global record id), pages of
    every section for the relayed merge to free."""
    from chunk_files import save_chunk

    from nsys2prv.paraver.chunks import EVENT_SIG0

    rng = np.random.default_rng(seed)
    metas = []
    for c in range(n_chunks):
        t = np.sort(rng.integers(0, 10 * n, n))
        metas.append(
            save_chunk(
                str(tmp_path / f"big{c}.chunk"),
                t,
                np.full(n, c, np.int64),
                np.zeros(n),
                np.full(n, EVENT_SIG0),
                np.arange(c * n, (c + 1) * n, dtype=np.int64),
                events=n,
                sigs=[((1,), (False,))],
            )
        )
    return metas, [np.zeros(0, np.int64)] * n_chunks, (np.zeros(1, np.int64),) * 3


def _has_hole(path) -> bool:
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        return os.lseek(fh.fileno(), 0, os.SEEK_HOLE) < size


@pytest.mark.parametrize("parts,block", [(2, 500), (3, 1700), (1, 4000)])
def test_the_relayed_merge_frees_what_it_has_read_and_writes_the_same_bytes(tmp_path, monkeypatch, parts, block):
    """With holes punched as soon as a page is read by every process (``paraver.holes``, MIN_BYTES
    1), the relayed merge of three chunk files of 20,000 records writes the bytes of one merge, and the
    files end with holes (their size kept)."""
    from nsys2prv.paraver import holes

    if not holes.can_punch():
        pytest.skip("no fallocate here (Linux only): nothing is punched")
    metas, values, objs = _large_chunks(tmp_path)
    one = _one_merge(metas, values, objs)  # (before: the relayed merge punches the files)
    sizes = [os.path.getsize(m.path) for m in metas]
    assert not any(_has_hole(m.path) for m in metas)
    monkeypatch.setattr(M, "BLOCK_RECORDS", block)
    monkeypatch.setattr(M, "BLOCK_ROUNDS", 0)
    monkeypatch.setattr(holes, "MIN_BYTES", 1)
    out = tmp_path / "out.prv"
    with open(out, "wb", buffering=1 << 20) as fh:
        M.merge_split(metas, values, 0, fh, 700, parts, tmp_path, objs=objs)
    assert out.read_bytes() == one and len(one.splitlines()) == 60_000
    if not all(_has_hole(m.path) for m in metas):
        pytest.skip(f"the file system under {tmp_path} punched no hole (fallocate PUNCH_HOLE unsupported)")
    assert [os.path.getsize(m.path) for m in metas] == sizes


def test_holes_free_each_section_up_to_what_every_block_has_read(tmp_path, monkeypatch):
    """After a block, each section is punched from its first whole page up to 2 x STRIDE records
    before the block's end, rounded down to a page (the tail: up to the next record's field); the
    header, the rest of each section and the trailer keep their bytes."""
    from nsys2prv.paraver import holes
    from nsys2prv.paraver.chunks import STRIDE

    if not holes.can_punch():
        pytest.skip("no fallocate here (Linux only): nothing is punched")
    monkeypatch.setattr(holes, "MIN_BYTES", 1)
    metas, _, _ = _large_chunks(tmp_path, n_chunks=1)
    before = np.fromfile(metas[0].path, np.uint8)
    reader = M._Reader(metas[0])
    try:
        reader.narrow(None, 90_000)  # (a block: the records before time 90,000)
        reader.field = reader.stop  # (its records taken: one field each)
        h = holes.Holes([reader])
        h.taken()
        h.close()
    finally:
        reader.close()
    after = np.fromfile(metas[0].path, np.uint8)
    if np.array_equal(before, after):
        pytest.skip(f"the file system under {tmp_path} punched no hole (fallocate PUNCH_HOLE unsupported)")
    page = os.sysconf("SC_PAGE_SIZE")
    zero = np.zeros(len(before), bool)
    safe = (reader.stop // STRIDE - 2) * STRIDE
    for s in ("time", "key", "thread", "sig", "tail"):
        base, dtype = reader.where[s]
        end = base + dtype.itemsize * (reader.stop if s == "tail" else safe)
        lo, hi = -(-base // page) * page, end // page * page
        zero[lo:hi] = hi > lo
    assert 5_000 < reader.stop < 15_000 and zero.any()
    assert not after[zero].any()  # punched
    assert np.array_equal(after[~zero], before[~zero])  # the rest as written
