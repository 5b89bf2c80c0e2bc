"""The POP efficiency model (host and device trees), computed from the normalised tables.

Inputs are the per-report normalised tables of ``KINDS`` (read whatever -t translates), the POP
processes (``Model.pop``: the resource model's processes with rows of those kinds), each process's
lifetime (nsys/lifetimes.py) and the per-report clocks (model/align: report time -> trace time) --
never the .prv text.  Sources and formulas: docs/pop-metrics.md.

Everything that is a *choice* is written into the result's ``definitions``.

One concern a module: ``partial`` (a report's or time slice's part, in its worker), ``devices`` (the
run's GPUs, measured a GPU at a time), ``inputs`` (the run's inputs from the partials: ``combine``), ``trees``
(the device and host trees), ``windows`` (the metrics over windows, the result and its definitions).
"""

from nsys2prv.metrics.pop.devices import DeviceIntervals, gather_devices, measure_devices, measure_scopes
from nsys2prv.metrics.pop.inputs import (
    INIT_CALLS,
    PopInputs,
    RunDevices,
    check_nccl_as,
    combine,
    measure_run,
    run_window,
    task_lifetimes,
)
from nsys2prv.metrics.pop.partial import (
    ALL_KINDS,
    CUDA_API,
    CUT_COLUMNS,
    KERNEL,
    KINDS,
    MEMOP,
    MPI,
    NCCL,
    REGION_KINDS,
    DeviceSpill,
    PopPartial,
    aligned_lifetimes,
    collect_partial,
    join_slices,
    spill_devices,
    task_spans,
)
from nsys2prv.metrics.pop.trees import device_tree, host_tree
from nsys2prv.metrics.pop.windows import (
    SCHEMA,
    STEADY_DEFINITION,
    STEADY_NAME,
    STEADY_REGION,
    STEADY_SHOWN,
    compute,
    definitions,
    evaluate,
    occurrence_windows,
    region_names,
    steady_state,
)

__all__ = [
    "ALL_KINDS",
    "CUT_COLUMNS",
    "CUDA_API",
    "INIT_CALLS",
    "KERNEL",
    "KINDS",
    "MEMOP",
    "MPI",
    "NCCL",
    "REGION_KINDS",
    "SCHEMA",
    "STEADY_DEFINITION",
    "STEADY_NAME",
    "STEADY_REGION",
    "STEADY_SHOWN",
    "DeviceIntervals",
    "DeviceSpill",
    "PopInputs",
    "PopPartial",
    "RunDevices",
    "aligned_lifetimes",
    "check_nccl_as",
    "collect_partial",
    "combine",
    "compute",
    "definitions",
    "device_tree",
    "evaluate",
    "gather_devices",
    "host_tree",
    "join_slices",
    "measure_devices",
    "measure_run",
    "measure_scopes",
    "occurrence_windows",
    "region_names",
    "run_window",
    "spill_devices",
    "steady_state",
    "task_lifetimes",
    "task_spans",
]
