"""core.memory: a worker process keeps its heap for its next job, up to a bound; the main process
trims as before."""

from __future__ import annotations

import mmap
import multiprocessing as mp
import os
import platform

import pytest

from nsys2prv.core import memory

GLIBC = platform.libc_ver()[0] == "glibc" and memory._malloc_trim() is not None and memory._resident() is not None


def _child(q) -> None:
    first = memory.keep_heap()
    q.put((first, memory.keep_heap(), memory._kept))


def test_the_main_process_keeps_nothing():
    assert memory.keep_heap() == 0


@pytest.mark.skipif(
    not GLIBC or "fork" not in mp.get_all_start_methods(), reason="glibc's mallopt, /proc/self/statm, fork"
)
def test_a_worker_keeps_the_bound_once_set():
    assert _in_a_child(_child) == (memory.KEPT_RESIDENT, memory.KEPT_RESIDENT, memory.KEPT_RESIDENT)


def _in_a_child(target):
    """What ``target(queue)`` puts, run in a forked process (glibc's settings of a child, not of the
    test process)."""
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=target, args=(q,))
    p.start()
    got = q.get(timeout=60)
    p.join(60)
    assert p.exitcode == 0
    return got


@pytest.mark.skipif(not GLIBC, reason="glibc's malloc_trim, /proc/self/statm")
def test_release_trims_only_past_what_is_kept(monkeypatch):
    calls = []
    monkeypatch.setattr(memory, "_malloc_trim", lambda: lambda pad: calls.append(pad) or 1)
    monkeypatch.setattr(memory, "_resident", lambda: 100)
    memory.release(100)  # (resident in as much as may be kept: nothing trimmed)
    assert calls == []
    memory.release(99)
    assert calls == [0]
    memory.release()  # (keep nothing: always trimmed)
    assert calls == [0, 0]
    monkeypatch.setattr(memory, "_resident", lambda: None)  # (unknown: trimmed)
    memory.release(1 << 30)
    assert calls == [0, 0, 0]


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="Linux's /proc/self/statm")
def test_resident_counts_the_pages_written():
    size = 64 << 20
    before = memory._resident()
    block = mmap.mmap(-1, size)  # (anonymous: not resident until written)
    untouched = memory._resident()
    for at in range(0, size, mmap.PAGESIZE):
        block[at] = 1
    written = memory._resident()
    block.close()
    assert before is not None and untouched is not None and written is not None
    assert untouched - before < size // 4
    assert written - untouched >= size - (1 << 20)
    assert memory._resident() <= written - size + (1 << 20)  # (unmapped: no longer resident)


def _main_heap_child(q) -> None:
    got = memory.main_heap()
    was = memory._main_set
    memory.settle_heap()
    q.put((got, was, memory._main_set))


@pytest.mark.skipif(not GLIBC or "fork" not in mp.get_all_start_methods(), reason="glibc's mallopt, fork")
@pytest.mark.parametrize("user", [None, "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES"])
def test_the_main_process_sets_glibcs_heap_for_stage_a_unless_the_user_did(monkeypatch, user):
    for k in memory.USER_MALLOC:
        monkeypatch.delenv(k, raising=False)
    if user:
        monkeypatch.setenv(user, "1")
    assert _in_a_child(_main_heap_child) == (user is None, user is None, False)  # (set for stage A, then settled)
