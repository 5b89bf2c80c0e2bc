"""The conversion, stage by stage.

    A  per report (in parallel)   export -> read/normalise (or the Parquet cache) -> small metadata
    B  global                      resource model (the trace's rows, POP's processes), clock alignment,
                                   -f window, lifetimes, type registry
    C  per slice of a report      clip -> POP / GPU-metric partials -> translate -> paint -> sorted chunk
       (in parallel; a report not worth cutting: one slice)
    D  global                      POP reduction, value numbering, END, k-way merge of the chunks -> files

Per-report work runs in this process, local processes (--jobs) or on Dask (--dask): see
``scan.py``, ``stages.py``, ``slices.py`` and ``parallel.py``.  ``pop_of_reports`` (``nsys2prv pop``
on reports) runs the same stages A and B and the POP part of stage C.  Memory in the main process is
O(reports), not O(events).

-t chooses what goes into the trace, never the POP metrics: stages A and C also read the POP kinds
(``metrics.pop.KINDS``) and the one resource model is built over their keys too (POP's processes:
``Model.pop``), so OUT.pop.json is the same whatever -t selects; the trace's rows are only those of
the translated kinds (a process or thread only the POP kinds have is the model's, not a row).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nsys2prv.pipeline.conversion import convert, pop_of_reports
    from nsys2prv.pipeline.summary import Summary


def __getattr__(name: str):
    """``convert``, ``pop_of_reports`` and ``Summary``, imported when first used: the command line
    imports ``pipeline.warmup`` before pandas is loaded (its background compiler starts
    first), and this package's ``__init__`` runs first."""
    if name in ("convert", "pop_of_reports"):
        from nsys2prv.pipeline import conversion  # (lazy: see the docstring)

        return getattr(conversion, name)
    if name == "Summary":
        from nsys2prv.pipeline import summary  # (lazy: see the docstring)

        return summary.Summary
    raise AttributeError(f"module 'nsys2prv.pipeline' has no attribute {name!r}")


__all__ = ["convert", "pop_of_reports", "Summary"]
