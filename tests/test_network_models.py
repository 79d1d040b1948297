"""The analytic network models: pattern metrics (§4.3.2, §6.2.1), the homogeneous stair
(chapter 4) and the heterogeneous 2-path / m-path / m-n models (chapter 5).

Expected values are worked by hand from the text's equations (comments show the working) or
are the text's own numbers (ICL = SCL = 0.67 / 1.3 / 3.3, the 4x4 labels of Fig 4.6).
"""
from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.network.heterogeneous import (
    external_contention,
    mean_above,
    mean_below,
    mn_interaction,
    prob_less,
    solve_multipath,
    two_path,
)
from scheduler.network.homogeneous import (
    average_cmax,
    solve_stair,
    stair_interpolation,
    transpose_interpolation,
    transpose_level,
    transpose_row_stairs,
)
from scheduler.network.metrics import (
    channels_of,
    congestion,
    icl,
    internal_competing_level,
    pattern_metrics,
    scl,
)
from scheduler.network.patterns import pattern_pairs
from scheduler.topology import Mesh

HYP = settings(max_examples=60, deadline=None)


def _row_col(name, n):
    """The registered pattern's rank pairs as ((row, col), (row, col)) of an n x n job."""
    return [(divmod(s, n), divmod(d, n)) for s, d in pattern_pairs(name, n, n)]


def transpose_pairs(n):
    return _row_col("transpose", n)


def diagonal_pairs(n):
    return _row_col("diagonal", n)


def xy_routes(n, pairs, x0=0, y0=0, mesh=None):
    """XY routes of (row, col) pairs of an n x n job whose corner is at (x0, y0)."""
    mesh = mesh or Mesh(n + x0, n + y0)

    def node(rc):  # (row, col) -> id of (x = col, y = row)
        return (rc[0] + y0) * mesh.width + rc[1] + x0

    return [channels_of(mesh.route(node(s), node(d))) for s, d in pairs]


# ------------------------------------------------------------------------------ metrics


@pytest.mark.parametrize(
    "n, level", [(4, Fraction(8, 12)), (6, Fraction(40, 30)), (12, Fraction(440, 132))]
)
def test_transpose_averages_are_the_texts(n, level):
    routes = xy_routes(n, transpose_pairs(n))
    pm = pattern_metrics(routes)
    assert pm.n_paths == n * (n - 1)
    assert pm.icl_avg == pm.scl_avg == level == transpose_level(n)
    assert round(float(level), 3) == {4: 0.667, 6: 1.333, 12: 3.333}[n]


def test_transpose_4x4_per_path_table():
    # NETWORK.md §3.2: (ICL, SCL) of every path, (row, col) coordinates.
    table = {
        ((0, 1), (1, 0)): (0, 2), ((1, 2), (2, 1)): (0, 1), ((2, 3), (3, 2)): (0, 0),
        ((0, 2), (2, 0)): (1, 1), ((1, 3), (3, 1)): (1, 0), ((3, 0), (0, 3)): (2, 0),
        ((0, 3), (3, 0)): (2, 0), ((2, 0), (0, 2)): (1, 0), ((3, 1), (1, 3)): (1, 1),
        ((1, 0), (0, 1)): (0, 0), ((2, 1), (1, 2)): (0, 1), ((3, 2), (2, 3)): (0, 2),
    }
    pairs = transpose_pairs(4)
    routes = xy_routes(4, pairs)
    got = {p: (a, b) for p, a, b in zip(pairs, icl(routes), scl(routes))}
    assert got == table
    assert sum(icl(routes)) == sum(scl(routes)) == 8


def test_transpose_is_exactly_row_stairs():
    # Row i holds an i-layer and an (n-1-i)-layer stair; path u of a k-stair is P_{u,k-1-u}.
    for n in (4, 5, 6, 9):
        routes = xy_routes(n, transpose_pairs(n))
        got = Counter(zip(icl(routes), scl(routes)))
        want = Counter((u, k - 1 - u) for k in range(n) for _ in range(2) for u in range(k))
        assert got == want


