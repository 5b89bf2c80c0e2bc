"""Cache versions are derived from the code (core/versions.py), not bumped by hand."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from nsys2prv import __version__
from nsys2prv.core import versions
from nsys2prv.nsys import cache

PACKAGE = Path(__file__).resolve().parent.parent / "nsys2prv"
# Hand-set version constants still waiting for their one-line change: (file, name) -> where it goes.
PENDING: dict = {}


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    (root / "a.py").write_text("A = 1\n")
    (root / "sub" / "b.py").write_text("B = 2\n")
    return root


def test_the_source_fingerprint_follows_every_source_byte_and_name(tmp_path):
    root = _tree(tmp_path)
    first = versions.source_fingerprint(root)
    assert re.fullmatch(r"[0-9a-f]{16}", first)
    assert versions.source_fingerprint(root) == first  # deterministic
    (root / "notes.txt").write_text("not source")
    (root / "sub" / "b.pyc").write_bytes(b"\0compiled")
    assert versions.source_fingerprint(root) == first  # only *.py counts
    (root / "sub" / "b.py").write_text("B = 3\n")
    changed = versions.source_fingerprint(root)
    assert changed != first
    (root / "sub" / "b.py").rename(root / "sub" / "c.py")  # same bytes, another module
    assert versions.source_fingerprint(root) not in (first, changed)
    (root / "sub" / "c.py").rename(root / "sub" / "b.py")
    assert versions.source_fingerprint(root) == changed


def test_no_source_is_said(tmp_path):
    assert versions.source_fingerprint(tmp_path) == "no-source"


def test_the_code_version_is_the_package_version_and_a_fingerprint():
    v = versions.code_version()
    assert re.fullmatch(re.escape(__version__) + r"\+[0-9a-f]{16}", v)
    assert versions.code_version() is v  # once per process
    libs = versions.library_versions()
    assert libs.startswith("python=") and all(f"{name}=" in libs for name in versions.LIBRARIES)


def test_the_table_cache_is_named_after_the_code_version(tmp_path, monkeypatch):
    assert cache.TABLES_VERSION == versions.code_version()
    src = tmp_path / "r.sqlite"
    src.write_bytes(b"x")
    now = cache.entry_dir(tmp_path / "cache", src)
    assert now == cache.entry_dir(tmp_path / "cache", src)
    monkeypatch.setattr(cache, "TABLES_VERSION", "0.0.0+0000000000000000")  # other code wrote it
    other = cache.entry_dir(tmp_path / "cache", src)
    assert other.parent == now.parent and other != now


def test_no_hand_bumped_cache_version():
    """A module-level ``*_VERSION = <literal>`` is a version somebody has to remember to bump."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).as_posix()
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Constant)
                and re.fullmatch(r"[\w.+-]+", str(node.value.value))
            ):  # a version, not a message
                for t in node.targets:
                    if (
                        isinstance(t, ast.Name)
                        and t.id.endswith("_VERSION")
                        and not t.id.startswith("_")
                        and (rel, t.id) not in PENDING
                    ):
                        found.append(f"{rel}:{node.lineno} {t.id}")
    assert not found, f"derive these from nsys2prv.core.versions.code_version(): {found}"


@pytest.mark.parametrize("module", ["nsys2prv.core.versions"])
def test_versions_module_imports_alone(module):
    import subprocess
    import sys

    res = subprocess.run(
        [sys.executable, "-c", f"import {module}, sys; print('pandas' in sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert res.stdout.strip() == "False"
