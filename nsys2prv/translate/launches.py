"""Each GPU activity's launch call: the one rule linking a call to the activities it started (same
process, same correlation id; where calls share both, the first), applied once over a whole report's
unclipped tables (``match``), kept through a -f clip or a time slice (``restrict``) and used by every
link (``cuda.launch_links``, ``gpu_links.nvtx_on_gpu`` and ``nccl_payloads``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from nsys2prv.nsys.ids import process_key

ACTIVITIES = ("kernels", "memcpy", "memset", "graph_exec")  # the GPU activities a call launches
SHARED_NOTE = "API calls sharing a correlation id (the first is linked)"


@dataclass
class Launches:
    """Per activity kind, the row of each activity's launch call in the calls table (-1: none)."""

    rows: dict[str, np.ndarray] = field(default_factory=dict)
    shared: int = 0  # calls sharing (process, correlation id) with an earlier call (``SHARED_NOTE``)

    def of(self, kind: str, n: int) -> np.ndarray:
        """The launch call rows of ``kind``'s ``n`` activities (-1 each when it has none)."""
        got = self.rows.get(kind)
        return np.full(n, -1, np.int64) if got is None else np.asarray(got, np.int64)


DENSE = 2  # pairs numbered by arithmetic while their code range is at most this many codes a pair (+ SLACK)
SLACK = 1 << 20


def pair_codes(k1: list[np.ndarray], k2: list[np.ndarray]) -> tuple[list[np.ndarray], int]:
    """One code in [0, size) per (k1, k2) pair of each part (``k1[i]``, ``k2[i]``: int64 arrays of one
    length), equal exactly when both are equal; and ``size``, at most ``DENSE`` codes a pair (+
    ``SLACK``): by arithmetic where the values' ranges allow (the usual case: one process, correlation
    ids counted from 1; the parts not put together), else the distinct pairs numbered (sorted)."""
    n = sum(len(k) for k in k1)
    if not n:
        return [np.zeros(len(k), np.int64) for k in k1], 0
    full = [i for i, k in enumerate(k1) if len(k)]
    cuts = np.cumsum([len(k) for k in k1])[:-1]  # (where each part starts, put together)
    c1: list[np.ndarray] | None = None
    if min(int(k1[i].min()) for i in full) != max(int(k1[i].max()) for i in full):
        codes, u1 = pd.factorize(np.concatenate(k1))  # few distinct values (processes): hashed
        c1 = np.split(codes.astype(np.int64, copy=False), cuts)
        distinct = len(u1)
    else:  # one process (a report's usual case): nothing to hash
        distinct = 1
    lo, hi = min(int(k2[i].min()) for i in full), max(int(k2[i].max()) for i in full)
    span = hi - lo + 1
    if distinct * span <= DENSE * n + SLACK:  # c1 * span + (k2 - lo), a new array per part, no other
        if c1 is None:
            return [np.subtract(k, lo) for k in k2], span
        for c, k in zip(c1, k2):
            c *= span
            c += k
            c -= lo
        return c1, distinct * span
    cols = np.concatenate(c1) if c1 is not None else np.zeros(n, np.int64)
    uniq, codes = np.unique(np.stack([cols, np.concatenate(k2)], axis=1), axis=0, return_inverse=True)
    return np.split(codes.ravel().astype(np.int64, copy=False), cuts), len(uniq)


def match(call_tid: np.ndarray, call_corr: np.ndarray, acts: dict[str, tuple[np.ndarray, np.ndarray]]) -> Launches:
    """The launch call of every activity: ``call_tid``/``call_corr`` the calls' thread and correlation
    id (a negative id: none), ``acts`` kind -> (gpid, corr) of its activities."""
    return match_parts([(call_tid, call_corr)], {k: [gc] for k, gc in acts.items()})


Parts = list[tuple[np.ndarray, np.ndarray]]  # a table's two columns, in parts (stage A's batches)