def test_internal_competing_level_transpose_and_diagonal():
    t = xy_routes(4, transpose_pairs(4))
    d = xy_routes(4, diagonal_pairs(4))
    assert len(d) == 4
    assert pattern_metrics(t).internal_level_by_job == {0: Fraction(4, 3)}  # (8 + 8) / 12
    assert internal_competing_level(d, [0] * 4) == [0, 0, 0, 0]
    assert pattern_metrics(d).max_congestion == 1
    assert pattern_metrics(t).max_congestion == 3  # row 3's channel (2 -> 3): three paths


def test_internal_level_counts_only_own_job():
    # Two transposes on one 4x4 region, labelled as two jobs: paths of the other job compete
    # (congestion doubles) but never count in the internal competing level.
    routes = xy_routes(4, transpose_pairs(4))
    both = routes + routes
    jobs = ["a"] * 12 + ["b"] * 12
    lev = internal_competing_level(both, jobs)
    assert lev == internal_competing_level(routes, [0] * 12) * 2
    assert max(congestion(both).values()) == 6
    by_job = pattern_metrics(both, jobs).internal_level_by_job
    assert by_job == {"a": Fraction(4, 3), "b": Fraction(4, 3)}


def test_empty_routes_and_empty_pattern():
    assert scl([(), (1, 2)]) == [0, 0] and icl([(), (1, 2)]) == [0, 0]
    pm = pattern_metrics([])
    assert pm.n_paths == 0 and pm.icl_avg == 0 and pm.max_congestion == 0
    with pytest.raises(ValueError):
        internal_competing_level([(1,)], [])


@st.composite
def two_disjoint_rectangles(draw):
    w, h = draw(st.integers(2, 10)), draw(st.integers(1, 10))
    cut = draw(st.integers(1, w - 1))  # A left of the cut, B right of it, any heights

    def rect(xlo, xhi):
        x0 = draw(st.integers(xlo, xhi - 1))
        x1 = draw(st.integers(x0, xhi - 1))
        y0 = draw(st.integers(0, h - 1))
        y1 = draw(st.integers(y0, h - 1))
        return [(x, y) for x in range(x0, x1 + 1) for y in range(y0, y1 + 1)]
    a, b = rect(0, cut), rect(cut, w)
    if draw(st.booleans()):  # also split along y: transpose the picture
        w, h = h, w
        a, b = [(y, x) for x, y in a], [(y, x) for x, y in b]
    return w, h, a, b


@HYP
@given(two_disjoint_rectangles(), st.data())
def test_disjoint_rectangles_never_share_a_channel(geom, data):
    w, h, a, b = geom
    mesh = Mesh(w, h)

    def routes(cells):
        k = data.draw(st.integers(1, 6))
        out = []
        for _ in range(k):
            s, d = data.draw(st.sampled_from(cells)), data.draw(st.sampled_from(cells))
            out.append(channels_of(mesh.route(mesh.node(*s), mesh.node(*d))))
        return out
    ra, rb = routes(a), routes(b)
    used_a = {c for r in ra for c in r}
    assert not any(c in used_a for r in rb for c in r)
    # and so nothing of one job competes with the other
    jobs = [0] * len(ra) + [1] * len(rb)
    both = ra + rb
    assert internal_competing_level(both, jobs) == [x + y for x, y in zip(scl(both), icl(both))]


@HYP
@given(st.integers(1, 8), st.integers(1, 8), st.data())
def test_total_scl_equals_total_icl_with_one_path_per_source(w, h, data):
    mesh = Mesh(w, h)
    sources = data.draw(st.lists(st.integers(0, w * h - 1), unique=True, max_size=w * h))
    routes = [channels_of(mesh.route(s, data.draw(st.integers(0, w * h - 1)))) for s in sources]
    assert sum(scl(routes)) == sum(icl(routes))


@HYP
@given(st.integers(1, 6), st.integers(1, 6), st.data())
def test_scl_icl_identity_in_general(w, h, data):
    # total SCL = total ICL + ordered pairs of distinct paths with the same starting channel
    mesh = Mesh(w, h)
    k = data.draw(st.integers(0, 12))
    pts = st.integers(0, w * h - 1)
    routes = [channels_of(mesh.route(data.draw(pts), data.draw(pts))) for _ in range(k)]
    firsts = Counter(r[0] for r in routes if r)
    same = sum(c * (c - 1) for c in firsts.values())
    assert sum(scl(routes)) == sum(icl(routes)) + same
    assert sum(congestion(routes).values()) == sum(len(r) for r in routes)
    assert internal_competing_level(routes, list(range(k))) == [0] * k


