"""Bytecode for the benchmarks (``bench_convert.py``, ``bench_floor.py``): run what users run.

A ``pip install`` writes every module's bytecode; a checkout run with ``PYTHONDONTWRITEBYTECODE=1``
(as some machines set) or an editable install whose directory is not writable compiles nsys2prv's
~100 modules from source on every run (0.15 s of CPU).  So the benchmarks run their children with a
private ``PYTHONPYCACHEPREFIX`` (``PYTHONDONTWRITEBYTECODE`` unset), warmed once by a run whose
figures are thrown away: the interpreter then reads the stack's and nsys2prv's bytecode from there
(with a prefix set it looks nowhere else), as an installed copy would.  ``--no-bytecode`` runs them
with the environment as it is instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

PRIVATE = "private PYTHONPYCACHEPREFIX, warmed once"
AS_IS = "as the environment says (PYTHONDONTWRITEBYTECODE, PYTHONPYCACHEPREFIX)"


@contextmanager
def bytecode(on: bool, warm: list[str], env: dict | None = None) -> Iterator[str]:
    """Within: ``os.environ`` set for children that read a private bytecode prefix (``on``), after
    ``warm`` (a command) ran once with it, its output discarded; yields what the figures are of."""
    if not on:
        yield AS_IS
        return
    prefix = tempfile.mkdtemp(prefix="bench-pycache-")
    try:
        with environ_restored("PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE"):
            os.environ["PYTHONPYCACHEPREFIX"] = prefix
            os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
            subprocess.run(warm, check=True, stdout=subprocess.DEVNULL, env={**os.environ, **(env or {})})
            yield PRIVATE
    finally:
        shutil.rmtree(prefix, ignore_errors=True)


@contextmanager
def environ_restored(*names: str) -> Iterator[None]:
    """Within: change the variables ``names`` of ``os.environ`` at will; after: each as it was (or unset)."""
    saved = {k: os.environ.get(k) for k in names}
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
