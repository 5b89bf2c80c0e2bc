"""Issue 40: ``core.workers.forked`` yields once every call has started in its process.

The pool hands each call to its process through its own threads in the calling process, which need
the GIL; a caller that went on into work holding the GIL (a numba kernel, a long C call) kept them
from it, and the call started only once that work was done: the merge's forked part ran after this
process's part instead of beside it."""

from __future__ import annotations

import time

from nsys2prv.core.workers import forked, in_fork


def _started_at() -> float:
    return time.time()


def test_every_call_has_started_when_the_block_begins():
    with forked([(_started_at, ()), (_started_at, ())]) as futures:
        entered = time.time()
        _ = 3**3_000_000  # (a long C call holding the GIL: the pool's threads could not hand a call on)
        held_until = time.time()
        started = [f.result() for f in futures]
    # started with the block (each call notes its time just after it says it started), not once the
    # GIL was free again: before half the long call (~0.8 s here) had passed
    assert held_until - entered > 0.05 and all(s < entered + (held_until - entered) / 2 for s in started), (
        started,
        entered,
        held_until,
    )


def test_an_error_in_a_forked_call_reaches_the_caller():
    def fail():
        raise ValueError("bad")

    try:
        in_fork(fail)
    except ValueError as exc:
        assert str(exc) == "bad"
    else:
        raise AssertionError("the error was not raised")