# ------------------------------------------------------------------- homogeneous (ch. 4)


def test_stair_mtbs0_exact_values():
    assert solve_stair(1, 0).dmax == (25.0,)
    assert solve_stair(3, 0).dmax == pytest.approx((50, 100, 100))
    assert solve_stair(5, 0).dmax == pytest.approx((50, 100, 200, 400, 400))
    s = solve_stair(3, 0)
    # Cmax = 25, 75, 75; (4.11) average 175/3; Pr_S = 1 except the bottom path
    assert s.cmax == pytest.approx((25, 75, 75))
    assert s.average_cmax == pytest.approx(175 / 3)
    assert s.pr_start == pytest.approx((1, 1, 0))


@pytest.mark.parametrize("lv", range(1, 14))
def test_stair_closed_form_at_mtbs0(lv):
    s = solve_stair(lv, 0)
    assert s.dmax_no_start == pytest.approx(tuple(25 * 2**u for u in range(lv)))
    want = tuple(25 * 2 ** (u + 1) for u in range(lv - 1)) + (25 * 2 ** (lv - 1),)
    assert s.dmax == pytest.approx(want if lv > 1 else (25,))


def test_two_layer_stair_by_hand():
    # Symmetric: D = 25 + 25*D/(m + D)  =>  D^2 + (m - 50) D - 25 m = 0
    for m in (10, 100, 400):
        d = ((50 - m) + math.sqrt((m - 50) ** 2 + 100 * m)) / 2
        assert solve_stair(2, m).dmax == pytest.approx((d, d))


def test_stair_converges_for_lv_up_to_13():
    for lv in range(1, 14):
        prev = None
        for mtbs in range(0, 1001, 25):
            s = solve_stair(lv, mtbs)
            assert s.iterations < 1000
            assert max(s.pr_start) <= 1 + 1e-9
            assert all(d >= 25 - 1e-9 for d in s.dmax)
            if prev is not None:  # delays fall as the rate falls
                assert all(a <= b + 1e-9 for a, b in zip(s.dmax, prev.dmax))
            prev = s
        assert prev.dmax[-1] < 40  # MTBS 1000: close to the 25 µs transmission time


def test_stair_rejects_bad_input():
    with pytest.raises(ValueError):
        solve_stair(0, 0)
    with pytest.raises(ValueError):
        solve_stair(3, -1)


def test_transpose_predictors_at_mtbs0_by_hand():
    # averages at MTBS 0: lv1 0, lv2 25, lv3 175/3, lv4 112.5, lv5 205
    assert average_cmax(4, 0) == pytest.approx(112.5)
    assert average_cmax(5, 0) == pytest.approx(205)
    # (4.14), average reading: 0 + 2/3 * 175/3; the printed sums give three times that
    assert transpose_interpolation(4, 0) == pytest.approx(350 / 9)
    assert transpose_interpolation(4, 0, reading="sum") == pytest.approx(350 / 3)
    # 6x6: x = 4/3 -> between lv 3 and 5 with f = 1/3
    assert transpose_interpolation(6, 0) == pytest.approx(175 / 3 + (205 - 175 / 3) / 3)
    # row stairs: sum_k 2 k avg(k) / (n(n-1))
    assert transpose_row_stairs(4, 0) == pytest.approx((2 * 2 * 25 + 2 * 3 * 175 / 3) / 12)
    assert transpose_row_stairs(6, 0) == pytest.approx(2 * (50 + 175 + 450 + 1025) / 30)
    assert stair_interpolation(1, 25) == pytest.approx(average_cmax(3, 25))
    for mtbs in (0, 100, 500):  # both fall with MTBS and the 4x4 ones stay close
        assert abs(transpose_interpolation(4, mtbs) - transpose_row_stairs(4, mtbs)) < 2


# ----------------------------------------------------------------- heterogeneous (ch. 5)


