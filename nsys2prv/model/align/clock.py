"""A report's clock correction: aligned t' = t + offset + drift * (t - t_ref).

``offset`` (ns) and ``t_ref`` (ns, on the report's own timeline) are integers,
``drift`` is dimensionless (1e-6 = 1 ppm).  |drift| << 1, so the map is strictly
increasing: the order of a report's own records (a kernel after its launch, a
range inside its parent) is never changed by the correction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Clock:
    offset: int = 0
    drift: float = 0.0
    t_ref: int = 0

    def apply(self, t) -> np.ndarray:
        """Report times (ns) -> trace times (ns), int64."""
        t = np.asarray(t, dtype=np.int64)
        if self.drift == 0.0:
            return t + np.int64(self.offset)
        corr = np.rint(self.drift * (t - np.int64(self.t_ref)).astype(np.float64)).astype(np.int64)
        return t + np.int64(self.offset) + corr

    def apply_one(self, t: int) -> int:
        return int(self.apply(np.array([t], np.int64))[0])

    def local(self, aligned: int) -> int:
        """The report time that maps to trace time ``aligned`` (inverse of apply, rounded)."""
        if self.drift == 0.0:
            return int(aligned) - self.offset
        return int(round((aligned - self.offset + self.drift * self.t_ref) / (1.0 + self.drift)))

    def shifted(self, delta: int) -> "Clock":
        return Clock(self.offset + int(delta), self.drift, self.t_ref)
