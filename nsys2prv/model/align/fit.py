"""Fit per-report clock corrections to sync points and messages.

Model: aligned t' = t + offset_r + drift_r * (t - t_ref_r)   (Clock), one clock per report.

1. Estimate (robust, exit simultaneity).  The exits of a synchronising collective are
   close to simultaneous (all ranks are released by the last arrival), so for every
   sync point the median aligned exit over ranks is a reference, and each report's
   correction is fitted to (reference - its exit) over all points: the median when
   only an offset is fitted; with drift, Theil-Sen (median of pairwise slopes) on
   per-bin medians of the points in time order, then the median intercept.  The
   reference is recomputed after each fit (a few passes).  Per-collective midpoints
   of entry and exit would be biased by waiting time (the last arrival enters late);
   exits are not.
2. Drift is fitted only with enough points (>= MIN_DRIFT_POINTS) spanning enough time
   (>= MIN_DRIFT_SPAN_NS), and kept only when significant: |drift| * span larger than
   three standard errors of a line fitted through residuals of that spread, AND the
   drift cuts the residual spread by >= 25 % (on tests/data/mpi8, one host so no true
   drift, scheduling noise of ~1 ms otherwise gives a "significant" 57 ppm).
   2b. Bounds (bounds.py): each pair of clocks exchanging both ways (messages, shared collectives) is
   bounded from both sides by its fastest exchange each way; where that interval is surer than the
   exits' estimate (its half-width below SURER standard errors), the clocks are fitted to the
   intervals' midpoints (the symmetric-delay estimate), and the largest group whose session offsets lie
   within their intervals keeps them.  Neither reads the session offsets of a clock it moves.
3. Clamp into the feasible interval.  Physical constraints hold for the true clocks:
   no rank leaves a synchronising collective before the last one entered
   (x'[r,i] >= max_q e'[q,i]) and no message is received before it was sent
   (recv_end' >= send_start').  Each report's offset is moved into the interval those
   constraints give against the current offsets of the others (damped, a few rounds).
   "Everyone but me" maxima come from the top two per column, so a pass is
   O(ranks x points), never O(ranks^2).
4. Fix what is left minimally: longest-path relaxation of the difference constraints
   (Bellman-Ford with one auxiliary node per sync point): offsets only move later, each
   by the least amount that satisfies every constraint.  Remaining violations (a
   positive cycle: inconsistent data) are counted and reported.
5. Gauge: a common offset or drift of all clocks is not observable.  The reference
   report (the first task's, i.e. rank 0) keeps its session offset and zero drift.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from nsys2prv.model.align import bounds
from nsys2prv.model.align.syncpoints import SyncPoints

MIN_DRIFT_POINTS = 10
MIN_DRIFT_SPAN_NS = 500_000_000  # 0.5 s
DRIFT_BINS = 48
DRIFT_MIN_GAIN = 0.75  # a kept drift cuts the residual spread (MAD) by >= 25 %
PASSES = 6
CLAMP_ROUNDS = 30
RELAX_ROUNDS = 200
MAD_TO_SIGMA = 1.4826
SIGNIFICANT = 3.0  # a fitted offset replaces the session offset only when it differs by > 3 standard errors
SURER = 1.0  # the bounds replace the exits where their half-width (their worst error, + W0) is below one standard error


@dataclass
class P2P:
    """Matched messages as constraints: recv_end (dst clock) >= send_start (src clock).  The last
    ``rendezvous`` rows are the other direction of synchronous sends: the send returns only once its
    receive was posted, so the send's end (as recv_end, on the sender's clock: dst) >= the receive
    call's start (as send_start, on the receiver's clock: src)."""

    src: np.ndarray  # report of the sender
    dst: np.ndarray
    send_start: np.ndarray  # sender-local
    recv_end: np.ndarray  # receiver-local
    rendezvous: int = 0

    @classmethod
    def empty(cls) -> "P2P":
        z = np.zeros(0, np.int64)
        return cls(z, z, z, z)

    @classmethod
    def of(cls, send_report, recv_report, send_start, send_end, recv_start, recv_end, synchronous) -> "P2P":
        """The constraints of matched messages (report and times of each side; which are synchronous)."""
        sync = np.asarray(synchronous, bool)
        cat = lambda a, b: np.concatenate([np.asarray(a, np.int64), np.asarray(b, np.int64)])  # noqa: E731
        return cls(
            cat(send_report, np.asarray(recv_report)[sync]),
            cat(recv_report, np.asarray(send_report)[sync]),
            cat(send_start, np.asarray(recv_start)[sync]),
            cat(recv_end, np.asarray(send_end)[sync]),
            int(sync.sum()),
        )

    @property
    def messages(self) -> int:
        return len(self.src) - self.rendezvous


@dataclass
class FitResult:
    offsets: np.ndarray  # int64 per report (session offsets + corrections)
    drift: np.ndarray  # float per report
    t_ref: np.ndarray  # int64 per report
    fitted: np.ndarray  # bool per report: has sync rows (else kept its session offset)
    residual_mad: np.ndarray  # ns per report (sigma-scaled MAD of exit residuals), NaN if none
    residual_max: np.ndarray  # ns per report
    stderr: np.ndarray  # ns per report: standard error of the offset estimate
    points: np.ndarray  # estimate points per report
    violations_before: int = 0  # constraints violated after the estimate (before clamp/fix)
    violations_clamped: int = 0  # after the clamp, before the fix
    violations_after: int = 0  # after the fix (0 unless the data are inconsistent)
    moved_by_fix: int = 0  # clocks (the fit's unknowns: reports, or hosts via hosts.to_hosts) the fix moved
    notes: list[str] = field(default_factory=list)
    kept: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))  # per report: estimate not significant
    # per report: placed at the bounds' midpoint: the half-width of its interval against the reference (ns,
    # the midpoint's worst error); NaN where the bounds did not place it
    bound: np.ndarray = field(default_factory=lambda: np.zeros(0))


def aligned(t: np.ndarray, rep: np.ndarray, off: np.ndarray, drift: np.ndarray, tref: np.ndarray) -> np.ndarray:
    """Exactly Clock.apply, vectorised over rows (t: (R, N) or (n,), rep: report per row/element)."""
    t = np.asarray(t, np.int64)
    o, k, r0 = off[rep], drift[rep], tref[rep]
    if t.ndim == 2:
        o, k, r0 = o[:, None], k[:, None], r0[:, None]
    return t + o + np.rint(k * (t - r0).astype(np.float64)).astype(np.int64)


def _per_report(values: np.ndarray, rep: np.ndarray, n: int, fn=np.median) -> np.ndarray:
    out = np.full(n, np.nan)
    if len(np.unique(rep)) == len(rep):  # one row per report (the usual case): no grouping
        out[rep] = values
        return out
    for r in np.unique(rep):
        out[r] = fn(values[rep == r])
    return out


def _line(u: np.ndarray, d: np.ndarray, with_drift: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Robust (intercept, slope) per row of d against u; slope 0 where not with_drift."""
    slope = np.zeros(len(d))
    rows = np.flatnonzero(with_drift)
    if len(rows):
        order = np.argsort(np.median(u[rows], axis=0), kind="stable")
        bins = [b for b in np.array_split(order, min(DRIFT_BINS, len(order))) if len(b)]
        bu = np.stack([np.median(u[rows][:, b], axis=1) for b in bins], axis=1)
        bd = np.stack([np.median(d[rows][:, b], axis=1) for b in bins], axis=1)
        i, j = np.triu_indices(bu.shape[1], 1)
        du = bu[:, j] - bu[:, i]
        with np.errstate(divide="ignore", invalid="ignore"):
            s = np.where(np.abs(du) > 0, (bd[:, j] - bd[:, i]) / du, np.nan)
        slope[rows] = np.nan_to_num(np.nanmedian(s, axis=1))
    intercept = np.median(d - slope[:, None] * u, axis=1)
    return intercept, slope


