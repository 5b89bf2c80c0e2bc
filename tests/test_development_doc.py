"""docs/development.md draws the path of one kernel through the code: every function it names exists
(a renamed function fails here until the drawing follows)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "development.md"
SECTION = "## One kernel, from SQLite to its .prv line and its POP contribution"
FILE_SUFFIXES = {"py", "json", "csv", "md", "tex", "prv", "pcf", "row", "npy", "sqlite", "cfg"}


def defined_names() -> set[str]:
    """Every function, class, module, package and assigned (also annotated) name of the package."""
    names: set[str] = set()
    for path in (ROOT / "nsys2prv").rglob("*.py"):
        names.add(path.stem)
        names.update(path.relative_to(ROOT).parent.parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
    return names


def drawing() -> str:
    text = DOC.read_text(encoding="utf-8")
    assert SECTION in text, f"{DOC} lost its section '{SECTION}'"
    body = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    return "\n".join(line for line in body.splitlines() if line.startswith("    "))  # the drawing itself


def named_in(text: str) -> set[str]:
    """Dotted names (their last part), and plain names with an underscore (snake_case or private)."""
    out = set()
    for m in re.finditer(r"(?<![\w./<-])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)", text):
        last = m.group(1).rsplit(".", 1)[1]
        if last not in FILE_SUFFIXES:
            out.add(last)
    out.update(re.findall(r"(?<![\w.\-])(_?[a-z][a-z0-9]*_[a-z0-9_]+|_[a-z]\w*)(?![\w.])", text))
    return out


def test_every_function_the_drawing_names_exists():
    names = named_in(drawing())
    assert len(names) >= 40, f"the drawing names too few functions to be the path: {sorted(names)}"
    missing = sorted(names - defined_names())
    assert not missing, f"docs/development.md names what the code does not define: {missing}"


def test_the_name_finder():
    text = "    stages.scan_report -> _scan (a .nsys-rep; OUT.pop.json) Model.index_threads interval_frame"
    assert named_in(text) == {"scan_report", "_scan", "index_threads", "interval_frame"}
