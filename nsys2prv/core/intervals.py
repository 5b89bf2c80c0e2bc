"""Interval algorithms shared by translation and metrics (numba; loops are unavoidable here).

- ``nesting_depth``: push/pop nesting level of each interval within its group.
- ``overlap_lanes``: the lowest free lane of each interval within its group, so that the intervals
  of one lane never overlap (GPU activities that overlap on one stream get extra rows).
- ``paint_states``: per lane (thread), a piecewise-constant timeline from prioritised
  intervals; where none is active the lane's default state holds.
"""

from __future__ import annotations

import numpy as np

from nsys2prv.core.jit import kernel

_BIG = np.iinfo(np.int64).max


@kernel(interpret_below=100_000)
def _depth_sorted(group, start, end, order):
    n = len(order)
    depth = np.zeros(n, np.int64)
    stack = np.empty(n, np.int64)
    top = 0
    prev_group = -1
    for k in range(n):
        i = order[k]
        if group[i] != prev_group:
            top = 0
            prev_group = group[i]
        while top > 0 and stack[top - 1] <= start[i]:
            top -= 1
        depth[i] = top
        stack[top] = end[i]
        top += 1
    return depth


def nesting_depth(group: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Depth of each interval (0 = outermost) among the intervals of its group.

    Exact for properly nested intervals (NVTX push/pop); for crossing intervals it
    counts the still-open enclosing chain.
    """
    if len(start) == 0:
        return np.zeros(0, np.int64)
    order = np.lexsort((-end, start, group))
    return _depth_sorted(group.astype(np.int64), start.astype(np.int64), end.astype(np.int64), order.astype(np.int64))


@kernel(interpret_below=50_000)
def _lanes_sorted(group, start, end, order):
    n = len(order)
    lane = np.zeros(n, np.int64)
    free_at = np.empty(n, np.int64)  # per lane of the current group: the end of its last interval
    used = 0
    prev_group = -1
    for k in range(n):
        i = order[k]
        if k == 0 or group[i] != prev_group:
            used = 0
            prev_group = group[i]
        chosen = used
        for j in range(used):
            if free_at[j] <= start[i]:
                chosen = j
                break
        if chosen == used:
            used += 1
        free_at[chosen] = max(end[i], start[i])
        lane[i] = chosen
    return lane


def _by_group_then_start(group: np.ndarray, start: np.ndarray) -> np.ndarray:
    """``np.lexsort((start, group))``: by group, then start, then input order.  When each group's
    starts are already in order (a report's tables usually are) that is the stable order of the
    groups alone, sorted as small ints (a radix sort) and checked, instead of a merge sort of both."""
    if len(group) and int(group.min()) >= 0 and int(group.max()) < (1 << 15):
        order = np.argsort(group.astype(np.int16), kind="stable")
        g, s = group[order], start[order]
        if not ((g[1:] == g[:-1]) & (s[1:] < s[:-1])).any():
            return order
    return np.lexsort((start, group))


def overlap_lanes(group: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Lane of each interval within its group (0 = first): intervals taken by start time (then
    input order) go to the lowest lane whose last interval has ended, so one lane never holds two
    overlapping intervals and a group without overlaps is all lane 0."""
    if len(start) == 0:
        return np.zeros(0, np.int64)
    order = _by_group_then_start(group, start)
    g, s = group[order], start[order]
    free = np.maximum(end[order], s)  # (what the sweep keeps of each interval)
    if not ((g[1:] == g[:-1]) & (s[1:] < free[:-1])).any():
        # each interval starts after the one before it in its group has ended: every one on lane 0
        # (what the sweep gives, by induction), without the sweep
        return np.zeros(len(start), np.int64)
    del g, s, free
    return _lanes_sorted(group.astype(np.int64), start.astype(np.int64), end.astype(np.int64), order.astype(np.int64))


@kernel(interpret_below=10_000, size=lambda a: max(len(a[0]), len(a[1]), len(a[6])), allocates=False)
def _paint(offsets, start, end, ends_order, state, prio, default, t_end, o_lane, o_begin, o_end, o_state, active):
    """Writes the segments into ``o_*`` (2 * intervals + lanes + 1 each) and returns their count;
    ``active``: scratch, as long as the longest lane (allocated by the caller: numba compiles the
    kernel 0.15 s faster).  Each lane's segments are written at one place, its last one (up to
    ``t_end``) by a final pass of the lane's loop: no helper (numba compiles one function less)."""
    n_lanes = len(offsets) - 1
    k = 0
    for lane in range(n_lanes):
        lo = offsets[lane]
        hi = offsets[lane + 1]
        m = hi - lo
        n_active = 0
        cur = default[lane]
        seg_begin = np.int64(0)
        i = lo
        j = 0
        last = False
        while not last:
            if i < hi or j < m:
                ti = start[i] if i < hi else _BIG
                tj = end[ends_order[lo + j]] if j < m else _BIG
                t = ti if ti < tj else tj
                while j < m and end[ends_order[lo + j]] == t:
                    victim = ends_order[lo + j]
                    for a in range(n_active):
                        if active[a] == victim:
                            active[a] = active[n_active - 1]
                            n_active -= 1
                            break
                    j += 1
                while i < hi and start[i] == t:
                    active[n_active] = i
                    n_active += 1
                    i += 1
                new = default[lane]
                if n_active > 0:  # the highest priority, then the latest start, then the last index:
                    best = active[0]  # (a lane's intervals are in (start, index) order: the last index)
                    for a in range(1, n_active):
                        c = active[a]
                        if prio[c] > prio[best] or (prio[c] == prio[best] and c > best):
                            best = c
                    new = state[best]
                if new == cur or t <= seg_begin:  # (a change at the segment's start: no segment yet)
                    cur = new
                    continue
            else:  # the lane's last segment, up to t_end
                last = True
                if t_end <= seg_begin:
                    break
                t = t_end
                new = cur
            # the segment [seg_begin, t) in state cur, merged into the one before when it continues it
            if k > 0 and o_lane[k - 1] == lane and o_state[k - 1] == cur and o_end[k - 1] == seg_begin:
                o_end[k - 1] = t
            else:
                o_lane[k] = lane
                o_begin[k] = seg_begin
                o_end[k] = t
                o_state[k] = cur
                k += 1
            seg_begin = t
            cur = new
    return k


def paint_states(
    lane: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    state: np.ndarray,
    prio: np.ndarray,
    default: np.ndarray,
    t_end: int,
):
    """Timeline segments ``(lane, begin, end, state)`` covering [0, t_end) on every lane.

    At each instant a lane shows the state of its active interval with the highest
    priority (ties: the innermost, i.e. latest-started); ``default[lane]`` elsewhere.
    Zero-length intervals show nothing.  Consecutive equal states are merged.
    """
    keep = end > start
    lane, start, end = lane[keep].astype(np.int64), start[keep].astype(np.int64), end[keep].astype(np.int64)
    state, prio = state[keep].astype(np.int64), prio[keep].astype(np.int64)
    order = np.lexsort((start, lane))
    lane, start, end, state, prio = lane[order], start[order], end[order], state[order], prio[order]
    offsets = np.searchsorted(lane, np.arange(len(default) + 1)).astype(np.int64)
    ends_order = np.lexsort((end, lane)).astype(np.int64)  # per lane by end; ties keep start order
    cap = 2 * len(start) + len(default) + 1
    out = [np.empty(cap, np.int64) for _ in range(4)]
    active = np.empty(max(int(np.diff(offsets).max(initial=0)), 1), np.int64)
    k = _paint(
        offsets, start, end, ends_order, state, prio, np.asarray(default, np.int64), np.int64(t_end), *out, active
    )
    return tuple(a[:k] for a in out)


@kernel(interpret_below=50_000)
def _innermost(r_group, r_start, r_end, r_order, q_group, q_time, q_order):
    """Sweep ranges (by group, start) and queries (by group, time) together with a stack."""
    nr, nq = len(r_order), len(q_order)
    out = np.full(nq, -1, np.int64)
    stack = np.empty(max(nr, 1), np.int64)
    top = 0
    i = 0
    cur_group = np.int64(-1)
    for k in range(nq):
        q = q_order[k]
        g, t = q_group[q], q_time[q]
        if g != cur_group:
            top = 0
            cur_group = g
            while i < nr and r_group[r_order[i]] < g:
                i += 1
        # push every range of this group that starts at or before t
        while i < nr and r_group[r_order[i]] == g and r_start[r_order[i]] <= t:
            r = r_order[i]
            while top > 0 and r_end[stack[top - 1]] < r_start[r]:
                top -= 1
            stack[top] = r
            top += 1
            i += 1
        while top > 0 and r_end[stack[top - 1]] < t:
            top -= 1
        if top > 0:
            out[q] = stack[top - 1]
    return out


def innermost_enclosing(
    r_group: np.ndarray, r_start: np.ndarray, r_end: np.ndarray, q_group: np.ndarray, q_time: np.ndarray
) -> np.ndarray:
    """For each query instant, the index of the innermost range of its group with
    ``start <= time <= end`` (-1: none).  Exact for properly nested ranges (NVTX push/pop)."""
    if len(q_time) == 0:
        return np.zeros(0, np.int64)
    r_group, r_start, r_end = (np.asarray(a, np.int64) for a in (r_group, r_start, r_end))
    q_group, q_time = np.asarray(q_group, np.int64), np.asarray(q_time, np.int64)
    r_order = np.lexsort((-r_end, r_start, r_group)).astype(np.int64)
    q_order = np.lexsort((q_time, q_group)).astype(np.int64)
    return _innermost(r_group, r_start, r_end, r_order, q_group, q_time, q_order)


def warmup_probes() -> list[tuple]:
    """Every kernel of this module with arguments of the types the conversion calls it with (one
    element each): what ``pipeline.warmup`` loads (or compiles) before worker processes fork."""
    z, one = np.zeros(1, np.int64), np.ones(1, np.int64)
    return [
        (_depth_sorted, (z, z, one, z)),
        (_lanes_sorted, (z, z, one, z)),
        (
            _paint,
            (np.array([0, 1]), z, one, z, z, z, z, np.int64(2), *(np.zeros(4, np.int64) for _ in range(4)), z.copy()),
        ),
        (_innermost, (z, z, one, z, z, z, z)),
    ]


def tuple_codes(values: list[np.ndarray], ids: dict) -> np.ndarray:
    """One int64 code per distinct tuple of the columns ``values`` (``ids``: tuple -> code, grown: the
    same codes over several calls), e.g. a GPU stream per (process, device, stream)."""
    import pandas as pd  # (here: the background compiler imports this module for _paint, without pandas)

    parts = [pd.factorize(v) for v in values]
    comb = np.zeros(len(values[0]), np.int64)
    for codes, uniq in parts:  # mixed radix over the (few) distinct values per column
        comb = comb * len(uniq) + codes
    found, u = pd.factorize(comb)  # (hashed; the tuples then numbered in the order of their combined
    rank = np.empty(len(u), np.int64)  # codes, as np.unique's sorted values: the same ids)
    rank[np.argsort(u)] = np.arange(len(u))
    u.sort()
    inv = rank[found]
    tuples = []
    for x in u.tolist():
        digits = []
        for codes, uniq in reversed(parts):
            x, d = divmod(x, len(uniq))
            digits.append(int(uniq[d]))
        tuples.append(tuple(reversed(digits)))
    local = np.array([ids.setdefault(t, len(ids)) for t in tuples], np.int64)
    return local[inv]
