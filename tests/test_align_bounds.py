"""The symmetric-delay clock estimate (nsys2prv/model/align/bounds.py) on generated exchanges whose true
clocks are known: its error does not depend on how far the session clocks were off, it is exact when the
fastest exchange takes as long each way, and otherwise it errs by half the difference of the two minimal
delays (never more than half the interval the data allow)."""

from __future__ import annotations

import numpy as np
import pytest

from nsys2prv.model.align import bounds
from nsys2prv.model.align.fit import P2P, fit_clocks
from nsys2prv.model.align.syncpoints import SyncPoints

TRUTH = np.array([0, 1_234_567, -3_000_000, 777_000], np.int64)  # trace = local + TRUTH[clock]


def _pingpongs(pairs, delays, n_each=20, seed=1):
    """Messages both ways on every pair: delays[(a, b)] is the least one-way delay a -> b (ns); the others
    are longer by up to 30 us (random).  Returns the P2P of these messages in local times."""
    rng = np.random.default_rng(seed)
    src, dst, s, q = [], [], [], []
    t = 10_000_000
    for a, b in pairs:
        for x, y in ((a, b), (b, a)):
            d = delays[(x, y)] + np.concatenate([[0], rng.integers(0, 30_000, n_each - 1)])
            g = t + np.arange(n_each) * 100_000
            src += [x] * n_each
            dst += [y] * n_each
            s += list(g - TRUTH[x])
            q += list(g + d - TRUTH[y])
            t += n_each * 100_000
    n = len(src)
    return P2P.of(src, dst, s, s, q, q, np.zeros(n, bool))


def _fit(p2p, session, ref=0):
    return fit_clocks(SyncPoints.empty(), p2p, np.asarray(session, np.int64), ref, estimate=True)


SKEWS = [0, 1_000, -1_000, 50_000, -50_000, 500_000, -500_000, 5_000_000, -5_000_000, 10**9]


@pytest.mark.parametrize("skew", SKEWS)
def test_two_clocks_with_equal_least_delays_are_found_exactly_whatever_the_skew(skew):
    p2p = _pingpongs([(0, 1)], {(0, 1): 2_000, (1, 0): 2_000})
    session = TRUTH[:2] + np.array([0, skew])
    res = _fit(p2p, session)
    # the data allow [-2 us, +2 us] around the truth: a session offset within it is kept (its error is
    # the skew), one outside is replaced by the interval's midpoint, the truth, whatever the skew
    want = TRUTH[1] + (skew if abs(skew) <= 2_000 else 0)
    assert res.offsets.tolist() == [0, want]
    assert res.kept.tolist() == [True, abs(skew) <= 2_000]
    assert np.isnan(res.bound[0]) and (np.isnan(res.bound[1]) if abs(skew) <= 2_000 else res.bound[1] == 2_000)
    assert res.violations_after == 0


@pytest.mark.parametrize("skew", SKEWS[3:])
def test_unequal_least_delays_err_by_half_their_difference(skew):
    p2p = _pingpongs([(0, 1)], {(0, 1): 3_000, (1, 0): 11_000})
    res = _fit(p2p, TRUTH[:2] + np.array([0, skew]))
    # interval [T - 3 us, T + 11 us]: midpoint T + 4 us, the same for every skew beyond the interval
    assert res.offsets[1] - TRUTH[1] == 4_000 and res.bound[1] == 7_000  # (half of the 14 us width)


def test_a_reference_whose_own_session_clock_is_off_moves_the_others():
    """The reference (first report) keeps its clock: when it is the skewed one, every other clock moves by
    the skew (they agree with each other and keep their offsets against each other)."""
    pairs = [(a, b) for a in range(4) for b in range(a + 1, 4)]
    p2p = _pingpongs(pairs, {(x, y): 1_500 for a, b in pairs for x, y in ((a, b), (b, a))})
    session = TRUTH + np.array([700_000, 0, 0, 0])
    res = _fit(p2p, session)
    assert (res.offsets - TRUTH).tolist() == [700_000] * 4  # every clock on the reference's
    assert res.kept.tolist() == [True, False, False, False]


