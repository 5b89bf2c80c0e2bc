"""Each report's POP partial reaches the main process packed (``core.packed.Packed``), with its rows
after the device reduction (host and scheduling intervals, MPI calls, NVTX ranges) recorded beside
its bytes (``PopPartial.packed``): ``pop_run.rest_rows`` (the merge's split) reads them without
unpickling a partial, and they are the partials' own rows, of a report translated whole or in slices."""

from __future__ import annotations

import pickle

import pytest
from conftest import ROOT, need

from nsys2prv.config import Config
from nsys2prv.core.packed import Packed
from nsys2prv.metrics import on_cpu
from nsys2prv.pipeline import conversion, pop_run

POP4 = ROOT / "tests" / "data" / "pop4"
CPU23 = ROOT / "tests" / "data" / "cpu23"


def _rows(p) -> tuple[int, int, int, int]:
    """(scheduling intervals, host intervals, NVTX ranges, MPI calls) of an unpacked partial."""
    cpu = p.on_cpu
    sched = cpu.rows if isinstance(cpu, on_cpu.Spill) else 0 if cpu is None else len(cpu[0])
    return sched, len(p.host[0]), len(p.nvtx), 0 if p.mpi_calls is None else len(p.mpi_calls)


def _parts(monkeypatch, tmp_path, inputs, **cfg) -> list[Packed]:
    """The packed partials stage D's reduction receives in a conversion of ``inputs``."""
    seen: list = []
    real = conversion._devices_and_rows
    monkeypatch.setattr(
        conversion, "_devices_and_rows", lambda c, r, parts, *a: seen.append(list(parts)) or real(c, r, parts, *a)
    )
    conversion.convert(
        Config(inputs=inputs, output=tmp_path / "t", show_progress=False, jobs=1, **cfg), log=lambda *a, **k: None
    )
    (parts,) = seen
    return parts


def _rest_rows_unpacking_none(parts: list[Packed], monkeypatch) -> int:
    with monkeypatch.context() as m:
        m.setattr(Packed, "unpack", lambda self: pytest.fail("a partial unpacked to count its rows"))
        return pop_run.rest_rows(parts)


def test_the_rows_beside_each_partial(monkeypatch, tmp_path):
    parts = _parts(monkeypatch, tmp_path, sorted(need(POP4).glob("rank*.sqlite")), merge=True)
    rows = [_rows(p.unpack()) for p in parts]
    assert rows == [(0, 26, 0, 26)] * 4  # (no scheduling data: each rank's host calls and MPI calls)
    assert [p.size for p in parts] == [52] * 4
    assert _rest_rows_unpacking_none(parts, monkeypatch) == 208
    # as a worker sends it (pickled): the same bytes, the same rows
    back = [pickle.loads(pickle.dumps(p)) for p in parts]
    assert [(b.blob, b.size) for b in back] == [(p.blob, p.size) for p in parts]


def test_the_rows_of_reports_translated_in_slices(monkeypatch, tmp_path):
    src = sorted(need(CPU23).glob("mpi_rank*.sqlite"))
    whole = _parts(monkeypatch, tmp_path / "whole", src, merge=True)
    assert [_rows(p.unpack()) for p in whole] == [(1440, 23, 0, 23), (4266, 23, 0, 23)]
    assert [p.size for p in whole] == [1486, 4312]
    assert _rest_rows_unpacking_none(whole, monkeypatch) == 5798
    monkeypatch.undo()
    # in slices of 500 rows: the slices' partials joined, an interval running across a slice's start
    # one row in each slice (as the reduction receives them)
    sliced = _parts(monkeypatch, tmp_path / "sliced", src, merge=True, slice_rows=500)
    assert [_rows(p.unpack()) for p in sliced] == [(1444, 25, 0, 23), (4280, 30, 0, 23)]
    assert [p.size for p in sliced] == [1492, 4333]
    assert _rest_rows_unpacking_none(sliced, monkeypatch) == 5825
