"""Issue 40 (CPU per row): the pool's results pipe reads each message straight into one buffer of its
size (``parallel.whole_messages``), not through CPython's buffer-of-the-rest reads and a BytesIO."""

from __future__ import annotations

import multiprocessing as mp
import os
import struct
import threading

import numpy as np
import pytest

from nsys2prv.pipeline import parallel


def _pipe():
    reader, writer = mp.Pipe(duplex=False)
    parallel.whole_messages(reader)
    assert "_recv" in vars(reader)  # (this connection's own reads)
    return reader, writer


def test_a_message_larger_than_the_pipe_arrives_whole():
    reader, writer = _pipe()
    big = {"a": np.arange(3_000_000, dtype=np.int64), "b": "x" * 70_000, "n": 7}  # (24 MB: many pipe reads)
    t = threading.Thread(target=writer.send, args=(big,))
    t.start()
    got = reader.recv()
    t.join()
    assert got["n"] == 7 and got["b"] == big["b"] and np.array_equal(got["a"], big["a"])
    writer.send_bytes(b"")  # (an empty message)
    assert reader.recv_bytes() == b""
    writer.send(("small", 1))
    assert reader.recv() == ("small", 1)
    reader.close()
    writer.close()


def test_what_was_received_is_kept_when_the_buffer_takes_the_next_message():
    reader, writer = _pipe()
    sent = [np.full(500_000, k, np.int64) for k in (1, 2)] + [b"z" * 300, np.full(900_000, 3, np.int64)]
    t = threading.Thread(
        target=lambda: [writer.send_bytes(x) if isinstance(x, bytes) else writer.send(x) for x in sent]
    )
    t.start()
    got = [reader.recv(), reader.recv(), reader.recv_bytes(), reader.recv()]  # (the last: a larger buffer)
    t.join()
    assert [int(a[0]) for a in (got[0], got[1], got[3])] == [1, 2, 3]
    assert got[2] == b"z" * 300 and all(np.array_equal(a, b) for a, b in zip(got[:2] + got[3:], sent[:2] + sent[3:]))
    reader.close()
    writer.close()


def test_the_end_of_the_pipe_is_told_as_before():
    reader, writer = _pipe()
    writer.close()
    with pytest.raises(EOFError):  # (nothing more: the pool's thread ends)
        reader.recv()
    reader.close()
    reader, writer = _pipe()
    os.write(writer.fileno(), struct.pack("!i", 100) + b"only ten b")  # (a message cut short)
    writer.close()
    with pytest.raises(OSError, match="end of file during message"):
        reader.recv_bytes()
    reader.close()


def test_the_pools_results_come_through_it():
    local = parallel.Local(2)
    try:
        got = local.map(np.arange, [5, 2_000_000])
        assert [len(x) for x in got] == [5, 2_000_000] and int(got[1][-1]) == 1_999_999
        assert "_recv" in vars(local.pool._result_queue._reader)
    finally:
        local.close(final=True)
