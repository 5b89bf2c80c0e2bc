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


def first_of(codes: np.ndarray, size: int) -> np.ndarray:
    """Per code in [0, size), the position of its first occurrence in ``codes`` (``len(codes)``: none);
    int32 positions where they fit (the table is indexed, not sorted: no argsort of the codes)."""
    kind = np.int32 if len(codes) < np.iinfo(np.int32).max else np.int64
    first = np.full(size, len(codes), kind)
    np.minimum.at(first, codes, np.arange(len(codes), dtype=kind))
    return first


def first_match(
    left: np.ndarray, right: np.ndarray, size: int | None = None, first: np.ndarray | None = None
) -> np.ndarray:
    """For each code of ``left``, the position of the first equal code in ``right`` (-1: none); codes
    in [0, ``size``) (None: up to the largest); ``first``: ``first_of(right, size)``, when known."""
    if not len(right) or not len(left):
        return np.full(len(left), -1, np.int64)
    if first is None:
        top = max(int(left.max()), int(right.max())) + 1
        first = first_of(right, top if size is None else size)
    hit = first[left].astype(np.int64)
    hit[hit == len(right)] = -1
    return hit


def match(call_tid: np.ndarray, call_corr: np.ndarray, acts: dict[str, tuple[np.ndarray, np.ndarray]]) -> Launches:
    """The launch call of every activity: ``call_tid``/``call_corr`` the calls' thread and correlation
    id (a negative id: none), ``acts`` kind -> (gpid, corr) of its activities."""
    call_corr, call_tid = np.asarray(call_corr, np.int64), np.asarray(call_tid, np.int64)
    calls = None  # the calls with an id (None: every call, as a rule: no copy then)
    if len(call_corr) and int(call_corr.min()) < 0:
        calls = np.flatnonzero(call_corr >= 0)
        call_tid, call_corr = call_tid[calls], call_corr[calls]
    (call_codes, *act_codes), size = pair_codes(
        [process_key(call_tid), *(np.asarray(g, np.int64) for g, _ in acts.values())],
        [call_corr, *(np.asarray(c, np.int64) for _, c in acts.values())],
    )
    first = first_of(call_codes, size)
    out = Launches(shared=len(call_codes) - int(np.count_nonzero(first < len(call_codes))))
    for kind, codes in zip(acts, act_codes):
        hit = first_match(codes, call_codes, size, first)
        out.rows[kind] = (
            hit
            if calls is None
            else np.where(hit >= 0, calls[np.maximum(hit, 0)] if len(calls) else -1, -1).astype(np.int64)
        )
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