def _residuals(sp: SyncPoints, off, drift, tref, est) -> np.ndarray:
    a = aligned(sp.exit[:, est], sp.reports, off, drift, tref).astype(np.float64)
    a -= a.min()
    return a - np.median(a, axis=0)


def _estimate(
    sp: SyncPoints, off: np.ndarray, drift: np.ndarray, tref: np.ndarray, allow_drift: np.ndarray, n_rep: int
) -> None:
    est = sp.estimate
    u = (sp.exit[:, est] - tref[sp.reports][:, None]).astype(np.float64)
    row_drift = allow_drift[sp.reports]
    for _ in range(PASSES):
        d = -_residuals(sp, off, drift, tref, est)  # reference - own exit
        dc, dk = _line(u, d, row_drift)
        dc_r, dk_r = _per_report(dc, sp.reports, n_rep), _per_report(dk, sp.reports, n_rep)
        has = ~np.isnan(dc_r)
        off[has] += np.rint(dc_r[has]).astype(np.int64)
        drift[has] += dk_r[has]
        span = np.ptp(u, axis=1).max() if u.size else 0.0
        if np.nanmax(np.abs(dc_r)) < 0.5 and np.nanmax(np.abs(dk_r)) * span < 0.5:
            break


def _gauge(off: np.ndarray, drift: np.ndarray, tref: np.ndarray, ref: int, session: np.ndarray) -> None:
    """Make the reference report's clock the trace's clock: zero drift, its session offset."""
    if drift[ref] != 0.0:
        big_k = drift[ref] / (1.0 + drift[ref])
        tau0 = float(off[ref] + tref[ref])
        at_ref = (off + tref).astype(np.float64)  # aligned time of each report's t_ref
        off -= np.rint(big_k * (at_ref - tau0)).astype(np.int64)
        drift[:] = (1.0 + drift) * (1.0 - big_k) - 1.0
        drift[ref] = 0.0
    off -= off[ref] - session[ref]


