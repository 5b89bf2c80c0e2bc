"""The POP metrics of a run from the reports' partial results: the lookups the workers need, the
matched MPI messages of the replay and the reduction (which also gives the GPU activity rows)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from nsys2prv.config import Config
from nsys2prv.metrics import pop as popm
from nsys2prv.nsys.ids import pid_of, tid_of
from nsys2prv.pipeline.gpu_rows import GpuRows
from nsys2prv.pipeline.prepare import Prepared


def _pop_messages(run: Prepared) -> pd.DataFrame | None:
    """Matched MPI messages for the POP replay: send and receive tasks of POP's processes (``Model.pop``)
    and threads (OS thread ids) of the calls, whether or not their threads are rows of the trace (-t), the
    send call's start and the end of the call completing the receive, on the aligned timeline (None: no
    peers)."""
    m = run.messages
    if m is None or not len(m):
        return None

    def per_report(reports, f):
        out = np.empty(len(reports), np.int64)
        for r in np.unique(reports):
            sel = reports == r
            out[sel] = f(int(r), sel)
        return out

    def pop_task(reports, gtids):
        return per_report(reports, lambda r, sel: run.model.pop.task_of(r, pid_of(gtids[sel])))

    def aligned(reports, times):
        return per_report(reports, lambda r, sel: run.timeline.clocks[r].apply(times[sel]))

    return pd.DataFrame(
        {
            "send_task": pop_task(m.send_report, m.send_gtid),
            "recv_task": pop_task(m.recv_report, m.recv_gtid),
            "send_tid": tid_of(m.send_gtid),
            "recv_tid": tid_of(m.recv_gtid),
            "send_start": aligned(m.send_report, m.log_send),
            "recv_end": aligned(m.recv_report, m.phys_recv),
        }
    )


def measure_devices(cfg: Config, run: Prepared, parts: list, rows: GpuRows | None = None) -> popm.RunDevices:
    """The first part of the reduction: the run's window and its GPUs measured over it, ``rows``
    given each GPU's intervals (the GPU activity rows: what stage D's merge needs of POP)."""
    popm.check_nccl_as(cfg.nccl_as)
    return popm.measure_run([p.unpack() for p in parts], run.model.pop, run.timeline.lifetimes, rows)


def rest_rows(parts: list) -> int:
    """The size of the reduction after ``measure_devices`` (host and scheduling intervals, MPI calls,
    NVTX ranges), in rows: about what merging as many trace records costs (``write_merged``'s
    beside_records); each partial's recorded beside its bytes (``PopPartial.packed``): none unpacked."""
    return sum(p.size for p in parts)


def pop_metrics(
    cfg: Config, run: Prepared, parts: list, rows: GpuRows | None = None, measured: popm.RunDevices | None = None
) -> dict:
    """OUT.pop.json's content from the reports' partial results (``parts``: each packed, ``Packed``, as
    for ``measure_devices`` and ``rest_rows``: each unpacks them where it runs; ``rows``: given each GPU's
    intervals; ``measured``: ``measure_devices``'s result when it ran first)."""
    partials = [p.unpack() for p in parts]
    parts.clear()
    inputs = popm.combine(
        partials,
        run.model.pop,
        cfg.nccl_as,
        run.timeline.lifetimes,
        _pop_messages(run),
        on_devices=rows,
        measured=measured,
    )
    del partials
    res = popm.compute(
        inputs,
        region=cfg.region,
        iterations=cfg.iterations,
        warmup=cfg.warmup,
        label=cfg.output.name,
        filter_nvtx=cfg.filter_nvtx,
    )
    inputs.dev.discard()  # (the workers' files of GPU intervals: measured)
    res["job_ids"] = sorted({i.identity.job_id for i in run.infos if i.identity.job_id})  # (nsys2prv pop)
    return res