def test_conditional_expectations():
    m, k = 40.0, 25.0
    # E[T | T < k] by midpoint integration of t * e^{-t/m}/m over [0, k)
    steps = 20000
    num = sum((i + 0.5) * k / steps * math.exp(-(i + 0.5) * k / steps / m) for i in range(steps))
    den = sum(math.exp(-(i + 0.5) * k / steps / m) for i in range(steps))
    assert mean_below(m, k) == pytest.approx(num / den, rel=1e-6)
    assert mean_above(m, k) == 65.0
    assert prob_less(m, k) == pytest.approx(1 - math.exp(-k / m))
    assert (prob_less(0, k), mean_below(0, k), mean_above(0, k)) == (1.0, 0.0, 25.0)
    assert mean_below(1e-9, 25) == pytest.approx(1e-9)  # no overflow
    assert mean_below(1e12, 25) == pytest.approx(12.5)


def test_two_path_by_hand():
    # mtbs 100 both, rd 25 both: Pr{T<25} = 1-e^-0.25, E[T|T<25] = 100 - 25/(e^0.25 - 1) = 11.98,
    # E[T|T>=25] = 125; case1 13.02; case2 N = ceil(150/36.98) = 5, Pr_a = 11.98/36.98:
    # Cex_i = (Pr_a (25 - 5.99) + Pr_b 13.02)/5 = 2.992, Cex_j = Pr_b 12.5 = 8.451;
    # case4 = (25/150) 12.5 = 2.083. Weighted: 3.872.
    f_i, f_j = two_path(100, 100, 25, 25)
    assert f_i == f_j == pytest.approx(28.872, abs=1e-3)


def test_two_path_mtbs0_is_the_two_layer_stair():
    # Back-to-back on both paths: the paths alternate, each waits the other's rd.
    assert two_path(0, 0, 25, 25) == (50.0, 50.0) == solve_stair(2, 0).dmax
    assert two_path(0, 0, 25, 100) == (125.0, 125.0)


def test_two_path_against_homogeneous_two_layer_stair():
    # The text: with equal MTBS the 2-path *model* is the 2-layer stair, and the chapter-4
    # queueing answer is a worst-case bound. What holds: equal at MTBS 0, f below the bound
    # for MTBS > 0, both tending to 25 µs.
    for m in (5, 25, 100, 250, 1000):
        f = two_path(m, m, 25, 25)
        h = solve_stair(2, m).dmax
        assert f[0] == f[1] and f[0] < h[0]
        assert h[0] - f[0] < 6
    assert two_path(1e6, 1e6, 25, 25)[0] == pytest.approx(25, abs=0.01)


pos = st.floats(0, 2000, allow_nan=False)
rd = st.floats(1, 2000, allow_nan=False)


@HYP
@given(pos, pos, rd, rd, st.sampled_from(["physical", "literal"]), st.booleans())
def test_two_path_properties(mi, mj, ri, rj, case4, ceil):
    ci, cj = external_contention(mi, mj, ri, rj, case4, ceil)
    assert ci >= 0 and cj >= 0
    # at most the other path's whole holding time
    assert ci <= rj + 1e-9 and cj <= ri + 1e-9
    sj, si = external_contention(mj, mi, rj, ri, case4, ceil)  # the model is symmetric
    assert (si, sj) == pytest.approx((ci, cj))


@HYP
@given(pos, pos, rd)
def test_case4_readings_coincide_when_rd_equal(mi, mj, r):
    assert two_path(mi, mj, r, r, "physical") == pytest.approx(two_path(mi, mj, r, r, "literal"))


def test_case4_readings_differ_when_rd_differ():
    phys = external_contention(250, 250, 25, 100, "physical")
    lit = external_contention(250, 250, 25, 100, "literal")
    assert phys[0] > lit[0] and phys[1] < lit[1]  # P_i waits on the longer holder
    with pytest.raises(ValueError):
        two_path(1, 1, 25, 25, case4="other")


def test_multipath_small_cases():
    assert solve_multipath([123]).delays == (25.0,)
    for a, b in ((0, 0), (0, 100), (50, 500), (250, 25)):
        s = solve_multipath([a, b])
        assert s.delays == pytest.approx(two_path(a, b, 25, 25))
        assert s.starting[1] == 0 and s.intermediate[0] == 0


def LAYOUT_A(k):  # MTBS top -> bottom, Fig 6.1 (a) / Fig 5.15
    return [0, 50, k, 250, 500]


