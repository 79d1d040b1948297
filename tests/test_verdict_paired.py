"""Paired intervals (issue 29): two series with the same seeds are compared on the interval of
their per-replication differences; without the replications, on the half-widths in quadrature;
each outcome says which."""
import math

from emulator.experiments import stats
from emulator.experiments import verdict as V
from emulator.experiments.experiment import PointResult


def _est(xs):
    m, hw, _ = stats.mean_ci(xs)
    return V.Est(m, hw, tuple(xs))


def test_a_shared_seed_effect_cancels_in_the_paired_difference():
    base = [10.0, 14.0, 7.0, 12.0, 9.0]  # what the seed does to both series
    a, b = _est([x + 0.5 for x in base]), _est([x + (0.1 if i % 2 else -0.1) for i, x in enumerate(base)])
    unpaired = V.Est(a.mean, a.hw) - V.Est(b.mean, b.hw)
    paired = a - b
    assert math.isclose(paired.mean, unpaired.mean)
    assert paired.hw < unpaired.hw / 10
    assert V.greater(a, b) == V.HOLDS and V.greater(a, b).basis == {V.PAIRED}
    out = V.greater(V.Est(a.mean, a.hw), V.Est(b.mean, b.hw))
    assert out == V.INCONCLUSIVE and out.basis == {V.UNPAIRED}
    assert "paired" in V.basis_text(V.greater(a, b).basis)


def test_pairing_uses_the_common_replications_and_keeps_chaining():
    a, b, c = _est([1.0, 2.0, 3.0, 4.0]), _est([0.5, 1.5, 2.5]), _est([0.0, 1.0, 2.0, 3.0])
    d = a - b
    assert d.samples == (0.5, 0.5, 0.5) and d.hw == 0.0 and d.basis == {V.PAIRED}
    assert ((a - c) - 1.0).samples == (0.0, 0.0, 0.0, 0.0)
    assert (2 * (a - c)).mean == 2.0
    r = a / c  # a ratio of means over the pairs, delta method
    assert math.isclose(r.mean, 2.5 / 1.5) and r.basis == {V.PAIRED}


def test_every_and_some_carry_the_basis_of_their_parts():
    a, b = _est([3.0, 4.0, 5.0]), _est([1.0, 2.0, 3.1])
    mixed = V.every([V.greater(a, b), V.greater(V.Est(5.0, 0.1), V.Est(1.0, 0.1))])
    assert mixed == V.HOLDS and mixed.basis == {V.PAIRED, V.UNPAIRED}
    exact = V.some([V.greater(3.0, 1.0)])
    assert exact == V.HOLDS and V.basis_text(exact.basis).startswith("exact")


def test_a_point_with_its_replications_gives_a_pairable_estimate():
    p = PointResult({}, 3, False, {"m": (2.0, 2.484)}, {"m": [1.0, 2.0, 3.0]})
    q = PointResult({}, 3, False, {"m": (1.0, 2.484)}, {"m": [0.0, 1.0, 2.0]})
    assert (p.est("m") - q.est("m")).hw == 0.0
    assert (p.est("m") - PointResult({}, 3, False, {"m": (1.0, 2.484)}).est("m")).basis == {V.UNPAIRED}
