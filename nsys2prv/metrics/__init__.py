"""POP efficiency metrics from the normalised tables (never from the .prv text).

- ``measures``: unions / overlaps per device and window (numpy + numba)
- ``pop``: host and device trees, regions and iterations
- ``advice``: findings with their evidence
- ``tables``: text, JSON, CSV, Markdown, LaTeX, PNG
- ``scaling``: several runs (``nsys2prv pop``)
- ``gpu_attribution``: GPU metric means per kernel and NVTX range
"""

from __future__ import annotations

from pathlib import Path

from nsys2prv.metrics import tables


def write_pop(res: dict, base: Path, trace_ns: int | None = None) -> tuple[list[str], list[str], str]:
    """Write OUT.pop.* for one run; returns (paths, notes, the text table with advice).  ``trace_ns``:
    the Paraver trace's length, said beside T (they differ)."""
    cols = tables.single_run_columns(res)
    title = f"POP metrics of {res.get('label') or base.name} (NCCL kernels as {res['nccl_as']})"
    paths, notes = tables.write_all(res, cols, base, title, tables.caption(res))
    return paths, notes, render(res, trace_ns)


def render(res: dict, trace_ns: int | None = None) -> str:
    """The printed table, then what T is, why metrics are n/a, the notes and the advice."""
    title = f"POP metrics (NCCL kernels as {res['nccl_as']}; T = {res['elapsed_ns'] / 1e9:.6g} s)"
    text = tables.text_table(tables.single_run_columns(res), title)
    lines = [tables.elapsed_text(res, trace_ns)]
    lines += [f"  {tables.steady_text(reg)}" for reg in res.get("regions", []) if reg.get("kind") == "steady"]
    lines += [f"  n/a: {r}" for r in tables.na_reasons(res)]
    lines += [f"  note: {n}" for n in res.get("notes", [])]
    text += "\n" + "\n".join(lines)
    if res.get("advice"):
        text += "\n advice:\n" + tables.advice_text(res["advice"])
    return text


__all__ = ["write_pop", "render"]
