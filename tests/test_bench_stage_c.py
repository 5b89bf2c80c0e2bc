"""scripts/bench_stage_c.py measures what it names: the tables' load of a report of one slice and of
a sliced report's slices (a script nothing ran stopped working when the sliced path stopped calling
``stages.read_whole``), from the Parquet cache and, with ``--no-cache``, from the run's own tables."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import sys
from pathlib import Path

import pytest

from nsys2prv.pipeline import slices

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("bench_stage_c", ROOT / "scripts" / "bench_stage_c.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


SCRIPT = _script()
TIMED = [(module, name) for module, name, _ in SCRIPT.timers()]  # (the script wraps them for good: put
# back after each test, as a wrapper is a local function, which a later test's workers could not be sent)


def _run(monkeypatch, args: list[str]) -> list[dict]:
    monkeypatch.setenv("NSYS2PRV_IN_PROCESS", "1")  # (the script sets it: restored after the test)
    for module, name in TIMED:
        monkeypatch.setattr(module, name, getattr(module, name))
    monkeypatch.setattr(sys, "argv", ["bench_stage_c.py", *args])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert SCRIPT.main() == 0
    return [json.loads(line) for line in out.getvalue().splitlines()]


@pytest.mark.parametrize("sliced", [False, True], ids=["one-slice", "sliced"])
@pytest.mark.parametrize("cache", [True, False], ids=["parquet-cache", "no-cache"])
def test_the_read_and_the_rest_of_stage_c(tmp_path, monkeypatch, sliced, cache):
    from nsysgen import cloverleaf_like

    report = cloverleaf_like(tmp_path / "clover.sqlite")  # (the generated one: a copy, cached here)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    calls: list[str] = []

    def counted(name: str, real):
        def load(*args):
            calls.append(name)
            return real(*args)

        return load

    monkeypatch.setattr(slices.stages, "read_whole", counted("read_whole", slices.stages.read_whole))
    monkeypatch.setattr(slices, "_read_slice", counted("_read_slice", slices._read_slice))
    if sliced:  # (slices of 50 rows: the generated report's 355 are cut)
        every = slices.translate_all
        monkeypatch.setattr(slices, "translate_all", lambda ex, jobs, rows, model, _: every(ex, jobs, rows, model, 50))
    runs = _run(monkeypatch, ["--runs", "2", *([] if cache else ["--no-cache"]), str(report)])
    assert len(runs) == 3 and runs[-1]["best_of"] == 2
    assert set(calls) == {"_read_slice" if sliced else "read_whole"}
    for run in runs[:2]:
        assert run["read"] > 0 and run["chunk"] > 0 and run["translate"] > 0
        assert run["c_minus_read"] == pytest.approx(run["stage_c"] - run["read"], abs=2e-4)  # (each rounded)
    assert runs[-1]["c_minus_read"] == min(r["c_minus_read"] for r in runs[:2])


def test_the_timers_are_gone_after_a_run(tmp_path, monkeypatch):
    """The script's wrappers do not outlive a test (``TIMED``): the next one's workers get the functions."""
    from nsysgen import cloverleaf_like

    before = {(m.__name__, n): getattr(m, n) for m, n in TIMED}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
        _run(mp, ["--runs", "1", str(cloverleaf_like(tmp_path / "clover.sqlite"))])
        assert all(getattr(m, n) is not before[(m.__name__, n)] for m, n in TIMED)  # (wrapped meanwhile)
    assert {(m.__name__, n): getattr(m, n) for m, n in TIMED} == before
