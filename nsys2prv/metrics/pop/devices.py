"""The GPUs of a run and their intervals, where the workers left them, measured a GPU at a time."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

from nsys2prv.metrics.measures import (
    clip_to_windows,
    mask_durations,
)
from nsys2prv.metrics.pop.partial import KERNEL, NCCL, DeviceSpill, PopPartial
from nsys2prv.model.resources import Processes


@dataclass
class DeviceIntervals:
    """Every GPU's intervals over the run, where the workers left them (``spills``): ``pieces`` says
    which rows of which spill are GPU g's -- (GPU, spill, first row, end row), in GPU order -- so that
    each GPU's intervals are read alone (``each``)."""

    spills: list[DeviceSpill]
    pieces: np.ndarray
    count: int  # GPUs

    def each(self) -> Iterator[tuple[int, np.ndarray]]:
        """(GPU, its intervals: (5, n) rows GPU id, task, class, start, end), one GPU after the other:
        only one GPU's intervals in memory."""
        bounds = np.searchsorted(self.pieces[:, 0], np.arange(self.count + 1))
        for g in range(self.count):
            mine = self.pieces[bounds[g] : bounds[g + 1]]
            out = np.empty((5, int((mine[:, 3] - mine[:, 2]).sum())), np.int64)
            at = 0
            for k in np.unique(mine[:, 1]):  # (each file opened once per GPU)
                rows = np.load(self.spills[k].path, mmap_mode="r")
                for a, b in mine[mine[:, 1] == k][:, 2:]:
                    out[:, at : at + b - a] = rows[:, a:b]
                    at += b - a
                del rows
            yield g, out

    def discard(self) -> None:
        """Remove the spill files (the run is measured)."""
        for sp in self.spills:
            os.remove(sp.path)
        self.spills = []


def gather_devices(parts: list[PopPartial], model: Processes) -> tuple[list[dict], list[str], DeviceIntervals]:
    """The run's GPUs -- (node, GPU id) with intervals, in that order: label, host, GPU id and the
    processes using it --, a note per GPU several processes share, and where each GPU's intervals are
    (nothing is read)."""
    spills = [sp for p in parts for sp in p.dev]
    runs = np.concatenate([sp.runs for sp in spills] or [np.zeros((0, 4), np.int64)])
    which = np.repeat(np.arange(len(spills), dtype=np.int64), [len(sp.runs) for sp in spills])
    node_of = np.array([t.node for t in model.tasks] or [0], np.int64)
    ukeys, g = np.unique(node_of[runs[:, 1]] * (1 << 32) + runs[:, 0], return_inverse=True)
    g = g.reshape(-1).astype(np.int64)
    order = np.argsort(g, kind="stable")
    pieces = np.stack([g, which, runs[:, 2], runs[:, 3]], axis=1)[order]
    users = pd.DataFrame({"g": g, "task": runs[:, 1]}).drop_duplicates().groupby("g")["task"].agg(sorted).to_dict()
    devices: list[dict] = []
    notes: list[str] = []
    for i, k in enumerate(ukeys):
        n, d = int(k >> 32), int(k & 0xFFFFFFFF)
        ranks = [int(t) for t in users.get(i, [])]
        devices.append(
            {
                "label": f"{model.nodes[n]}:GPU{d}",
                "host": model.nodes[n],
                "device": d,
                "processes": [model.tasks[t].label for t in ranks],
            }
        )
        if len(ranks) > 1:
            notes.append(
                f"GPU {devices[-1]['label']} is used by {len(ranks)} processes "
                f"({', '.join(devices[-1]['processes'])}): their activity is united (the "
                "trace's GPU row and analysis/gpu_activity.cfg show it)"
            )
    return devices, notes, DeviceIntervals(spills, pieces, len(ukeys))


def measure_devices(dev: DeviceIntervals, lo, hi, per_window: bool = False, on_gpu=None) -> tuple:
    """The device reduction, one GPU at a time: the mask durations over the windows ((windows, D, 8)
    per window, else (1, D, 8) over their union, as ``_durations``), each GPU's first kernel and
    first NCCL kernel start (int64 max: none); ``on_gpu(task, GPU id, class, start, end)`` is given
    each GPU's intervals (the GPU activity rows)."""
    durs, first_k, first_n = measure_scopes(dev, [(lo, hi, per_window)], on_gpu)
    return durs[0], first_k, first_n


def measure_scopes(dev: DeviceIntervals, scopes: list[tuple], on_gpu=None) -> tuple:
    """``measure_devices`` over several scopes -- (lo, hi, per_window) each: its mask durations in
    ``durs`` -- in one read of every GPU's intervals."""
    scopes = [(np.asarray(lo, np.int64), np.asarray(hi, np.int64), per) for lo, hi, per in scopes]
    durs = [np.zeros((len(lo) if per else 1, dev.count, 8), np.int64) for lo, _, per in scopes]
    first = np.full((2, dev.count), np.iinfo(np.int64).max, np.int64)
    for g, (dev_id, task, cls, s, e) in dev.each():
        if on_gpu is not None:
            on_gpu(task, dev_id, cls, s, e)
        for i, c in enumerate((KERNEL, NCCL)):
            starts = s[cls == c]
            if len(starts):
                first[i, g] = starts.min()
        for dur, (lo, hi, per_window) in zip(durs, scopes):
            if len(lo) == 1 and (not len(s) or (s.min() >= lo[0] and e.max() <= hi[0])):
                dur[0, g] = mask_durations(np.zeros(len(s), np.int64), s, e, cls, 1, 3)[0]  # (nothing to cut)
            else:
                row, win, cs, ce = clip_to_windows(s, e, lo, hi)
                g_or_win = win if per_window else np.zeros(len(row), np.int64)
                dur[:, g] = mask_durations(g_or_win, cs, ce, cls[row], len(dur), 3)
    return durs, first[0], first[1]
