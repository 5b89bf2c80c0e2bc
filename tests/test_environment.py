"""The NSYS2PRV_* variables the conversion reads: one module reads them (core/environment.py), one table
in docs/development.md says what each is for."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nsys2prv.core.environment import Environment, environment

ROOT = Path(__file__).resolve().parent.parent
VARIABLES = ("NSYS2PRV_IN_PROCESS", "NSYS2PRV_NO_ADBC", "NSYS2PRV_KERNELS", "NSYS2PRV_TIMING", "NSYS2PRV_CACHE_MAX")
# read where the thing is looked up (a user setting shared with the profiling wrapper: docs/profiling.md)
LOOKUPS = {"NSYS2PRV_IMPORTER": "nsys2prv/nsys/export.py"}


def test_the_record_reads_each_variable(monkeypatch):
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert environment() == Environment(in_process=False, no_adbc=False, kernels=None, timing=False)
    monkeypatch.setenv("NSYS2PRV_IN_PROCESS", "1")
    monkeypatch.setenv("NSYS2PRV_NO_ADBC", "yes")
    monkeypatch.setenv("NSYS2PRV_KERNELS", "compiled")
    monkeypatch.setenv("NSYS2PRV_TIMING", "1")
    monkeypatch.setenv("NSYS2PRV_CACHE_MAX", "500M")
    assert environment() == Environment(
        in_process=True, no_adbc=True, kernels="compiled", timing=True, cache_max="500M"
    )
    monkeypatch.setenv("NSYS2PRV_KERNELS", "python")
    assert environment().kernels == "python"


@pytest.mark.parametrize("value", ["", "0", "Python", "numba"])
def test_values_other_than_the_documented_ones_mean_the_default(monkeypatch, value):
    monkeypatch.setenv("NSYS2PRV_KERNELS", value)
    monkeypatch.setenv("NSYS2PRV_IN_PROCESS", value)
    assert environment().kernels is None and environment().in_process is False


def test_no_other_module_reads_an_nsys2prv_variable():
    readers = {}
    for path in sorted((ROOT / "nsys2prv").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for name in re.findall(r"\b(NSYS2PRV_[A-Z_]+)\b", path.read_text(encoding="utf-8")):
            readers.setdefault(name, set()).add(rel)
    assert readers.pop("NSYS2PRV_IMPORTER", set()) <= {LOOKUPS["NSYS2PRV_IMPORTER"], "nsys2prv/core/environment.py"}
    read_here = {n for n, files in readers.items() if "nsys2prv/core/environment.py" in files}
    assert read_here == set(VARIABLES)
    # elsewhere they may be named in docstrings and comments, never looked up
    for name, files in readers.items():
        for rel in files - {"nsys2prv/core/environment.py"}:
            text = (ROOT / rel).read_text(encoding="utf-8")
            assert not re.search(rf"environ(\.get)?\W+[\"']{name}", text), f"{rel} reads {name}: use environment()"


def test_the_development_doc_lists_every_variable():
    doc = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    table = doc.split("## Environment variables", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `(NSYS2PRV_[A-Z_]+)", table, re.M))
    assert listed == set(VARIABLES)