@pytest.mark.parametrize("host", range(4))
def test_four_clocks_one_skewed_in_turn(host):
    pairs = [(a, b) for a in range(4) for b in range(a + 1, 4)]
    delays = {(x, y): 1_000 + 500 * ((x + y) % 3) for a, b in pairs for x, y in ((a, b), (b, a))}
    p2p = _pingpongs(pairs, delays, seed=host)
    skew = np.zeros(4, np.int64)
    skew[host] = 5_000_000
    res = _fit(p2p, TRUTH + skew)
    got = res.offsets - res.offsets[0] - (TRUTH - TRUTH[0])
    assert got.tolist() == [0, 0, 0, 0]  # equal least delays each way on every pair: exact
    assert res.kept.sum() == (3 if host else 1)


def test_no_skew_keeps_every_session_clock():
    pairs = [(0, 1), (1, 2), (2, 3)]
    p2p = _pingpongs(pairs, {(x, y): 2_000 + 1_000 * x for a, b in pairs for x, y in ((a, b), (b, a))})
    res = _fit(p2p, TRUTH)
    assert res.offsets.tolist() == TRUTH.tolist() and res.kept.all()


def test_bounds_are_tightened_along_paths_and_contradictions_keep_the_direct_ones():
    inf = -np.inf
    # 0 -> 1 at least 5, 1 -> 2 at least 7: 0 -> 2 at least 12 (direct: 3)
    lo = bounds.pair_bounds(np.zeros((0, 0)), np.zeros((0, 0)), np.zeros(0, np.int64), *_direct(), 3)
    assert lo.tolist() == [[0, 5, 12], [-20, 0, 7], [-40, -35, 0]]
    assert bounds.half_width(lo)[0].tolist() == [0.0, 7.5, 14.0]
    # a positive cycle (0 -> 1 >= 5 and 1 -> 0 >= -2: off1 - off0 in [5, 2]): the direct bounds as given
    src, dst, s, q = np.array([0, 1]), np.array([1, 0]), np.array([5, -2]), np.array([0, 0])
    lo = bounds.pair_bounds(np.zeros((0, 0)), np.zeros((0, 0)), np.zeros(0, np.int64), src, dst, s, q, 2)
    assert lo.tolist() == [[0, 5], [-2, 0]]
    assert not np.isfinite(bounds.half_width(np.array([[0, 3], [inf, 0]]))[0, 1])


def _direct():
    """off1 - off0 >= 5, off2 - off1 >= 7, off2 - off0 >= 3, off0 - off1 >= -20, off1 - off2 >= -35,
    off0 - off2 >= -40 as messages (send start s on the sender's clock, receive end q = 0)."""
    src = np.array([0, 1, 0, 1, 2, 2])
    dst = np.array([1, 2, 2, 0, 1, 0])
    s = np.array([5, 7, 3, -20, -35, -40])
    return src, dst, s, np.zeros(6, np.int64)


def test_collectives_bound_both_ways():
    """A synchronising collective bounds every pair of its members both ways: off_b - off_a >= e_a - x_b."""
    e = np.array([[100, 500], [130, 400]])  # entries of clock 0 and 1 at two points (local times)
    x = np.array([[150, 520], [160, 530]])
    z = np.zeros(0, np.int64)
    lo = bounds.pair_bounds(e, x, np.array([0, 1]), z, z, z, z, 2)
    # off1 - off0 >= max(100 - 160, 500 - 530) = -30; off0 - off1 >= max(130 - 150, 400 - 520) = -20
    assert lo.tolist() == [[0, -30], [-20, 0]]


def test_clocks_whose_data_contradict_themselves_are_not_placed_by_the_bounds():
    """A pair whose bounds leave an empty interval (off1 - off0 >= 5 us by one message, <= 2 us by the
    other) bounds nothing: no midpoint is taken and no negative "worst error" reported; the violation the
    data force is counted."""
    s, q = np.array([1_005_000, 1_998_000]), np.array([1_000_000, 2_000_000])
    p2p = P2P.of([0, 1], [1, 0], s, s, q, q, np.zeros(2, bool))
    lo = bounds.pair_bounds(np.zeros((0, 0)), np.zeros((0, 0)), np.zeros(0, np.int64), p2p.src, p2p.dst, s, q, 2)
    assert lo.tolist() == [[0, 5_000], [-2_000, 0]]
    assert bounds.two_sided(lo).tolist() == [[True, False], [False, True]]
    assert bounds.half_width(lo).tolist() == [[0.0, np.inf], [np.inf, 0.0]]
    res = _fit(p2p, [0, 0])
    assert np.isnan(res.bound).all() and res.offsets.tolist() == [0, 0]
    assert res.violations_after == 1


