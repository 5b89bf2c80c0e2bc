"""A signal that arrives while the command forks one of its early processes is not lost: Python runs
the handler inside the fork's hooks (logging's ``after_in_parent``), where it reports the exception
and drops it, and the command then ran on to the end and exited 0 (seen in the faults tier under
load).  ``errors.raise_caught`` raises it again right after the fork."""

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

os.register_at_fork(after_in_parent=hit)
what = sys.argv[1]
try:
    if what == "early":
        from nsys2prv.pipeline import early
        early.start([sys.argv[2]], None, None)
    else:
        from nsys2prv.pipeline.warmup import Precompile
        Precompile([])
except Interrupted as exc:
    print("interrupted", exc.signum == signal.SIGTERM)
    sys.exit(3)
print("ran on")
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the early processes fork on Linux only")
@pytest.mark.parametrize("what", ["early", "compiler"])
def test_a_signal_during_an_early_fork_stops_the_command(what):
    res = subprocess.run(
        [sys.executable, "-c", SCRIPT, what, str(REPORT)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert "Exception ignored" in res.stderr  # (the hook's exception, dropped by Python)
    assert res.stdout.split() == ["interrupted", "True"] and res.returncode == 3, res.stderr
