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