def match_parts(calls: Parts, acts: dict[str, Parts]) -> Launches:
    """``match`` of tables in parts, as if each were put together: ``calls`` the parts of the calls'
    (tid, corr), ``acts`` kind -> the parts of its activities' (gpid, corr).  Nothing is put together
    but the result (and, for ids too sparse for arithmetic codes, ``pair_codes``'s numbering): each
    part's codes are looked up part by part, so a whole report's batches take a few arrays of a
    batch's size beside them (in a forked process every new array is fresh pages)."""
    tids = [np.asarray(t, np.int64) for t, _ in calls]
    corrs = [np.asarray(c, np.int64) for _, c in calls]
    n = sum(len(c) for c in corrs)
    kind = np.int32 if n < np.iinfo(np.int32).max else np.int64
    at = np.cumsum([0] + [len(c) for c in corrs])
    rows: list[np.ndarray] = []  # each call part's rows with an id, as positions in the whole table
    for i, c in enumerate(corrs):
        if len(c) and int(c.min()) < 0:  # (calls without an id: not linked, as a rule none)
            keep = np.flatnonzero(c >= 0)
            tids[i], corrs[i] = tids[i][keep], c[keep]
            rows.append((keep + at[i]).astype(kind))
        else:
            rows.append(np.arange(at[i], at[i + 1], dtype=kind))
    act_parts = [(np.asarray(g, np.int64), np.asarray(c, np.int64)) for parts in acts.values() for g, c in parts]
    codes, size = pair_codes(
        [process_key(t) for t in tids] + [g for g, _ in act_parts], corrs + [c for _, c in act_parts]
    )
    del tids, corrs
    call_codes, act_codes = codes[: len(calls)], codes[len(calls) :]
    first = np.full(size, n, kind)  # per code, its first call's row (n: none)
    for c, r in zip(call_codes, rows):
        np.minimum.at(first, c, r)
    with_id = sum(len(r) for r in rows)
    out = Launches(shared=with_id - int(np.count_nonzero(first < n)))
    each = iter(act_codes)  # (the activities' parts in ``act_parts``'s order: kind after kind)
    for k, kind_parts in acts.items():
        parts = [next(each) for _ in kind_parts]
        hit = np.empty(sum(len(c) for c in parts), np.int64)
        a = 0
        for c in parts:
            hit[a : a + len(c)] = first[c]
            a += len(c)
        hit[hit == n] = -1
        out.rows[k] = hit
    return out


def of_tables(calls: pd.DataFrame | None, tables: dict[str, pd.DataFrame]) -> Launches | None:
    """``match`` on whole tables (None: no calls)."""
    if calls is None:
        return None
    acts = {
        k: (tables[k]["gpid"].to_numpy(np.int64), tables[k]["corr"].to_numpy(np.int64))
        for k in ACTIVITIES
        if k in tables
    }
    return match(calls["tid"].to_numpy(np.int64), calls["corr"].to_numpy(np.int64), acts)


def restrict(
    launches: Launches, calls_kept: np.ndarray | None, kept: dict[str, np.ndarray] | None, shared: int
) -> Launches:
    """``launches`` for a part of the rows: ``kept`` kind -> the activities kept (a boolean mask over
    its rows; None: all), ``calls_kept`` the calls kept (a boolean mask over the calls the rows index;
    None: all), a call dropped leaving its activities without one; ``shared``: the note to carry."""
    new_row = None
    if calls_kept is not None:
        new_row = np.cumsum(calls_kept, dtype=np.int64) - 1
        new_row[~calls_kept] = -1
    out = Launches(shared=shared)
    for kind, got in launches.rows.items():
        if kept is not None and kind not in kept:
            continue
        row = np.asarray(got, np.int64) if kept is None else np.asarray(got, np.int64)[kept[kind]]
        if new_row is not None:
            row = np.where(row >= 0, new_row[np.maximum(row, 0)] if len(new_row) else -1, -1)
        out.rows[kind] = row
    return out
