"""mypy checks the declared columns: a translator takes its kind's rows as ``core.columns.Frame[<the
kind's Literal>]``, so a column name it misspells or its kind does not declare is a type error."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from nsys2prv import kinds
from nsys2prv.core import columns as C

ROOT = Path(__file__).resolve().parent.parent

GOOD = """
import numpy as np
from nsys2prv.core import columns as C
from nsys2prv.core.columns import Frame, optional
from nsys2prv.translate import cuda


def reads(df: Frame[C.CudaApi], gpu: Frame[C.Memcpy]) -> int:
    calls = df[df["corr"].to_numpy(np.int64) > 0]  # a row selection keeps the kind's columns
    lane = optional(gpu, "lane")
    return len(calls["name"]) + len(gpu["copy_kind"]) + (0 if lane is None else 1)


def serves(gpu: Frame[C.Memcpy], ctx, out) -> int:
    return cuda.memset(gpu, ctx, out)  # a table with more columns serves where fewer are read
"""

NO_COLUMN = r'No overload variant of "__getitem__" of "Frame" matches argument type "str"'
# (snippet, what mypy must say about its last line)
BAD = [
    ('def typo(df: Frame[C.CudaApi]) -> object:\n    return df["nmae"]', NO_COLUMN),
    (
        "def undeclared(df: Frame[C.CudaApi]) -> object:\n    return df['bytes']",
        NO_COLUMN,
    ),
    (
        "def selected(df: Frame[C.Osrt]) -> object:\n    return df[np.ones(len(df), bool)]['tid'], "
        "df[np.ones(len(df), bool)]['corr']",
        NO_COLUMN,
    ),
    (
        "def short(df: Frame[C.Memset], ctx, out) -> int:\n    return cuda.memcpy(df, ctx, out)",
        r'Argument 1 to "memcpy" has incompatible type "Frame\[Literal\[',
    ),
]


def _mypy(tmp_path: Path, text: str) -> list[str]:
    """mypy's error lines on ``text`` (a module importing the package), checked with the project's settings."""
    snippet = tmp_path / "snippet.py"
    snippet.write_text(text)
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir",
         str(tmp_path / "cache"), str(snippet)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert run.returncode in (0, 1), run.stdout + run.stderr
    return [ln for ln in run.stdout.splitlines() if ": error:" in ln]


def test_mypy_finds_a_misread_column(tmp_path):
    pytest.importorskip("mypy", reason="mypy is a dev dependency: pip install -e .[test]")
    head = "import numpy as np\nfrom nsys2prv.core import columns as C\nfrom nsys2prv.core.columns import Frame\n"
    head += "from nsys2prv.translate import cuda\n"
    lines = [GOOD, head]
    where = []
    for code, _ in BAD:
        where.append(sum(part.count("\n") for part in lines) + 3 + code.count("\n"))  # its last line
        lines.append("\n\n" + code + "\n")
    errors = _mypy(tmp_path, "".join(lines))
    by_line: dict[int, list[str]] = {}
    for e in errors:
        by_line.setdefault(int(e.split(":")[1]), []).append(e)
    assert sorted(by_line) == where, errors  # one error line per bad snippet, none in GOOD
    for line, (_, said) in zip(where, BAD):
        assert any(re.search(said, e) for e in by_line[line]), by_line[line]


def test_kinds_declare_what_the_types_name():
    """Each kind's declared columns are its ``core.columns`` Literal's names, and each of its
    translators takes rows typed by a Literal whose columns the kind declares."""
    for kind in kinds.KINDS:
        declared = [c for c, _ in kind.columns]
        for t in kind.translators:
            ann = t.fn.__annotations__["df"]
            m = re.fullmatch(r"Frame\[C\.(\w+)\]", ann)
            assert m, f"{kind.name}: {t.fn.__name__} takes {ann}, not a Frame of a declared kind"
            assert set(C.names(getattr(C, m.group(1)))) <= set(declared), (kind.name, t.fn.__name__)
    assert dict(next(k for k in kinds.KINDS if k.name == "memcpy").columns) == {
        **dict.fromkeys(["start", "end", "gpid", "device", "stream", "corr", "gpu", "bytes", "copy_kind"], kinds.INT)
    }


@pytest.mark.parametrize(
    "module, read, misread",
    [
        ("translate/cuda.py", 'Names.of(df["demangled"])', 'Names.of(df["demangle"])'),  # a typo
        ("translate/host.py", 'df["peer"].to_numpy(np.int64)', 'df["bytes"].to_numpy(np.int64)'),  # not MPI's
        ("translate/cpu_side.py", 'df["sched_in"].to_numpy(bool)', 'df["lane"].to_numpy(bool)'),  # optional
    ],
)
def test_mypy_finds_a_misread_column_in_the_translators(tmp_path, module, read, misread):
    """The package's own translators are checked: one column read changed in a copy is a mypy error
    on that line (the copy unchanged: none)."""
    pytest.importorskip("mypy", reason="mypy is a dev dependency: pip install -e .[test]")
    text = (ROOT / "nsys2prv" / module).read_text()
    assert text.count(read) == 1
    assert _mypy(tmp_path, text) == []
    line = text[: text.index(read)].count("\n") + 1
    errors = _mypy(tmp_path, text.replace(read, misread))
    assert [int(e.split(":")[1]) for e in errors] == [line] and re.search(NO_COLUMN, errors[0]), errors
