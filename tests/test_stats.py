"""The replication statistics of ``mcemu reproduce`` (emulator.experiments.stats): the
ratio-of-means estimator of system power (lazy paper 4.2: power = X/M) and its delta-method
interval, worked by hand."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from emulator.experiments.stats import derive_ratio, mean_ci, ratio_ci, ratio_ci_from_cis, t975


def test_ratio_of_means_is_not_dominated_by_a_replication_with_a_delay_near_zero():
    X = [0.2, 0.2, 0.2, 0.2]
    M = [1.0, 1.0, 1.0, 1e-6]  # one replication where almost nobody waited
    per_rep = sum(x / m for x, m in zip(X, M)) / 4
    r, hw, n = ratio_ci(X, M)
    assert per_rep > 49_000  # the old estimator: decided by the one replication
    assert n == 4 and r == pytest.approx(0.2 / ((3 + 1e-6) / 4))


def test_delta_method_half_width_by_hand():
    # x = 1, 2, 3; y = 2, 2, 5: xbar 2, ybar 3, R = 2/3; s_xx = 1, s_yy = 3, s_xy = 1.5
    # Var(R) = (1 - 2 (2/3) 1.5 + (4/9) 3) / (3 * 9) = (1 - 2 + 4/3) / 27 = (1/3) / 27
    r, hw, n = ratio_ci([1, 2, 3], [2, 2, 5])
    assert (r, n) == (pytest.approx(2 / 3), 3)
    assert hw == pytest.approx(t975(2) * math.sqrt(1 / 81))


def test_the_interval_from_the_kept_means_and_half_widths_equals_the_paired_one():
    xs = [0.21, 0.19, 0.2, 0.25, 0.18]
    ys = [1.3, 0.9, 1.1, 2.0, 0.7]
    direct = ratio_ci(xs, ys)
    mx, hx, _ = mean_ci(xs)
    my, hy, _ = mean_ci(ys)
    ms, hs, _ = mean_ci([x + y for x, y in zip(xs, ys)])
    r, hw = ratio_ci_from_cis((mx, hx), (my, hy), (ms, hs), 5)
    assert r == pytest.approx(direct[0]) and hw == pytest.approx(direct[1])
    # a positive covariance (X and M rise together) narrows the interval of the ratio
    indep = ratio_ci_from_cis((mx, hx), (my, hy), (ms, math.sqrt(hx * hx + hy * hy)), 5)[1]
    assert hw < indep


def test_edge_cases_and_derive():
    assert ratio_ci([1.0], [2.0]) == (0.5, math.inf, 1)
    assert math.isnan(ratio_ci([], [])[0])
    assert ratio_ci([0.3, 0.1], [0.0, 0.0])[0] == math.inf  # nobody waited: power is infinite
    assert ratio_ci([float("nan"), 1.0, 2.0], [5.0, 1.0, 2.0])[2] == 2  # non-finite pairs dropped
    p = SimpleNamespace(reps=3, stats={"x": mean_ci([1, 2, 3])[:2], "y": mean_ci([2, 2, 5])[:2],
                                       "s": mean_ci([3, 4, 8])[:2], "power": (99.0, 1.0)})
    derive_ratio([p, SimpleNamespace(reps=2, stats={})], "power", "x", "y", "s")
    assert p.stats["power"][0] == pytest.approx(2 / 3)
    assert p.stats["power"][1] == pytest.approx(ratio_ci([1, 2, 3], [2, 2, 5])[1])
