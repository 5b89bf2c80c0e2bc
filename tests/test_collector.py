"""The garbage collector held off while the command imports its stack (``core/collector.py``): no
collection walks pandas', pyarrow's and numba's objects as they arrive, they end in the permanent
generation, the collector is on again for the run, in the command and in a process forked meanwhile."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run(code: str, *args: str) -> subprocess.CompletedProcess:
    # (a fresh interpreter: the test's own collector is left alone)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True)


def test_hold_release_and_a_fork_in_between():
    run = _run(
        """
        import gc, os
        from nsys2prv.core import collector
        collector.release()  # never held: nothing
        assert gc.isenabled() and gc.get_freeze_count() == 0
        collector.hold()
        assert not gc.isenabled()
        kept = [[i] for i in range(1000)]
        pid = os.fork()
        if pid == 0:  # (an early process: forked while held, releases first thing)
            collector.release()
            os._exit(0 if gc.isenabled() and gc.get_freeze_count() >= 1000 else 1)
        assert os.waitpid(pid, 0)[1] == 0
        assert not gc.isenabled()  # (the child's release is its own)
        collector.release()
        frozen = gc.get_freeze_count()
        assert gc.isenabled() and frozen >= 1000
        collector.release()  # once only
        assert gc.get_freeze_count() == frozen
        gc.disable()
        collector.hold()  # off already (someone else's choice): release leaves it off
        collector.release()
        assert not gc.isenabled() and gc.get_freeze_count() == frozen
        print("ok")
        """
    )
    assert run.returncode == 0 and run.stdout == "ok\n", run.stderr


def test_the_command_imports_without_a_full_collection(tmp_path):
    """The console script up to the conversion: pandas, pyarrow and numba imported, not one full
    collection on the way (two without the hold), all of it frozen, the collector on."""
    missing = tmp_path / "none.sqlite"
    run = _run(
        """
        import gc, os, sys
        from nsys2prv import launch
        from nsys2prv.core import collector
        full = gc.get_stats()[2]["collections"]
        real, command = collector.release, os.getpid()

        def release():
            real()
            if os.getpid() != command:  # (the early process, forked before pandas is imported)
                return
            heavy = all(m in sys.modules for m in ("pandas", "pyarrow", "numba"))
            print(heavy, gc.isenabled(), gc.get_stats()[2]["collections"] - full, gc.get_freeze_count() > 100_000)

        collector.release = release
        sys.argv[0] = "nsys2prv"
        launch.entry()
        """,
        str(missing),
        str(tmp_path / "out"),
    )
    assert run.returncode == 2
    assert run.stdout == "True True 0 True\n"
    assert run.stderr == f"nsys2prv: error: {missing}: file not found\n"
