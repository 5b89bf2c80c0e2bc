"""The example traces whose views BSC's paramedir answered, and how those answers are stored.

``scripts/record_oracles.py`` converts each case, runs every shipped analysis view on it with paramedir
and writes the histograms to ``tests/oracles/paramedir.json`` (with paramedir's version, source commit
and command); ``tests/test_oracles.py`` converts the same cases without paramedir and holds OUT.pop.json
and the in-repo view evaluator (``tests/view_eval.py``) to the recorded answers.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ORACLES = ROOT / "tests" / "oracles" / "paramedir.json"
ANALYSIS = ROOT / "nsys2prv" / "cfgs" / "analysis"
MPI4 = ROOT / "tests" / "data" / "mpi4"


def _mpi4(work: Path) -> list[str]:
    return ["-t", "mpi,nvtx,osrt", "-m", *sorted(str(p) for p in MPI4.glob("rank*.sqlite"))]


def _gpu_shared(work: Path) -> list[str]:
    from test_view_semantics import shared_gpu_rank

    return ["-m", *[shared_gpu_rank(work / f"rank{r}.sqlite", r) for r in range(8)]]


def _clover_generated(work: Path) -> list[str]:
    from nsysgen import cloverleaf_like

    return [str(cloverleaf_like(work / "clover-generated.sqlite"))]


# case -> (what it is, the conversion's arguments as recorded, a function making them in a directory)
CASES = {
    "mpi4": (
        "the Quick start: the 4 real MPI reports of tests/data/mpi4",
        "nsys2prv -t mpi,nvtx,osrt -m tests/data/mpi4/rank*.sqlite OUT",
        _mpi4,
    ),
    "gpu-shared": (
        "8 generated ranks on 2 hosts sharing one GPU each (test_view_semantics.shared_gpu_rank)",
        "nsys2prv -m rank0.sqlite ... rank7.sqlite OUT",
        _gpu_shared,
    ),
    "clover-generated": (
        "the generated CloverLeaf-shaped CUDA export (tests/nsysgen.py cloverleaf_like)",
        "nsys2prv clover-generated.sqlite OUT",
        _clover_generated,
    ),
}


def views() -> list[str]:
    """Every shipped analysis view (name without .cfg)."""
    return sorted(p.stem for p in ANALYSIS.glob("*.cfg"))


def convert(case: str, work: Path) -> Path:
    """Convert ``case`` into ``work``; returns OUT (OUT.prv, OUT.pop.json beside it)."""
    work.mkdir(parents=True, exist_ok=True)
    args = CASES[case][2](work)
    out = work / "out" / case
    res = subprocess.run(
        [sys.executable, "-m", "nsys2prv", "-q", *args, str(out)], capture_output=True, text=True, cwd=ROOT
    )
    if res.returncode != 0:
        raise RuntimeError(f"{case}: nsys2prv failed: {res.stdout}{res.stderr}")
    return out


def parse_histogram(text: str) -> dict:
    """paramedir's histogram text -> {"columns": [...], "rows": [[label, [values]]]} (the statistics
    rows below the blank line left out)."""
    lines = text.splitlines()
    if not lines:
        return {"columns": [], "rows": []}
    columns = [c.strip() for c in lines[0].split("\t")[1:] if c.strip()]
    rows = []
    for line in lines[1:]:
        if not line.strip():
            break
        label, *vals = line.split("\t")
        values = [float(v) for v in vals if v.strip()]
        rows.append([label, [int(v) if v == int(v) else v for v in values]])
    return {"columns": columns, "rows": rows}


def histogram_text(h: dict) -> str:
    """A recorded histogram back in paramedir's text layout (what scripts/check_views.py reads)."""
    lines = ["\t" + "".join(f"{c}\t" for c in h["columns"])]
    lines += [label + "\t" + "".join(f"{v:.2f}\t" for v in values) for label, values in h["rows"]]
    return "\n".join(lines) + "\n\n"


def load() -> dict:
    return json.loads(ORACLES.read_text())
