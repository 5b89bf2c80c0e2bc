"""The POP metrics of a run from the reports' partial results: the lookups the workers need, the
matched MPI messages of the replay and the reduction (which also gives the GPU activity rows)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from nsys2prv.config import Config
from nsys2prv.metrics import pop as popm
from nsys2prv.pipeline.gpu_rows import GpuRows
from nsys2prv.pipeline.prepare import Prepared


def _pop_messages(run: Prepared) -> pd.DataFrame | None:
    """Matched MPI messages for the POP replay: send and receive tasks of POP's processes (``Model.pop``)
    and threads (OS thread ids), the send call's start and the end of the call completing the receive,
    on the aligned timeline (None: no peers)."""
    m = run.messages
    if m is None or not len(m):
        return None
    tasks = run.model.tasks
    # the POP task of every thread of the trace (-1: none), then of each message's threads
    report = np.array([tasks[th.task].report for th in run.model.threads] or [-1], np.int64)
    pid = np.array([tasks[th.task].pid for th in run.model.threads] or [-1], np.int64)
    of_thread = np.full(len(report), -1, np.int64)
    for r in np.unique(report):
        sel = report == r
        of_thread[sel] = run.model.pop.task_of(int(r), pid[sel])

    def pop_task(thread_ids):
        return of_thread[np.asarray(thread_ids, np.int64)]

    def aligned(reports, times):
        out = np.empty(len(times), np.int64)
        for r in np.unique(reports):
            sel = reports == r
            out[sel] = run.timeline.clocks[int(r)].apply(times[sel])
        return out

    # the OS thread id of every thread of the trace's model (its calls' thread in the replay; -1: none)
    tid = np.array([th.key[1] if th.kind == "cpu" else -1 for th in run.model.threads] or [-1], np.int64)

    return pd.DataFrame(
        {
            "send_task": pop_task(m.send_thread),
            "recv_task": pop_task(m.recv_thread),
            "send_tid": tid[np.asarray(m.send_thread, np.int64)],
            "recv_tid": tid[np.asarray(m.recv_thread, np.int64)],
            "send_start": aligned(m.send_report, m.log_send),
            "recv_end": aligned(m.recv_report, m.phys_recv),
        }
    )


def pop_metrics(cfg: Config, run: Prepared, parts: list, rows: GpuRows | None = None) -> dict:
    """OUT.pop.json's content from the reports' partial results (``rows``: given each GPU's intervals)."""
    inputs = popm.combine(
        parts, run.model.pop, cfg.nccl_as, run.timeline.lifetimes, _pop_messages(run), on_devices=rows
    )
    parts.clear()
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
