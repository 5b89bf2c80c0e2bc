"""core.memory: a worker process keeps its heap for its next job, up to a bound; the main process
trims as before."""

from __future__ import annotations

import multiprocessing as mp
import platform

import pytest

from nsys2prv.core import memory

GLIBC = platform.libc_ver()[0] == "glibc" and memory._malloc_trim() is not None and memory._free_heap() is not None


def _child(q) -> None:
    first = memory.keep_heap()
    q.put((first, memory.keep_heap(), memory._kept))


def test_the_main_process_keeps_nothing():
    assert memory.keep_heap() == 0


@pytest.mark.skipif(not GLIBC or "fork" not in mp.get_all_start_methods(), reason="glibc's mallopt/mallinfo2, fork")
def test_a_worker_keeps_the_bound_once_set():
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(q,))
    p.start()
    got = q.get(timeout=60)
    p.join(60)
    assert p.exitcode == 0
    assert got == (memory.KEPT_FREE, memory.KEPT_FREE, memory.KEPT_FREE)


@pytest.mark.skipif(not GLIBC, reason="glibc's malloc_trim and mallinfo2")
def test_release_trims_only_past_what_is_kept(monkeypatch):
    calls = []
    monkeypatch.setattr(memory, "_trim", lambda pad: calls.append(pad) or 1)
    monkeypatch.setattr(memory, "_free_heap", lambda: 100)
    memory.release(100)  # (as much free as may be kept: nothing trimmed)
    assert calls == []
    memory.release(99)
    assert calls == [0]
    memory.release()  # (keep nothing: always trimmed)
    assert calls == [0, 0]
    monkeypatch.setattr(memory, "_free_heap", lambda: None)  # (unknown: trimmed)
    memory.release(1 << 30)
    assert calls == [0, 0, 0]