class _Constraints:
    """Entry/exit of constraining columns and messages, with offsets excluded (drift applied)."""

    def __init__(self, sp: SyncPoints, p2p: P2P, drift: np.ndarray, tref: np.ndarray, n_rep: int):
        zero = np.zeros(n_rep, np.int64)
        con = sp.constrain
        self.rep = sp.reports
        self.e = aligned(sp.entry[:, con], sp.reports, zero, drift, tref)
        self.x = aligned(sp.exit[:, con], sp.reports, zero, drift, tref)
        self.src, self.dst = p2p.src, p2p.dst
        self.s = aligned(p2p.send_start, p2p.src, zero, drift, tref)
        self.q = aligned(p2p.recv_end, p2p.dst, zero, drift, tref)
        self.n_rep = n_rep
        self.any = self.e.size > 0 or len(self.src) > 0

    def count(self, off: np.ndarray) -> int:
        """Violated constraints: sync points where someone left before the last entered, and messages
        received before they were sent."""
        n = 0
        if self.e.size:
            e = self.e + off[self.rep][:, None]
            x = self.x + off[self.rep][:, None]
            n += int((e.max(axis=0) > x.min(axis=0)).sum())
        if len(self.src):
            n += int((self.q + off[self.dst] < self.s + off[self.src]).sum())
        return n

    def bounds(self, off: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Feasible [lo, hi] of each report's offset given the others' current offsets."""
        lo = np.full(self.n_rep, -np.inf)
        hi = np.full(self.n_rep, np.inf)
        if self.e.size and self.e.shape[0] > 1:
            e = (self.e + off[self.rep][:, None]).astype(np.float64)
            x = (self.x + off[self.rep][:, None]).astype(np.float64)
            cols = np.arange(e.shape[1])
            i1 = e.argmax(axis=0)  # the latest entry of each column ...
            e1 = e[i1, cols]
            e[i1, cols] = -np.inf
            e2 = e.max(axis=0)  # ... and the latest of the others
            e[i1, cols] = e1
            last_other_entry = np.broadcast_to(e1, e.shape).copy()
            last_other_entry[i1, cols] = e2
            j1 = x.argmin(axis=0)  # the earliest exit, and of the others
            x1 = x[j1, cols]
            x[j1, cols] = np.inf
            x2 = x.min(axis=0)
            x[j1, cols] = x1
            first_other_exit = np.broadcast_to(x1, x.shape).copy()
            first_other_exit[j1, cols] = x2
            own_x = x - off[self.rep][:, None]
            own_e = e - off[self.rep][:, None]
            np.maximum.at(lo, self.rep, (last_other_entry - own_x).max(axis=1))
            np.minimum.at(hi, self.rep, (first_other_exit - own_e).min(axis=1))
        if len(self.src):
            other = self.src != self.dst
            np.maximum.at(lo, self.dst[other], (self.s + off[self.src] - self.q)[other].astype(np.float64))
            np.minimum.at(hi, self.src[other], (self.q + off[self.dst] - self.s)[other].astype(np.float64))
        return lo, hi

    def relax(self, off: np.ndarray) -> tuple[np.ndarray, bool]:
        """Least offsets >= off that satisfy every constraint (longest paths), and whether they exist
        (with a positive cycle, i.e. contradictory constraints, the relaxation would never stop)."""
        off = off.copy()
        for _ in range(RELAX_ROUNDS):
            need = np.full(self.n_rep, np.iinfo(np.int64).min, np.int64)
            if self.e.size:
                z = (self.e + off[self.rep][:, None]).max(axis=0)  # the last entry of each point
                np.maximum.at(need, self.rep, (z[None, :] - self.x).max(axis=1))
            if len(self.src):
                np.maximum.at(need, self.dst, self.s + off[self.src] - self.q)
            new = np.maximum(off, need)
            if np.array_equal(new, off):
                return off, True
            off = new
        return off, False


def _offset_stderr(sp: SyncPoints, off, drift, tref, points: np.ndarray, n_rep: int) -> np.ndarray:
    """Per report: the standard error of its estimated offset (its exits' spread over the points; 0 where
    it has none).  A fitted offset replaces the session offset only when it differs from it by more than
    SIGNIFICANT of these (and no drift was kept): otherwise the session clocks are as good as the estimate
    (one clock shared by the hosts, or clocks synchronised better than the collectives' exits are
    simultaneous) and are kept; the constraints may still move them, the least that satisfies them."""
    r = _residuals(sp, off, drift, tref, sp.estimate)
    mad = _per_report(MAD_TO_SIGMA * np.median(np.abs(r), axis=1), sp.reports, n_rep)
    return 1.2533 * np.nan_to_num(mad) / np.sqrt(np.maximum(points, 1))


def _truncated_mean(mu: np.ndarray, sigma: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The mean of N(mu, sigma^2) restricted to [lo, hi], per element: an estimate with error sigma
    combined with the interval the constraints allow (about mu when sigma is small against the interval
    and mu inside it; about the interval's middle when sigma is large; the near bound when mu is far
    outside).  sigma 0: mu clipped to the interval."""
    out = np.clip(mu, lo, hi)
    for i in np.flatnonzero(sigma > 0):
        a, b = (lo[i] - mu[i]) / sigma[i], (hi[i] - mu[i]) / sigma[i]
        if a > 30.0:  # (the interval far above mu: its density falls off from lo)
            out[i] = min(lo[i] + sigma[i] / a, hi[i])
            continue
        if b < -30.0:
            out[i] = max(hi[i] + sigma[i] / b, lo[i])
            continue
        phi = lambda x: 0.0 if not np.isfinite(x) else math.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)  # noqa: E731
        cdf = lambda x: 0.5 * math.erfc(-x / math.sqrt(2.0))  # noqa: E731
        z = cdf(b) - cdf(a)
        if z > 1e-300:
            out[i] = min(max(mu[i] + sigma[i] * (phi(a) - phi(b)) / z, lo[i]), hi[i])
    return out