def test_the_bound_is_the_worst_error_where_the_least_squares_put_a_clock_off_centre():
    """Clock 2's interval against the reference is closed through clock 1 to [T - 1 us, T + 2 us] (direct
    1 us one way, 20 us the other; 1 us each way on both legs through clock 1), midpoint T + 0.5 us; the
    least squares over the three pairs put it between that midpoint and T (the other pairs' midpoints):
    its worst error is its distance to the farther end of the interval, not the interval's half-width."""
    d = {(0, 1): 1_000, (1, 0): 1_000, (1, 2): 1_000, (2, 1): 1_000, (0, 2): 1_000, (2, 0): 20_000}
    p2p = _pingpongs([(0, 1), (1, 2), (0, 2)], d)
    res = _fit(p2p, TRUTH[:3] + np.array([0, 50_000, -50_000]))
    x = int(res.offsets[2] - TRUTH[2])  # the estimate's error (the truth is inside the interval)
    assert 0 < x < 500  # (off the midpoint, +500, towards the other pairs' midpoints, 0)
    assert res.bound[2] == max(x - (-1_000), 2_000 - x) > 1_500  # (1,500: the half-width)
    assert res.bound[1] >= abs(res.offsets[1] - TRUTH[1])


def _unchunked(e, x, rep, src, dst, s, q, n):
    """pair_bounds as it was before it took the points a block at a time (every point at once): the
    reference the blocks must equal exactly."""
    lo = np.full((n, n), -np.inf)
    if len(src):
        other = src != dst
        np.maximum.at(lo, (src[other], dst[other]), (s - q)[other].astype(np.float64))
    if e.size:
        ef, xf = e.astype(np.float64), x.astype(np.float64)
        last_in = np.full((n, e.shape[1]), -np.inf)
        first_out = np.full((n, e.shape[1]), np.inf)
        for c in np.unique(rep):
            last_in[c] = ef[rep == c].max(axis=0)
            first_out[c] = xf[rep == c].min(axis=0)
        last_in[last_in < -bounds.FAR] = -np.inf
        first_out[first_out > bounds.FAR] = np.inf
        for a in np.unique(rep):
            with np.errstate(invalid="ignore"):
                d = np.nan_to_num(last_in[a][None, :] - first_out, nan=-np.inf, posinf=-np.inf)
            lo[a] = np.maximum(lo[a], d.max(axis=1, initial=-np.inf))
    np.fill_diagonal(lo, 0.0)
    if n > bounds.MAX_CLOSURE:
        return lo
    closed = lo.copy()
    for k in range(n):
        closed = np.maximum(closed, closed[:, k : k + 1] + closed[k : k + 1, :])
    return lo if (np.diag(closed) > 0).any() else closed


def _many_hosts(hosts=60, per_host=2, points=700, seed=3):
    """Collectives on HOSTS skewed clocks (PER_HOST ranks each, rows not grouped by host), some ranks
    outside some collectives (the sync points' ABSENT sentinels), and messages between random hosts."""
    from nsys2prv.model.align.syncpoints import ABSENT_ENTRY, ABSENT_EXIT

    rng = np.random.default_rng(seed)
    rows = hosts * per_host
    rep = rng.permutation(np.repeat(np.arange(hosts, dtype=np.int64), per_host))
    skew = rng.integers(-5_000_000, 5_000_000, hosts)
    base = np.arange(points, dtype=np.int64) * 1_000_000
    e = base[None, :] + rng.integers(0, 300_000, (rows, points)) - skew[rep][:, None]
    x = base[None, :] + 400_000 + rng.integers(0, 300_000, (rows, points)) - skew[rep][:, None]
    out = rng.random((rows, points)) < 0.1
    e[out], x[out] = ABSENT_ENTRY, ABSENT_EXIT
    m = 500
    src, dst = rng.integers(0, hosts, m), rng.integers(0, hosts, m)
    t = rng.integers(0, points * 1_000_000, m)
    s, q = t - skew[src], t + rng.integers(1_000, 50_000, m) - skew[dst]
    return e, x, rep, src, dst, s, q, hosts


