"""Offsets from the bounds the data put on them (NTP-style): the symmetric-delay estimate.

Every physical constraint (a message is received after it was sent; no rank leaves a synchronising
collective before the last rank entered it) bounds the difference of two clocks from one side:
off_b - off_a >= c.  Between two clocks that exchange in both directions (a ping-pong, a halo exchange,
the collectives they share) the true difference lies in an interval [lo_ab, hi_ab] whose ends are set by
the fastest exchange each way (its minimal one-way delay).  Its midpoint is the symmetric-delay estimate
(NTP's, and Extrae's / Score-P's clock-sync ping-pongs'); it is the estimate whose worst error is least:
half the interval's width, whatever the true delays, and exact when the two minimal delays are equal.

- ``pair_bounds``: lo[a, b], the tightest lower bound of off_b - off_a from the direct constraints,
  tightened along paths (longest paths, Floyd-Warshall; direct bounds only when the data contradict
  themselves or there are more than ``MAX_CLOSURE`` clocks).
- ``midpoints``: offsets that fit the pairs' midpoints (least squares, weighted by 1 / (half-width + W0)^2)
  with some clocks held fixed.
- ``session_kept``: the clocks whose session offsets agree with the bounds: the largest group of clocks
  that are pairwise within their intervals (they keep their session offsets), preferring the reference's.

No step reads the session offsets except ``session_kept``: the estimate of a clock that is not kept does
not depend on how far its session clock was off.
"""

from __future__ import annotations

import numpy as np

MAX_CLOSURE = 512  # clocks: O(n^3) path closure up to here
W0 = 1_000.0  # ns added to every half-width in the weights (a zero-width interval is not infinitely sure)
FAR = 1e17  # |times| beyond this are the syncpoints' ABSENT sentinels (no bound)
CHUNK = 1 << 18  # elements (8 bytes each) of the collectives' per-point arrays at a time: bounded memory


def pair_bounds(e, x, rep, src, dst, s, q, n: int) -> np.ndarray:
    """lo (n, n): lo[a, b] is the tightest lower bound of off_b - off_a (-inf: none; lo[a, a] = 0).
    ``e``/``x`` (rows, points): entries and exits of constraining collectives on clock ``rep[row]``
    (offsets excluded); ``s``/``q``: send start (clock ``src``) and receive end (clock ``dst``) of messages."""
    lo = np.full((n, n), -np.inf)
    if len(src):
        other = src != dst
        np.maximum.at(lo, (src[other], dst[other]), (s - q)[other].astype(np.float64))
    if e.size:
        _collective_bounds(lo, e, x, np.asarray(rep), n)
    np.fill_diagonal(lo, 0.0)
    if n > MAX_CLOSURE:
        return lo
    closed = lo.copy()
    for k in range(n):
        closed = np.maximum(closed, closed[:, k : k + 1] + closed[k : k + 1, :])
    if (np.diag(closed) > 0).any():  # a positive cycle: the data contradict themselves
        return lo
    return closed


