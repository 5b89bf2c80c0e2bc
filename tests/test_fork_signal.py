"""A signal that arrives while the command forks one of its processes is not lost, and says nothing but
the command's one line: Python runs a handler inside the fork's hooks (logging's ``after_in_parent``),
where it reports the exception as ignored and drops it -- the command then ran on to the end and exited
0 (seen in the faults tier under load), and later printed a traceback beside its one line (the CI run of
stop 52).  ``errors.signals_held`` holds the stop signals while the command forks: the signal arrives
after the fork, in the command's own code -- also in a process with other threads, where the kernel may
deliver it to one of them (a signal mask would not hold it).  Each fork of the command: its early
processes (the lifetimes, the background compiler: ``workers.start_reporter``, which ends the process it
started when the signal is raised) and its pools (``workers.forked``, ``parallel.Local``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "tests" / "data" / "mpi4" / "rank0.sqlite"

# a hook that signals this process inside the fork's hooks, as a signal arriving then does
SCRIPT = """
import os, signal, sys, time
from nsys2prv.core.errors import Interrupted, catch_signals
catch_signals()

def hit():
    os.kill(os.getpid(), signal.SIGTERM)
    t = time.monotonic() + 5
    while time.monotonic() < t:  # (until the handler has run, here, inside the hook)
        pass

def slow(send, parent):  # (a reporter still running when the signal is raised)
    time.sleep(60)

os.register_at_fork(after_in_parent=hit)
what = sys.argv[1]
if what.endswith("-thread"):  # (a process with another thread: the kernel may deliver the signal to it)
    import threading
    threading.Thread(target=threading.Event().wait, daemon=True).start()
    what = what[: -len("-thread")]
try:
    if what == "early":
        from nsys2prv.pipeline import early
        early.start([sys.argv[2]], None, None)
    elif what == "compiler":
        from nsys2prv.pipeline.warmup import Precompile
        Precompile([])
    elif what == "reporter":
        from nsys2prv.core.workers import start_reporter
        start_reporter(slow)
    elif what == "forked":
        from nsys2prv.core.workers import in_fork
        in_fork(int, 1)
    else:
        from nsys2prv.pipeline.parallel import Local
        Local(2).map(abs, [1, -2, 3])
except Interrupted as exc:
    print("interrupted", exc.signum == signal.SIGTERM)
    if what in ("early", "compiler", "reporter"):  # (no handle on the process came back: ended, not left running)
        import multiprocessing
        print("children", len(multiprocessing.active_children()))
    sys.exit(3)
print("ran on")
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the early processes fork on Linux only")
@pytest.mark.parametrize("what", ["early", "compiler", "reporter", "forked", "pool", "pool-with-a-thread"])
def test_a_signal_during_a_fork_stops_the_command_and_says_nothing_else(what):
    res = subprocess.run(
        [sys.executable, "-c", SCRIPT, what, str(REPORT)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    # held while forking: not run inside the hook, so nothing is reported as ignored
    assert "Exception ignored" not in res.stderr and "Traceback" not in res.stderr, res.stderr
    ended = ["children", "0"] if what in ("early", "compiler", "reporter") else []
    assert res.stdout.split() == ["interrupted", "True", *ended] and res.returncode == 3, res.stderr