@pytest.mark.parametrize("chunk", [1, 2 * 120 + 1, 10_007, bounds.CHUNK])
def test_bounds_a_block_of_points_at_a_time_equal_all_points_at_once(monkeypatch, chunk):
    """Generated many-host case: 60 clocks, 120 ranks, 700 collectives (10 % of the entries absent),
    500 messages; the bounds taken one point, two points, 83 points and the default block at a time
    equal the unchunked computation exactly (-inf where there is no bound included)."""
    args = _many_hosts()
    want = _unchunked(*args)
    assert np.isfinite(want).sum() == 60 * 60  # (every pair bounded: the blocks have something to agree on)
    monkeypatch.setattr(bounds, "CHUNK", chunk)
    got = bounds.pair_bounds(*args)
    assert np.array_equal(got, want)
    # direct bounds (more clocks than the closure takes): equal too
    monkeypatch.setattr(bounds, "MAX_CLOSURE", 10)
    direct = bounds.pair_bounds(*args)
    assert np.array_equal(direct, _unchunked(*args)) and not np.array_equal(direct, want)


def test_bounds_on_the_mpi23_fixtures_equal_the_unchunked_computation(monkeypatch, tmp_path):
    """The bounds of every mpi23 fixture whose alignment computes them (coll8h4, p2p4h2, pp2h2, pp4h4,
    thr6h3: caught as the conversion calls them), taken one point at a time, equal the unchunked
    computation exactly."""
    from conftest import ROOT, convert

    data = ROOT / "tests" / "data" / "mpi23"
    seen: dict[str, tuple] = {}
    real = bounds.pair_bounds
    for name in ("coll4", "coll8h4", "p2p4", "p2p4h2", "pp2h2", "pp4h4", "thr6h3"):
        ranks = sorted((data / name).glob("rank*.sqlite"))
        if not ranks:
            pytest.skip(f"tests/data/mpi23/{name} missing (scripts/make_mpi23_fixtures.sh makes it)")

        def spy(*args, name=name):
            seen[name] = args
            return real(*args)

        monkeypatch.setattr(bounds, "pair_bounds", spy)
        convert(["-t", "mpi", "-m", *ranks, tmp_path / name / "o"])
    assert {k: (v[0].shape, len(v[3]), v[7]) for k, v in seen.items()} == {
        "coll8h4": ((8, 12), 70, 4),
        "p2p4h2": ((4, 5), 92, 2),
        "pp2h2": ((2, 6), 108, 2),
        "pp4h4": ((4, 6), 600, 4),
        "thr6h3": ((6, 27), 0, 3),
    }
    monkeypatch.setattr(bounds, "CHUNK", 1)
    for name, args in seen.items():
        assert np.array_equal(real(*args), _unchunked(*args)), name


def test_bounds_memory_does_not_grow_with_the_points():
    """40 clocks x 40,000 collectives: all points at once took the (clocks or rows) x points arrays
    several times over (93.1 MiB here, 581.8 MiB at 100 clocks x 100,000 points:
    scripts/bench_bounds_memory.py); a block at a time, a few blocks of ``CHUNK`` elements whatever the
    points (12.0 MiB here; tracemalloc: what numpy allocates during the call; the inputs are made before)."""
    import tracemalloc

    rng = np.random.default_rng(5)
    hosts, points = 40, 40_000
    base = np.arange(points, dtype=np.int64) * 100_000
    e = base[None, :] + rng.integers(0, 40_000, (hosts, points))
    x = base[None, :] + 50_000 + rng.integers(0, 40_000, (hosts, points))
    rep = np.arange(hosts, dtype=np.int64)
    z = np.zeros(0, np.int64)
    tracemalloc.start()
    try:
        lo = bounds.pair_bounds(e, x, rep, z, z, z, z, hosts)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.isfinite(lo).all()
    assert peak < 8 * 8 * bounds.CHUNK  # (8 blocks of CHUNK float64: 16 MiB; the inputs are 24 MiB)