def _collective_bounds(lo: np.ndarray, e, x, rep: np.ndarray, n: int) -> None:
    """Tighten ``lo`` (in place) by the collectives: off_b + x_b >= off_a + e_a, so off_b - off_a >=
    e_a - x_b, with e_a a clock's last entry and x_b a clock's first exit of one sync point.  A block of
    points at a time (``CHUNK`` elements of the largest (rows or clocks) x points array), so that memory
    does not grow with clocks x points; a maximum over blocks is the maximum over all points."""
    clocks = np.unique(rep)
    rows_of = [rep == c for c in clocks]
    step = max(1, CHUNK // max(n, e.shape[0]))
    for j in range(0, e.shape[1], step):
        ef, xf = e[:, j : j + step].astype(np.float64), x[:, j : j + step].astype(np.float64)
        last_in = np.full((n, ef.shape[1]), -np.inf)  # per clock and point: its last entry ...
        first_out = np.full((n, ef.shape[1]), np.inf)  # ... and its first exit
        for c, mine in zip(clocks, rows_of):
            last_in[c] = ef[mine].max(axis=0)
            first_out[c] = xf[mine].min(axis=0)
        del ef, xf
        last_in[last_in < -FAR] = -np.inf
        first_out[first_out > FAR] = np.inf
        for a in clocks:
            with np.errstate(invalid="ignore"):
                d = np.nan_to_num(last_in[a][None, :] - first_out, nan=-np.inf, posinf=-np.inf, copy=False)
            lo[a] = np.maximum(lo[a], d.max(axis=1, initial=-np.inf))


def two_sided(lo: np.ndarray) -> np.ndarray:
    """(n, n) bool: pairs whose difference is bounded from both sides, by an interval that is not empty
    (lo[a, b] <= -lo[b, a]: where the data contradict themselves, they bound nothing)."""
    with np.errstate(invalid="ignore"):
        return np.isfinite(lo) & np.isfinite(lo.T) & (lo + lo.T <= 0)


def half_width(lo: np.ndarray) -> np.ndarray:
    """Half the width of each pair's interval [lo[a, b], -lo[b, a]] (inf where one-sided)."""
    with np.errstate(invalid="ignore"):
        return np.where(two_sided(lo), (-lo.T - lo) / 2.0, np.inf)


def _grown(link: np.ndarray, start: int) -> np.ndarray:
    """The nodes reachable from ``start`` through ``link`` (bool (n, n)), start included."""
    seen = np.zeros(len(link), bool)
    seen[start] = True
    while True:
        grown = seen | link[seen].any(axis=0)
        if (grown == seen).all():
            return seen
        seen = grown


def component(lo: np.ndarray, start: int, among: np.ndarray) -> np.ndarray:
    """The clocks of ``among`` linked to ``start`` by two-sided pairs (bool, n)."""
    if not among[start]:
        return np.zeros(len(lo), bool)
    return _grown(two_sided(lo) & among[:, None] & among[None, :], start)


def midpoints(
    lo: np.ndarray,
    members: np.ndarray,
    keep: np.ndarray,
    session: np.ndarray,
    ref: int,
) -> np.ndarray:
    """Offsets of ``members`` (bool, n; linked by two-sided pairs, see ``component``) that fit every
    two-sided pair's midpoint, least squares with weights 1 / (half-width + W0)^2.  The members of
    ``keep`` keep their session offsets against each other (one unknown for all of them); the reference
    keeps its own.  ``session`` elsewhere."""
    s = np.asarray(session, np.float64)
    out = s.copy()
    n = len(lo)
    free = members & ~keep
    group = np.full(n, -1)
    group[free] = np.arange(int(free.sum()))
    base = np.zeros(n)  # x = base + v[group]
    n_groups = int(free.sum())
    if (keep & members).any():
        group[keep & members] = n_groups
        base[keep & members] = s[keep & members]
        n_groups += 1
    if n_groups < 2:
        return out
    both = two_sided(lo) & members[:, None] & members[None, :]
    a, b = np.nonzero(np.triu(both, 1))
    a, b = a[group[a] != group[b]], b[group[a] != group[b]]
    mid = (lo[a, b] - lo[b, a]) / 2.0 - (base[b] - base[a])  # estimate of v[group b] - v[group a]
    w = 1.0 / (np.abs((-lo[b, a] - lo[a, b]) / 2.0) + W0) ** 2
    ga, gb = group[a], group[b]
    lap = np.zeros((n_groups, n_groups))
    rhs = np.zeros(n_groups)
    np.add.at(lap, (ga, ga), w)
    np.add.at(lap, (gb, gb), w)
    np.add.at(lap, (ga, gb), -w)
    np.add.at(lap, (gb, ga), -w)
    np.add.at(rhs, gb, w * mid)
    np.add.at(rhs, ga, -w * mid)
    fixed = group[ref]
    v_ref = s[ref] - base[ref]
    f = np.array([g for g in range(n_groups) if g != fixed])
    v = np.zeros(n_groups)
    v[fixed] = v_ref
    v[f] = np.linalg.solve(lap[np.ix_(f, f)], rhs[f] - lap[f, fixed] * v_ref)
    out[members] = base[members] + v[group[members]]
    return out


def session_kept(lo: np.ndarray, members: np.ndarray, session: np.ndarray, ref: int) -> np.ndarray:
    """The members whose session offsets keep: the largest group linked by pairs whose session difference
    lies within their interval (ties: the reference's group, else the first)."""
    s = np.asarray(session, np.float64)
    diff = s[None, :] - s[:, None]  # off_b - off_a on the session clocks
    inside = two_sided(lo) & (diff >= lo) & (diff <= -lo.T)
    left = members.copy()
    best = np.zeros(len(lo), bool)
    for start in ([ref] if members[ref] else []) + list(np.flatnonzero(members)):
        if not left[start]:
            continue
        group = _grown(inside & left[:, None] & left[None, :], start)
        left &= ~group
        if group.sum() > best.sum():
            best = group
    return best
