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

from nsys2prv.pipeline.conversion import convert, pop_of_reports
from nsys2prv.pipeline.summary import Summary

__all__ = ["convert", "pop_of_reports", "Summary"]
