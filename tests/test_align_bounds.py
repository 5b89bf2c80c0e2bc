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