def _from_bounds(cons: _Constraints, off, drift, sigma, fitted, session, ref: int, res: FitResult, estimated) -> None:
    """The symmetric-delay estimate (bounds.py) in place of the exits' where it is the surer one: for the
    clocks linked to the reference's by bounds from both sides whose interval against the reference is
    narrower (half-width, its worst error, + W0) than SURER standard errors of their exit estimate (any,
    without sync points).  Of these, the largest group whose session offsets lie within their pairs'
    intervals keeps them (not a drifting clock: its clock is not its session's); the others get the
    offsets that fit the intervals' midpoints, whatever their session offsets.  The exits' estimate is not
    mixed in: on a busy machine ranks leave collectives in a systematic order, a bias its standard error
    does not hold.  Updates ``off``, ``sigma`` (0: the clamp only clips), ``res.kept``, ``res.bound`` and
    ``estimated`` in place."""
    # a fitted clock can take the bounds only if SURER standard errors exceed W0 (no half-width is below
    # 0): otherwise the O(clocks^2 x points) bounds are not computed at all
    could = ~fitted | (SURER * sigma > bounds.W0)
    could[ref] = False
    if not could.any():
        return
    lo = bounds.pair_bounds(cons.e, cons.x, cons.rep, cons.src, cons.dst, cons.s, cons.q, cons.n_rep)
    hw = bounds.half_width(lo)[ref]
    surer = np.where(fitted, hw + bounds.W0 <= SURER * sigma, np.isfinite(hw))
    surer[ref] = True
    members = bounds.component(lo, ref, surer)
    if members.sum() < 2:
        return
    keep = bounds.session_kept(lo, members & (drift == 0.0), session, ref)
    value = bounds.midpoints(lo, members, keep, session, ref)
    off[members] = np.rint(value[members]).astype(np.int64)
    kept = res.kept
    kept[members] = keep[members] if keep[ref] else np.arange(len(off))[members] == ref
    moved = members & ~kept
    res.bound[moved] = hw[moved]
    estimated[moved] = off[moved]
    estimated[members & kept] = np.nan
    sigma[moved] = 0.0


