"""numba imported without SciPy and PyYAML (``core/numba_import.py``): neither is imported by nsys2prv's
kernels' module, both import as usual afterwards, and a ``.numba_config.yaml`` is still read."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

CODE = """
import sys
import nsys2prv.core.jit
from numba.core import config
print("scipy" in sys.modules, "yaml" in sys.modules, config._HAVE_YAML, config.BOUNDSCHECK)
import scipy, yaml  # (taken back: importable as before)
print(scipy.__name__, yaml.__name__)
"""


def _run(cwd) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CODE)], cwd=cwd, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


def test_numba_without_scipy_and_yaml(tmp_path):
    assert _run(tmp_path) == ["False False False None", "scipy yaml"]


def test_a_numba_config_file_is_read_as_without_us(tmp_path):
    (tmp_path / ".numba_config.yaml").write_text("boundscheck: 1\n")
    assert _run(tmp_path) == ["False True True 1", "scipy yaml"]
