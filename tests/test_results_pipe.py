"""The worker pool's results pipe is widened (``parallel.PIPE_BYTES``): a stage-A helper's batch of a
large table comes back to the main process in fewer, larger reads."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from nsys2prv.pipeline import parallel


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="F_SETPIPE_SZ is Linux's")
def test_the_pools_results_pipe_holds_pipe_bytes():
    import fcntl

    limit = int(Path("/proc/sys/fs/pipe-max-size").read_text())
    if limit < parallel.PIPE_BYTES:
        pytest.skip(f"pipe-max-size {limit} is under PIPE_BYTES: the default buffer is kept")
    ex = parallel.Local(2)
    try:
        pool = ex._pool(parallel.can_fork())
        queue = pool._result_queue  # type: ignore[attr-defined]
        for conn in (queue._reader, queue._writer):
            assert fcntl.fcntl(conn.fileno(), getattr(fcntl, "F_GETPIPE_SZ", 1032)) == parallel.PIPE_BYTES
        assert pool.submit(sum, list(range(300_000))).result() == sum(range(300_000))  # (2.4 MB pickled)
    finally:
        ex.close(final=True)
