"""Shared test helpers: paths to real data, running the CLI in-process, trace checks."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

# The normalised-table cache (and .nsys-rep exports) of the test session: never the user's; removed
# when the session's process ends (not a process forked from it)
_CACHE, _SESSION = tempfile.mkdtemp(prefix="nsys2prv-test-cache-"), os.getpid()
os.environ["XDG_CACHE_HOME"] = _CACHE
atexit.register(lambda: os.getpid() == _SESSION and shutil.rmtree(_CACHE, ignore_errors=True))

from paraver_validator import load_trace, validate_trace

from nsys2prv.cli import main

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
CLOVERLEAF = SHARED / "cloverleaf-cuda-nsys2024.5.sqlite"
MPI4 = ROOT / "tests" / "data" / "mpi4"


def need(path: Path) -> Path:
    """Real data the suite depends on: skipped on a bare checkout, a failure in CI (except the
    CloverLeaf export, which is not redistributable: never in CI, always a skip saying so)."""
    if not path.exists():
        if path == CLOVERLEAF:
            pytest.skip(
                f"the real CloverLeaf CUDA export (Nsight Systems 2024.5; someone else's, not "
                f"redistributable) is not at {path}: the same checks run on the export of its shape "
                "that tests/nsysgen.py generates (cloverleaf_like)"
            )
        if os.environ.get("CI"):
            pytest.fail(f"test data missing in CI: {path}")
        pytest.skip(f"test data not available: {path}")
    return path


@pytest.fixture(scope="session", params=["generated", "real"], ids=["generated-cloverleaf", "real-cloverleaf"])
def clover_export(request, tmp_path_factory) -> Path:
    """A CloverLeaf CUDA export, once per case: ``generated`` (tests/nsysgen.py's ``cloverleaf_like``,
    always) and ``real`` (``CLOVERLEAF``, skipped naming the file when absent: ``need``).  A test
    tells them apart with ``src == CLOVERLEAF``; tests must not write to it."""
    if request.param == "real":
        return need(CLOVERLEAF)
    from nsysgen import cloverleaf_like

    return cloverleaf_like(tmp_path_factory.mktemp("clover-generated") / "clover-generated.sqlite")


def convert(args: list, expect_ok: bool = True):
    """Run `nsys2prv ARGS` in-process; returns (exit code, output text)."""
    res = CliRunner().invoke(main, ["-q", *[str(a) for a in args]], catch_exceptions=False)
    if expect_ok and res.exit_code != 0:
        raise AssertionError(f"nsys2prv {args} failed ({res.exit_code}): {res.output}")
    return res.exit_code, res.output


def convert_valid(args: list, out: Path):
    """Convert, validate strictly, and return (trace, summary dict)."""
    convert([*args, out])
    trace = validate_trace(str(out))
    summary = json.loads(Path(f"{out}.summary.json").read_text())
    return trace, summary


__all__ = ["CLOVERLEAF", "MPI4", "ROOT", "convert", "convert_valid", "load_trace", "need", "validate_trace"]


def outputs_text(out: Path) -> dict[str, str]:
    """A conversion's trace, POP and summary files as text, the JSON without the keys that name paths
    (``outputs``, ``label``, ``output``): equal whenever two runs translated the same."""
    files = {}
    for ext in (".prv", ".pcf", ".row", ".pop.json", ".summary.json"):
        text = Path(f"{out}{ext}").read_text()
        if ext.endswith(".json"):
            d = json.loads(text)
            for key in ("outputs", "label", "output"):
                d.pop(key, None)
            text = json.dumps(d, sort_keys=True)
        files[ext] = text
    return files