def fit_clocks(sp: SyncPoints, p2p: P2P, session: np.ndarray, ref: int, estimate: bool = True) -> FitResult:
    """Corrections for every report.  ``estimate=False`` only evaluates the given (session) offsets."""
    n_rep = len(session)
    off = np.asarray(session, np.int64).copy()
    drift = np.zeros(n_rep)
    tref = np.zeros(n_rep, np.int64)
    fitted = np.zeros(n_rep, bool)
    mad = np.full(n_rep, np.nan)
    mx = np.full(n_rep, np.nan)
    stderr = np.full(n_rep, np.nan)
    points = np.zeros(n_rep, np.int64)
    res = FitResult(
        off, drift, tref, fitted, mad, mx, stderr, points, kept=np.zeros(n_rep, bool), bound=np.full(n_rep, np.nan)
    )
    sigma = np.zeros(n_rep)  # standard error of each estimated offset (none without sync points)
    if sp.n == 0 and not len(p2p.src):
        return res
    est = sp.estimate
    if sp.n:
        fitted[np.unique(sp.reports)] = True
        centre = np.median(sp.exit[:, est], axis=1).astype(np.float64)  # t_ref: the middle of the points
        tref[:] = np.nan_to_num(_per_report(centre, sp.reports, n_rep)).astype(np.int64)
        points[np.unique(sp.reports)] = int(est.sum())
    if estimate and sp.n:
        u = (sp.exit[:, est] - tref[sp.reports][:, None]).astype(np.float64)
        span = _per_report(np.ptp(u, axis=1), sp.reports, n_rep, np.max)
        allow = fitted & (points >= MIN_DRIFT_POINTS) & (np.nan_to_num(span) >= MIN_DRIFT_SPAN_NS)
        _estimate(sp, off, drift, tref, np.zeros(n_rep, bool), n_rep)  # offsets first: shift-invariant
        if allow.any():
            _estimate(sp, off, drift, tref, allow, n_rep)
        if allow.any():  # keep a drift only when it is significant and explains the spread
            r = _residuals(sp, off, drift, tref, est)
            mad1 = _per_report(np.median(np.abs(r), axis=1), sp.reports, n_rep)
            # the same reference, this report without its drift (best offset): what the drift has to beat
            r0 = r + drift[sp.reports][:, None] * u
            r0 -= np.median(r0, axis=1)[:, None]
            mad0 = _per_report(np.median(np.abs(r0), axis=1), sp.reports, n_rep)
            n = np.maximum(points, 1)
            noise = 3.0 * MAD_TO_SIGMA * np.nan_to_num(mad1) * np.sqrt(12.0 / n)
            weak = allow & (
                (np.abs(drift) * np.nan_to_num(span) <= noise)
                | (np.nan_to_num(mad1) > DRIFT_MIN_GAIN * np.nan_to_num(mad0))
            )
            if weak.any():
                drift[weak] = 0.0
                _estimate(sp, off, drift, tref, allow & ~weak, n_rep)
        _gauge(off, drift, tref, ref, np.asarray(session, np.int64))
        sigma = _offset_stderr(sp, off, drift, tref, points, n_rep)
        res.kept = (drift == 0.0) & (np.abs(off - np.asarray(session, np.int64)) <= SIGNIFICANT * sigma)
        off[res.kept] = np.asarray(session, np.int64)[res.kept]
        drift[res.kept] = 0.0
    estimated = np.where(res.kept, np.nan, off.astype(np.float64)) if estimate and sp.n else np.full(n_rep, np.nan)
    cons = _Constraints(sp, p2p, drift, tref, n_rep)
    if estimate and cons.any and n_rep > 1:
        _from_bounds(cons, off, drift, sigma, fitted, np.asarray(session, np.int64), ref, res, estimated)
    res.violations_before = cons.count(off)
    if estimate and cons.any:
        has = fitted | np.isin(np.arange(n_rep), np.concatenate([p2p.src, p2p.dst]))
        for _ in range(CLAMP_ROUNDS):
            lo, hi = cons.bounds(off)
            ok = has & (lo <= hi)
            # a kept (session) offset moves the least the constraints require; an estimated one to its
            # expected value within them (its estimate's normal error, truncated to the feasible interval)
            target = np.clip(off.astype(np.float64), lo, hi)
            est_h = ~np.isnan(estimated) & ok
            target[est_h] = _truncated_mean(estimated[est_h], sigma[est_h], lo[est_h], hi[est_h])
            step = np.where(ok, target - off, 0.0)
            if np.abs(step).max(initial=0.0) < 1.0:
                break
            off = off + np.rint(0.5 * step).astype(np.int64)  # damped: both sides of a pair move
        res.violations_clamped = cons.count(off)
        fixed, feasible = cons.relax(off)
        if feasible:
            res.moved_by_fix = int((fixed != off).sum())
            off = fixed
        off -= off[ref] - int(session[ref])
    res.violations_after = cons.count(off)
    if res.violations_after:
        res.notes.append(
            f"{res.violations_after} sync constraint(s) still violated: the data are inconsistent "
            "(a receive before its send, or a collective left before all ranks entered)"
        )
    if sp.n:
        r = _residuals(sp, off, drift, tref, est)
        mad[:] = _per_report(MAD_TO_SIGMA * np.median(np.abs(r), axis=1), sp.reports, n_rep)
        mx[:] = _per_report(np.abs(r).max(axis=1), sp.reports, n_rep, np.max)
        stderr[:] = 1.2533 * mad / np.sqrt(np.maximum(points, 1))
    res.offsets, res.drift, res.t_ref = off, drift, tref
    return res
