"""A pool process killed while writing its result must not leave the pool's thread in this process
waiting for the rest of the message: ``concurrent.futures`` joins that thread at exit, and a program
whose conversion failed (workers SIGKILLed by ``kill_pool`` / ``Local.close(final=True)``) hung there."""

from __future__ import annotations

import os
import struct
import sys
import threading
import time

import pytest

from nsys2prv.core import workers
from nsys2prv.pipeline.parallel import Local

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork and SIGKILL: Linux")


def _half_written_result(flag: str) -> None:
    """In a pool process: the first bytes of a 1 MB result message, then wait to be killed."""
    frame = sys._getframe()
    while frame is not None and "result_queue" not in frame.f_locals:
        frame = frame.f_back
    assert frame is not None
    fd = frame.f_locals["result_queue"]._writer.fileno()
    os.write(fd, struct.pack("!i", 1 << 20) + b"\x80\x04partial")
    open(flag, "w").close()
    time.sleep(600)


def _wait_for(path: str) -> None:
    while not os.path.exists(path):
        time.sleep(0.01)


def test_kill_pool_ends_the_pools_thread_after_a_half_written_result(tmp_path):
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    flag = str(tmp_path / "written")
    pool = ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("fork"))
    future = pool.submit(_half_written_result, flag)
    _wait_for(flag)
    thread = pool._executor_manager_thread
    assert thread is not None and thread.is_alive()
    workers.kill_pool(pool)
    thread.join(60)  # (not a speed limit: without ``unblock`` it never ends)
    assert not thread.is_alive()
    with pytest.raises(Exception):
        future.result(0)


def test_a_final_close_ends_the_local_pools_thread(tmp_path):
    flag = str(tmp_path / "written")
    ex = Local(2)
    pool = ex._pool(True)
    pool.submit(_half_written_result, flag)
    _wait_for(flag)
    thread = pool._executor_manager_thread
    assert thread is not None
    ex.close(final=True)
    thread.join(60)
    assert not thread.is_alive()
    assert ex._closed == [] and ex._workers == []


def test_unblock_leaves_a_pool_whose_thread_ended_alone():
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("fork"))
    ends = workers.results_end(pool)
    assert pool.submit(abs, -3).result() == 3
    pool.shutdown(wait=True)
    before = threading.active_count()
    workers.unblock(ends)
    assert threading.active_count() == before
