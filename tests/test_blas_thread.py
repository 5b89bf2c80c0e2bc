"""Issue 40 (the cold run's margin): the command imports numpy with one OpenBLAS thread
(``launch.one_blas_thread``): OpenBLAS's thread pool spun beside the imports, on the core the early
lifetimes process and a first run's compiler use."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _threads_after_blas(env: dict) -> tuple[int, str | None]:
    code = (
        "import os; from nsys2prv.launch import one_blas_thread; one_blas_thread(); "
        "print(len(os.listdir('/proc/self/task')), os.environ.get('OPENBLAS_NUM_THREADS'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return int(out[0]), None if out[1] == "None" else out[1]


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or (os.cpu_count() or 1) < 2,
    reason="OpenBLAS starts its threads only on a machine of 2 or more cores (Linux: /proc/self/task)",
)
def test_the_command_imports_numpy_with_one_blas_thread_and_leaves_the_environment():
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    env["PYTHONPATH"] = str(ROOT)
    assert _threads_after_blas(env) == (1, None)  # one thread, and the children see no such variable
    env["OPENBLAS_NUM_THREADS"] = "2"  # the user's choice is kept: numpy's own thread and OpenBLAS's one
    assert _threads_after_blas(env) == (2, "2")
