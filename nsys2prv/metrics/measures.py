"""Interval measures for the POP metrics (numpy + one numba sweep).

The one primitive is :func:`mask_durations`: for every group (a GPU, a process, or
(window, GPU) pairs), how long each *combination* of interval classes was active.
With classes {0: useful kernel, 1: data movement} the durations per mask give at once
|useful ∪| (masks 1, 3), |movement \\ useful| (mask 2) and |useful ∪ movement|, so
overlaps between streams are counted once and never push a device above 100%.

:func:`clip_to_windows` cuts intervals into pieces inside analysis windows (a trace
span, the occurrences of an NVTX region or iterations) without Python loops over rows.
"""

from __future__ import annotations

import numpy as np

from nsys2prv.core.jit import kernel


@kernel(interpret_below=60_000, size=lambda a: len(a[0]), allocates=False)
def _sweep(order, group, time, cls, out, counts):
    """Adds to ``out`` (zeros, (groups, 2**classes)) the time of each mask per group; ``counts``:
    zeros, one per class (allocated by the caller: numba compiles the kernel 0.2 s faster)."""
    n = len(group)
    prev_g = -1
    prev_t = 0
    mask = 0
    for k in range(len(order)):
        p = order[k]
        i = p if p < n else p - n
        g = group[i]
        if g != prev_g:
            counts[:] = 0
            mask = 0
            prev_g = g
            prev_t = time[p]
        elif time[p] > prev_t:
            out[g, mask] += time[p] - prev_t
            prev_t = time[p]
        c = cls[i]
        counts[c] += 1 if p < n else -1
        if counts[c] > 0:
            mask |= 1 << c
        else:
            mask &= ~(1 << c)


def mask_durations(group, start, end, cls, n_groups: int, n_cls: int) -> np.ndarray:
    """int64 array (n_groups, 2**n_cls): time during which exactly the classes of each bit
    mask are active in each group (mask 0, "nothing active", is only counted between
    intervals of a group, so it is not meaningful; derive idle time from a window length)."""
    group = np.asarray(group, np.int64)
    start = np.asarray(start, np.int64)
    end = np.asarray(end, np.int64)
    cls = np.asarray(cls, np.int64)
    keep = end > start
    if not keep.all():
        group, start, end, cls = group[keep], start[keep], end[keep], cls[keep]
    del keep
    n = len(start)
    if n == 0 or n_groups == 0:
        return np.zeros((n_groups, 1 << n_cls), np.int64)
    t2 = np.concatenate([start, end])  # point i < n: a start (+1), i >= n: the end of i - n (-1)
    order = _group_time_order(group, t2, n_groups)
    out = np.zeros((n_groups, 1 << n_cls), np.int64)
    _sweep(order.astype(np.int64, copy=False), group, t2, cls, out, np.zeros(n_cls, np.int64))
    return out


def _group_time_order(group: np.ndarray, t2: np.ndarray, n_groups: int) -> np.ndarray:
    """The points ``t2`` (starts, then ends) in (group, time) order, ties in point order: what
    ``np.lexsort((t2, group twice))`` gives.  Where group and time fit one int64 key (groups times
    the time span below 2**62), a stable sort of that key: the points come mostly sorted already
    (each part's intervals in time order), which a stable sort runs through ~10x faster than lexsort."""
    if n_groups == 1:  # (one GPU at a time: no group key to sort by)
        return np.argsort(t2, kind="stable")
    t_min = int(t2.min())
    span = int(t2.max()) - t_min + 1
    g_lo, g_hi = int(group.min()), int(group.max())
    if g_lo < 0 or g_hi >= n_groups or n_groups * span >= 1 << 62:
        return np.lexsort((t2, np.concatenate([group, group])))
    key = t2 - t_min
    key += np.concatenate([group, group]) * span
    return np.argsort(key, kind="stable")


def union(start, end) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint sorted union of intervals (touching intervals merge)."""
    start = np.asarray(start, np.int64)
    end = np.asarray(end, np.int64)
    if len(start) == 0:
        return start.copy(), end.copy()
    o = np.argsort(start, kind="stable")
    s, e = start[o], end[o]
    cm = np.maximum.accumulate(e)
    new = np.empty(len(s), bool)
    new[0] = True
    new[1:] = s[1:] > cm[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(s) - 1)
    return s[first], cm[last]


def clip_to_windows(start, end, win_lo, win_hi) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Pieces of intervals inside windows (which may overlap).  Returns (row, window, start, end)
    arrays, one entry per (interval, overlapped window) pair, clipped to the window."""
    start = np.asarray(start, np.int64)
    end = np.asarray(end, np.int64)
    lo = np.asarray(win_lo, np.int64)
    hi = np.asarray(win_hi, np.int64)
    if len(lo) == 1:  # one window (the usual case): fewer temporaries
        s = np.maximum(start, lo[0])
        e = np.minimum(end, hi[0])
        keep = e > s
        row = np.flatnonzero(keep).astype(np.int64, copy=False)
        return row, np.zeros(len(row), np.int64), s[keep], e[keep]
    if np.any(np.diff(lo) < 0) or np.any(np.diff(hi) < 0):
        # (a window inside the one before: window after window -- a loop over windows, not rows)
        pieces = [clip_to_windows(start, end, lo[k : k + 1], hi[k : k + 1]) for k in range(len(lo))]
        row, _, s, e = (np.concatenate(x) for x in zip(*pieces))
        return row, np.repeat(np.arange(len(lo), dtype=np.int64), [len(p[0]) for p in pieces]), s, e
    i0 = np.searchsorted(hi, start, side="right")  # first window ending after the start
    i1 = np.searchsorted(lo, end, side="left")  # windows starting before the end
    n = np.maximum(i1 - i0, 0)
    row = np.repeat(np.arange(len(start), dtype=np.int64), n)
    base = np.repeat(i0, n)
    k = np.arange(len(row), dtype=np.int64) - np.repeat(np.cumsum(n) - n, n)
    win = base + k
    s = np.maximum(start[row], lo[win])
    e = np.minimum(end[row], hi[win])
    keep = e > s
    return row[keep], win[keep], s[keep], e[keep]


def warmup_probes() -> list[tuple]:
    """Every kernel of this module with arguments of the types the conversion calls it with (one
    element each): what ``pipeline.warmup`` loads (or compiles) before worker processes fork."""
    z = np.zeros(1, np.int64)
    return [(_sweep, (np.array([0, 1]), z, np.array([0, 1]), z, np.zeros((1, 2), np.int64), z.copy()))]


__all__ = ["warmup_probes", "mask_durations", "union", "clip_to_windows"]