def LAYOUT_B(k):  # Fig 6.1 (b)
    return [500, 250, k, 50, 0]


@pytest.mark.parametrize("case4", ["physical", "literal"])
@pytest.mark.parametrize("k", [0, 250, 500])
def test_layout_b_below_layout_a_on_every_path(k, case4):
    a = solve_multipath(LAYOUT_A(k), case4=case4)
    b = solve_multipath(LAYOUT_B(k), case4=case4)
    assert a.cycle_period == b.cycle_period == 1
    assert all(y < x for x, y in zip(a.delays, b.delays))
    for s in (a, b):
        assert s.starting[-1] == 0 and s.intermediate[0] == 0
        assert s.delays == pytest.approx(tuple(25 + sum(c) for c in s.stage_contention))


def test_multipath_converges_and_top_path_starting_delay_is_bounded():
    for k in range(0, 501, 50):
        for lay in (LAYOUT_A(k), LAYOUT_B(k)):
            s = solve_multipath(lay)
            assert s.iterations < 100 and s.cycle_period == 1
    # the top path's starting wait never exceeds one message time (§6.1.1)
    for n in (3, 5):
        for own in (0, 25, 500):
            for comp in (0, 50, 100):
                assert solve_multipath([own] + [comp] * n).starting[0] <= 25 + 1e-9


def test_multipath_equal_mtbs_against_homogeneous():
    # Not a reduction: at MTBS 0 only the top path matches the exact 50/100/100; the m-path
    # model treats upstream contention as exponential think time. It stays below the bound.
    assert solve_multipath([0, 0, 0]).delays[0] == pytest.approx(50)
    assert solve_multipath([0, 0, 0]).delays[2] < 100
    for lv in (3, 5):
        for m in (0, 25, 100, 1000):
            het, hom = solve_multipath([m] * lv).delays, solve_stair(lv, m).dmax
            assert all(x <= y + 1e-9 for x, y in zip(het, hom))


def test_ceiling_can_cycle_and_is_reported():
    # The ceil of (5.4) makes f discontinuous; this input has no fixed point, only a 6-cycle.
    s = solve_multipath([0, 0, 0, 0, 250])
    t = solve_multipath([0, 0, 0, 0, 250], ceiling=False)
    assert s.cycle_period > 1 and 0 < s.cycle_spread < 5
    assert t.cycle_period == 1 and t.cycle_spread == 0
    assert s.delays == pytest.approx(t.delays, abs=5)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from([0, 25, 50, 100, 250, 500]), min_size=2, max_size=5))
def test_multipath_always_settles(mtbs):
    s = solve_multipath(mtbs)
    assert s.iterations < 200
    assert all(d >= 25 - 1e-9 for d in s.delays)
    assert s.cycle_spread < 0.05 * max(s.delays)


def test_mn_interaction():
    # rd of each path is the bottom path of its own stair (chapter 4)
    r = mn_interaction(1, 3, 40, 25)
    assert r.rd_i == 25 and r.rd_j == pytest.approx(solve_stair(3, 25).dmax[-1])
    assert (r.d_i, r.d_j) == pytest.approx(two_path(40, 25, r.rd_i, r.rd_j))
    assert mn_interaction(1, 0, 40, 25).d_i == 25 and mn_interaction(1, 0, 40, 25).d_j is None
    # Fig 5.8/5.9 shape: above 25; larger when P_j sends faster
    for mi in (0, 25, 100, 1000):
        ds = [mn_interaction(1, 1, mi, mj).d_i for mj in (0, 25, 100, 500)]
        assert all(d > 25 for d in ds) and ds == sorted(ds, reverse=True)
    # P_j back-to-back, P_i rare: P_i waits half a message on average
    assert mn_interaction(1, 1, 1e6, 0).d_i == pytest.approx(37.5, abs=0.01)
    # Fig 5.11: more layers around P_j hurt P_i badly at MTBS_j 25, barely at 500
    fast = [mn_interaction(1, n, 25, 25).d_i for n in range(1, 8)]
    slow = [mn_interaction(1, n, 25, 500).d_i for n in range(1, 8)]
    assert fast == sorted(fast) and fast[-1] > 10 * fast[0]
    assert max(slow) < 30
