"""The GPU activity rows' records (``metrics.gpu_activity``), made while POP reduces the device
intervals (``pop.combine``'s ``on_devices``): a GPU at a time, written as chunks for the merge once
enough records wait."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from nsys2prv.core.choices import NcclAs
from nsys2prv.metrics.gpu_activity import activity_events
from nsys2prv.paraver.chunks import write_chunk
from nsys2prv.translate.records import Translation

FLUSH_RECORDS = 1 << 18  # records kept before they go to a chunk file (bounded memory)


class GpuRows:
    """Collects the GPU activity events of ``model.device_rows`` from the POP device intervals (tasks
    of ``model.pop``).  ``work``: the directory for chunk files; ``index``:
    the first report index the chunks sort as (after the reports' and the messages' chunks)."""

    def __init__(self, model, types: dict, nccl_as: NcclAs, work: Path, index: int):
        self.model, self.types, self.nccl_as, self.work, self.index = model, types, nccl_as, work, index
        hosts = sorted({h for h, _ in model.device_rows})
        self.host_code = {h: i for i, h in enumerate(hosts)}
        self.task_host = np.array([self.host_code.get(t.host, -1) for t in model.pop.tasks] or [-1], np.int64)
        keys = sorted(model.device_rows.items(), key=lambda kv: (self.host_code[kv[0][0]], kv[0][1]))
        self.codes = np.array([self.host_code[h] * (1 << 32) + d for (h, d), _ in keys], np.int64)
        self.gids = np.array([g for _, g in keys], np.int64)
        self.done = np.zeros(len(keys), bool)
        self.pending: list = []
        self.waiting = 0
        self.out: list = []  # ChunkMeta
        self.t0 = self.t1 = 0

    def __call__(self, t0: int, t1: int):
        """``pop.combine``'s on_devices: the run's window, then the intervals."""
        self.t0, self.t1 = int(t0), int(t1)
        return self.add

    def add(self, task, dev_id, cls, start, end) -> None:
        if not len(self.codes) or self.t1 <= self.t0:
            return
        code = self.task_host[np.asarray(task, np.int64)] * (1 << 32) + np.asarray(dev_id, np.int64)
        pos = np.minimum(np.searchsorted(self.codes, code), len(self.codes) - 1)
        hit = self.codes[pos] == code
        del code
        self.done[pos[hit]] = True
        rows = self.gids[pos]
        del pos
        if not hit.all():  # (a GPU without a row: none of its intervals)
            rows, cls, start, end = rows[hit], np.asarray(cls)[hit], np.asarray(start)[hit], np.asarray(end)[hit]
        del hit
        self._keep(activity_events(rows, cls, start, end, self.t0, self.t1, self.nccl_as))

    def finish(self) -> list:
        """The rows no interval reached (idle over the run), then the last chunk: ChunkMetas, in
        sort order."""
        if len(self.codes) and self.t1 > self.t0 and not self.done.all():
            z = np.zeros(0, np.int64)
            self._keep(activity_events(z, z, z, z, self.t0, self.t1, self.nccl_as, idle_rows=self.gids[~self.done]))
        self._flush()
        return self.out

    def _keep(self, batch) -> None:
        if len(batch):
            self.pending.append(batch)
            self.waiting += len(batch)
        if self.waiting >= FLUSH_RECORDS:
            self._flush()

    def _flush(self) -> None:
        if not self.pending:
            return
        out = Translation(events=self.pending)
        self.pending, self.waiting = [], 0
        k = len(self.out)
        path = str(self.work / f"gpu_activity{k}.chunk")
        self.out.append(write_chunk(out, self.model, self.index + k, self.types, path, consume=True))
