"""What a translator gets: the report's place in the trace and where its rows go."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import pandas as pd

from nsys2prv.core import columns as C
from nsys2prv.core.columns import Frame, optional
from nsys2prv.model.align.clock import Clock
from nsys2prv.model.communicators import Communicators
from nsys2prv.model.resources import Model
from nsys2prv.translate.launches import Launches
from nsys2prv.translate.records import CategoryCount

CpuRows = TypeVar("CpuRows", bound="Frame[C.OnCpu]")
GpuRows = TypeVar("GpuRows", bound="Frame[C.Stream]")

OVERLAP_NOTE = (
    "starts before an earlier activity of its stream ends: drawn on an extra row of the stream "
    "(a second CUDA-Dd.Ss row right after the first)"
)


@dataclass
class Context:
    report: int  # report index
    clock: Clock  # report time -> trace time
    model: Model
    categories: frozenset[str]
    nvtx_domains: dict[str, int]  # NVTX domain name -> index (global, sorted)
    tables: dict[str, pd.DataFrame]  # all normalised tables of this report
    calls: pd.DataFrame | None = None  # CUDA API calls (for links), even when not translated
    metric_types: dict[str, int] = field(default_factory=dict)  # GPU metric name -> event type id
    comms: Communicators | None = None  # the run's MPI communicators (None: every call on the world)
    launches: Launches | None = None  # each GPU activity's launch call: its row in ``calls`` (None: matched here)

    def on_cpu(self, df: CpuRows, count: CategoryCount) -> tuple[CpuRows, np.ndarray]:
        """Rows whose thread is in the model, and their global thread ids."""
        threads = self.model.cpu_threads(self.report, df["tid"].to_numpy(np.int64))
        keep = threads >= 0
        dropped = len(keep) - int(keep.sum())
        count.drop("on an Nsight Systems internal thread ([NSys*])", dropped)
        return (df[keep], threads[keep]) if dropped else (df, threads)  # (every row: no copy)

    def on_gpu(self, df: GpuRows, count: CategoryCount, activity: bool = False) -> tuple[GpuRows, np.ndarray]:
        """Rows whose stream (and overlap lane) is in the model, and their global thread ids;
        ``activity``: the GPU activities themselves, whose rows on an overlap lane are counted."""
        lane = None if (lanes := optional(df, "lane")) is None else lanes.to_numpy(np.int64)
        threads = self.model.gpu_threads(
            self.report,
            df["gpid"].to_numpy(np.int64),
            df["device"].to_numpy(np.int64),
            df["stream"].to_numpy(np.int64),
            lane,
        )
        keep = threads >= 0
        dropped = len(keep) - int(keep.sum())
        count.drop("stream not in the resource model", dropped)
        if activity and lane is not None:
            count.note(OVERLAP_NOTE, int((lane[keep] > 0).sum()))
        return (df[keep], threads[keep]) if dropped else (df, threads)  # (every row: no copy)

    def times(self, col: pd.Series) -> np.ndarray:
        return self.clock.apply(col.to_numpy(np.int64))
