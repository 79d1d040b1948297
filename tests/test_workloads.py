"""Workload generators: the papers' size probabilities, service means and Cx, lambda, seeds,
dependent vs independent demand (lazy paper 4 and 4.1, RSR paper 4.1, dissertation 7.1/8.2)."""
from __future__ import annotations

import math
from itertools import islice

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emulator.sim.workloads import (
    SERVICE_DISTRIBUTIONS, SIZE_DISTRIBUTIONS, Workload, WorkloadError, arrival_rate, fixed_jobs,
    generate, make_workload, normal_probabilities, size_names,
)
from scheduler.registry import UnknownPolicy
from scheduler.topology import Hypercube, Mesh, parse_topology

LAZY_10 = [0.017, 0.044, 0.093, 0.152, 0.194, 0.194, 0.152, 0.093, 0.044, 0.017]
RSR_8 = [0.025, 0.076, 0.162, 0.237, 0.237, 0.162, 0.076, 0.025]


def rng(seed=1):
    return np.random.default_rng(seed)


# --------------------------------------------------------------------------- registries


def test_registry_names_are_design_names():
    assert SIZE_DISTRIBUTIONS.names() == sorted(
        ["uniform", "normal", "square-pow2", "square-var", "rect-restricted", "rect-unrestricted", "processors"])
    assert SERVICE_DISTRIBUTIONS.names() == sorted(["uniform", "exponential", "hyperexp", "truncnormal"])
    for reg in (SIZE_DISTRIBUTIONS, SERVICE_DISTRIBUTIONS):
        for n in reg.names():
            assert reg.doc(n), f"{n} has no docstring"


def test_size_names_by_topology():
    assert size_names("hypercube:5") == ["normal", "processors", "uniform"]
    assert set(size_names("mesh:16x16")) == {"square-pow2", "square-var", "rect-restricted",
                                             "rect-unrestricted", "processors"}


def test_cube_distribution_on_mesh_is_a_clear_error():
    with pytest.raises(WorkloadError, match="square-var"):
        SIZE_DISTRIBUTIONS.create("normal", Mesh(16, 16))
    with pytest.raises(WorkloadError, match="hypercube:4"):
        SIZE_DISTRIBUTIONS.create("square-var", Hypercube(4))


# --------------------------------------------------------------------------- cube sizes


def test_normal_rule_gives_the_lazy_papers_10_cube_numbers():
    assert normal_probabilities(10).tolist() == LAZY_10
    exact = normal_probabilities(10, decimals=None)
    assert exact.sum() == pytest.approx(1.0)
    assert np.allclose(exact, LAZY_10, atol=1e-3)
    # the hand computation of lazy 4.1: slice 0 is Phi(-2) - Phi(-2.5) over 1 - 2 Phi(-2.5)
    Phi = lambda z: 0.5 * math.erfc(-z / math.sqrt(2))  # noqa: E731
    assert exact[0] == pytest.approx((Phi(-2) - Phi(-2.5)) / (1 - 2 * Phi(-2.5)))
    assert exact[4] == pytest.approx((Phi(0) - Phi(-0.5)) / (1 - 2 * Phi(-2.5)))


def test_normal_rule_gives_the_rsr_papers_8_cube_numbers():
    assert normal_probabilities(8).tolist() == RSR_8
    assert np.allclose(normal_probabilities(8, decimals=None), RSR_8, atol=1e-3)
    # plain rounding would print 0.024 for p_0; the papers keep the sum at one
    assert round(float(normal_probabilities(8, decimals=None)[0]), 3) == 0.024
    assert sum(normal_probabilities(8)) == pytest.approx(1.0)


def test_cube_distributions_draw_dimensions_0_to_n_minus_1():
    d = SIZE_DISTRIBUTIONS.create("normal", Hypercube(10))
    assert d.dims.tolist() == list(range(10))
    assert d.probabilities.tolist() == LAZY_10
    assert d.mean_dim == pytest.approx(4.5)
    d8 = SIZE_DISTRIBUTIONS.create("normal", Hypercube(8))
    assert d8.probabilities.tolist() == RSR_8
    u = SIZE_DISTRIBUTIONS.create("uniform", Hypercube(10))
    assert u.probabilities.tolist() == pytest.approx([0.1] * 10)
    assert u.mean_processors == pytest.approx(1023 / 10)
    # lazy 4: "mean job size of 10 processes" on a 6-cube is the uniform 0..5 mean, 63/6
    assert SIZE_DISTRIBUTIONS.create("uniform", Hypercube(6)).mean_processors == pytest.approx(10.5)


@pytest.mark.parametrize("name,n,expected", [("normal", 10, LAZY_10), ("normal", 8, RSR_8),
                                             ("uniform", 8, [1 / 8] * 8)])
def test_cube_sizes_empirical_frequencies(name, n, expected):
    d = SIZE_DISTRIBUTIONS.create(name, Hypercube(n))
    N = 200_000
    k, procs = d.sample(rng(7), N)
    counts = np.bincount(k, minlength=n + 1)
    assert counts[n] == 0  # never the whole machine
    for i, p in enumerate(expected):
        tol = 4.5 * math.sqrt(p * (1 - p) / N)
        assert abs(counts[i] / N - p) < tol, (i, counts[i] / N, p)
    assert np.array_equal(procs, 2.0 ** k)
    assert procs.mean() == pytest.approx(d.mean_processors, rel=0.03)


def test_cube_range_options_and_errors():
    d = SIZE_DISTRIBUTIONS.create("uniform", Hypercube(6), min_dim=2, max_dim=6)
    k, _ = d.sample(rng(), 5000)
    assert set(k.tolist()) == {2, 3, 4, 5, 6}
    with pytest.raises(WorkloadError):
        SIZE_DISTRIBUTIONS.create("uniform", Hypercube(6), max_dim=7)
    with pytest.raises(WorkloadError):
        SIZE_DISTRIBUTIONS.create("normal", Hypercube(6), min_dim=4, max_dim=3)


# --------------------------------------------------------------------------- mesh shapes


def decode(d, codes):
    return [(r.w, r.h) for r in map(d.request, codes.tolist())]


def test_square_pow2_sides():
    d = SIZE_DISTRIBUTIONS.create("square-pow2", Mesh(16, 16))
    codes, procs = d.sample(rng(), 50_000)
    shapes = decode(d, codes)
    sides = np.array([w for w, h in shapes])
    assert all(w == h for w, h in shapes)
    assert set(sides.tolist()) == {1, 2, 4, 8, 16}
    assert np.allclose(np.bincount(sides)[[1, 2, 4, 8, 16]] / len(sides), 0.2, atol=0.01)
    assert d.mean_processors == pytest.approx((1 + 4 + 16 + 64 + 256) / 5)
    assert procs.mean() == pytest.approx(d.mean_processors, rel=0.03)
    # on a non-square mesh the square must fit the shorter side
    d = SIZE_DISTRIBUTIONS.create("square-pow2", Mesh(32, 12))
    assert max(w for w, _ in decode(d, d.sample(rng(), 2000)[0])) == 8


def test_square_var_sides_uniform():
    d = SIZE_DISTRIBUTIONS.create("square-var", Mesh(32, 32))
    codes, procs = d.sample(rng(), 64_000)
    shapes = decode(d, codes)
    assert all(w == h for w, h in shapes)
    c = np.bincount([w for w, _ in shapes], minlength=33)[1:]
    assert c.min() > 1700 and c.max() < 2300  # 2000 each
    assert d.mean_processors == pytest.approx(sum(s * s for s in range(1, 33)) / 32)
    assert procs.mean() == pytest.approx(d.mean_processors, rel=0.02)


def test_rect_restricted_is_uniform_over_allowed_shapes():
    d = SIZE_DISTRIBUTIONS.create("rect-restricted", Mesh(8, 6), max_diff=2)
    allowed = {(w, h) for w in range(1, 9) for h in range(1, 7) if abs(w - h) <= 2}
    assert d.shapes == len(allowed)
    codes, procs = d.sample(rng(3), 60_000)
    shapes = decode(d, codes)
    seen = {}
    for s in shapes:
        seen[s] = seen.get(s, 0) + 1
    assert set(seen) == allowed
    expect = 60_000 / len(allowed)
    assert all(abs(c - expect) < 5 * math.sqrt(expect) for c in seen.values())
    assert d.mean_processors == pytest.approx(np.mean([w * h for w, h in allowed]))
    assert procs.mean() == pytest.approx(d.mean_processors, rel=0.02)
    assert SIZE_DISTRIBUTIONS.create("rect-restricted", Mesh(16, 16)).max_diff == 4


def test_rect_unrestricted_marginals():
    d = SIZE_DISTRIBUTIONS.create("rect-unrestricted", Mesh(32, 16))
    codes, procs = d.sample(rng(), 64_000)
    shapes = np.array(decode(d, codes))
    assert shapes[:, 0].min() == 1 and shapes[:, 0].max() == 32
    assert shapes[:, 1].min() == 1 and shapes[:, 1].max() == 16
    assert np.corrcoef(shapes[:, 0], shapes[:, 1])[0, 1] == pytest.approx(0, abs=0.02)
    assert d.mean_processors == pytest.approx(16.5 * 8.5)
    assert procs.mean() == pytest.approx(d.mean_processors, rel=0.02)


def test_processors_uniform_count_rounded_by_topology():
    topo = Mesh(32, 32)
    d = SIZE_DISTRIBUTIONS.create("processors", topo)
    codes, procs = d.sample(rng(), 100_000)
    assert codes.min() >= 1 and codes.max() <= 1024
    assert procs.mean() == pytest.approx(512.5, rel=0.01)
    r = d.request(17)
    assert r.kind == "processors" and r.processors_needed == 17
    assert topo.normalize(r).processors_needed >= 17
    d = SIZE_DISTRIBUTIONS.create("processors", Hypercube(5), max_processors=20)
    assert d.sample(rng(), 1000)[0].max() <= 20
    with pytest.raises(WorkloadError):
        SIZE_DISTRIBUTIONS.create("processors", Hypercube(5), max_processors=33)


# --------------------------------------------------------------------------- service


def sample_stats(x):
    return x.mean(), x.std() / x.mean()


def test_hyperexp_paper_branch_means_are_positive_and_exact():
    d = SERVICE_DISTRIBUTIONS.create("hyperexp", 5.0)  # lazy 4.1: alpha 0.95, Cx 4
    assert (d.alpha, d.cx) == (0.95, 4.0)
    small = 5 * (1 - math.sqrt(15 * 0.05 / 1.9))
    large = 5 * (1 + math.sqrt(15 * 0.95 / 0.1))
    assert d.small_mean == pytest.approx(small) and small > 0
    assert d.large_mean == pytest.approx(large)
    # the mixture's exact mean and Cx
    m1 = 0.95 * small + 0.05 * large
    m2 = 2 * (0.95 * small ** 2 + 0.05 * large ** 2)
    assert m1 == pytest.approx(5.0)
    assert math.sqrt(m2 - m1 ** 2) / m1 == pytest.approx(4.0)


def test_hyperexp_empirical_mean_and_cx():
    d = SERVICE_DISTRIBUTIONS.create("hyperexp", 5.0)
    x = d.sample(rng(11), 400_000)
    m, cx = sample_stats(x)
    assert m == pytest.approx(5.0, rel=0.03)
    assert cx == pytest.approx(4.0, rel=0.05)
    assert (x > 0).all()
    assert np.mean(x < 2.0) > 0.6  # most jobs come from the small branch


def test_hyperexp_invalid_paper_fit_and_balanced_fit():
    with pytest.raises(WorkloadError, match="balanced"):
        SERVICE_DISTRIBUTIONS.create("hyperexp", 5.0, cx=7.0, alpha=0.95)
    with pytest.raises(WorkloadError):
        SERVICE_DISTRIBUTIONS.create("hyperexp", 5.0, cx=0.5)
    with pytest.raises(WorkloadError):
        SERVICE_DISTRIBUTIONS.create("hyperexp", 5.0, alpha=1.0)
    b = SERVICE_DISTRIBUTIONS.create("hyperexp", 5.0, cx=7.0, fit="balanced")
    assert b.alpha * b.small_mean == pytest.approx((1 - b.alpha) * b.large_mean)
    x = b.sample(rng(5), 400_000)
    assert x.mean() == pytest.approx(5.0, rel=0.05)


@pytest.mark.parametrize("name,params,cx", [
    ("exponential", {}, 1.0),
    ("uniform", {}, 1 / math.sqrt(3)),
    ("uniform", {"width": 0.5}, 0.5 / math.sqrt(3)),
    ("truncnormal", {}, None),
])
def test_service_means_and_cx(name, params, cx):
    d = SERVICE_DISTRIBUTIONS.create(name, 5.0, **params)
    x = d.sample(rng(2), 200_000)
    assert (x > 0).all()
    m, c = sample_stats(x)
    assert m == pytest.approx(5.0, rel=0.01)
    assert c == pytest.approx(d.cx, rel=0.03)
    if cx is not None:
        assert d.cx == pytest.approx(cx)


def test_uniform_service_range():
    x = SERVICE_DISTRIBUTIONS.create("uniform", 5.0).sample(rng(), 100_000)
    assert x.min() > 0 and x.max() <= 10.0 and x.max() > 9.99


def test_truncnormal_has_the_stated_mean_and_near_stated_sd():
    d = SERVICE_DISTRIBUTIONS.create("truncnormal", 5.0)  # RSR 4.1: mean 5, sd 2
    assert d.sd == 2.0
    assert d.mu < 5.0  # shifted so that truncation does not raise the mean
    x = d.sample(rng(9), 200_000)
    assert x.mean() == pytest.approx(5.0, rel=0.005)
    assert x.std() == pytest.approx(2.0, rel=0.05)
    with pytest.raises(WorkloadError):
        SERVICE_DISTRIBUTIONS.create("truncnormal", 1.0, sd=10.0)


def test_bad_service_mean():
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(WorkloadError):
            SERVICE_DISTRIBUTIONS.create("exponential", bad)


# --------------------------------------------------------------------------- arrivals


def test_lambda_formula_on_the_lazy_papers_example():
    # 2^6 / (10 x 5) x 0.3: the formula gives 0.384 (the paper prints 0.32, a slip)
    assert arrival_rate(64, 10, 5, 0.3) == pytest.approx(0.384)
    w = Workload.build("hypercube:6", 0.3, "uniform", "uniform", 5.0, mean_size=10)
    assert w.rate == pytest.approx(0.384)
    w = Workload.build("hypercube:6", 0.3, "uniform", "uniform", 5.0)
    assert w.mean_size == pytest.approx(10.5)
    assert w.rate == pytest.approx(64 / (10.5 * 5) * 0.3)


@pytest.mark.parametrize("demand", ["dependent", "independent"])
@pytest.mark.parametrize("sizes,service", [("uniform", "uniform"), ("normal", "hyperexp")])
def test_arrival_rate_and_offered_load_are_measured(demand, sizes, service):
    w = Workload.build("hypercube:10", 0.6, sizes, service, demand=demand, seed=4)
    jobs = w.job_list(60_000)
    T = jobs[-1].submit
    assert len(jobs) / T == pytest.approx(w.rate, rel=0.02)
    gaps = np.diff([0.0] + [j.submit for j in jobs])
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, rel=0.03)  # exponential gaps
    demand_sum = sum(j.request.processors_needed * j.runtime for j in jobs)
    tol = 0.04 if service == "uniform" else 0.12  # hyperexp demands are heavy-tailed
    assert demand_sum / (1024 * T) == pytest.approx(0.6, rel=tol)


def test_dependent_residence_ignores_size_independent_divides_demand():
    dep = Workload.build("hypercube:8", 0.5, "uniform", "exponential", demand="dependent", seed=3)
    ind = Workload.build("hypercube:8", 0.5, "uniform", "exponential", demand="independent", seed=3)
    by = {"dep": {}, "ind": {}}
    for key, w in (("dep", dep), ("ind", ind)):
        for j in w.jobs(80_000):
            by[key].setdefault(j.request.k, []).append(j.runtime)
    for k in (0, 7):
        assert np.mean(by["dep"][k]) == pytest.approx(5.0, rel=0.05)
        # independent: x = residence * 2^k has mean mean_size * 5 whatever k
        assert np.mean(np.array(by["ind"][k]) * 2 ** k) == pytest.approx(ind.mean_size * 5, rel=0.05)
    assert np.mean(by["ind"][0]) > 100 * np.mean(by["ind"][7])
    # same seed, same arrivals and sizes: only the run times differ
    a, b = dep.job_list(100), ind.job_list(100)
    assert [(j.submit, j.request) for j in a] == [(j.submit, j.request) for j in b]
    assert [j.runtime for j in a] != [j.runtime for j in b]


# --------------------------------------------------------------------------- determinism


def key(jobs):
    return [(j.id, j.submit, j.request, j.runtime) for j in jobs]


def test_same_seed_same_jobs_other_seed_differs():
    a = key(generate("hypercube:10", 0.5, "normal", "hyperexp", seed=42, jobs=5000))
    b = key(generate("hypercube:10", 0.5, "normal", "hyperexp", seed=42, jobs=5000))
    c = key(generate("hypercube:10", 0.5, "normal", "hyperexp", seed=43, jobs=5000))
    assert a == b
    assert a != c and sum(x[1] == y[1] for x, y in zip(a, c)) == 0


def test_prefix_stability_and_common_random_numbers():
    long = key(generate("mesh:16x16", 0.5, "rect-unrestricted", "exponential", seed=1, jobs=10_000))
    short = key(generate("mesh:16x16", 0.5, "rect-unrestricted", "exponential", seed=1, jobs=4097))
    assert long[:4097] == short
    other = key(generate("mesh:16x16", 0.5, "rect-unrestricted", "truncnormal", seed=1, jobs=4097))
    assert [x[:3] for x in other] == [x[:3] for x in short]


def test_until_stops_at_the_observation_time():
    w = Workload.build("hypercube:6", 0.8, "uniform", "uniform", seed=5)
    jobs = list(w.jobs(until=10_000.0))
    assert jobs[-1].submit < 10_000.0
    assert len(jobs) == pytest.approx(w.rate * 10_000, rel=0.03)
    assert len(jobs) > 4096  # crossed block boundaries
    assert [j.id for j in jobs] == list(range(1, len(jobs) + 1))
    assert all(a.submit <= b.submit for a, b in zip(jobs, jobs[1:]))
    # an endless stream yields the same jobs
    assert key(islice(w.jobs(), len(jobs))) == key(jobs)
    both = list(w.jobs(n=10, until=10_000.0))
    assert key(both) == key(jobs[:10])


def test_fixed_jobs_batch_and_arrivals_share_sizes_and_times():
    batch = fixed_jobs("hypercube:10", 1000, "uniform", "hyperexp", seed=8)
    stream = fixed_jobs("hypercube:10", 1000, "uniform", "hyperexp", seed=8, load=0.5)
    gen = list(generate("hypercube:10", 0.5, "uniform", "hyperexp", seed=8, jobs=1000))
    assert len(batch) == 1000 and all(j.submit == 0.0 for j in batch)
    assert [(j.request, j.runtime) for j in batch] == [(j.request, j.runtime) for j in gen]
    assert key(stream) == key(gen)


@settings(max_examples=25, deadline=None)
@given(topo=st.sampled_from(["hypercube:3", "hypercube:7", "mesh:4x4", "mesh:9x5", "mesh:32x32"]),
       service=st.sampled_from(["uniform", "exponential", "hyperexp", "truncnormal"]),
       demand=st.sampled_from(["dependent", "independent"]),
       load=st.floats(0.05, 2.0), seed=st.integers(0, 2**32))
def test_every_job_fits_and_streams_in_order(topo, service, demand, load, seed):
    t = parse_topology(topo)
    for size in size_names(t):
        jobs = list(generate(t, load, size, service, demand=demand, seed=seed, jobs=300))
        assert len(jobs) == 300
        for a, b in zip(jobs, jobs[1:]):
            assert a.submit <= b.submit
        for j in jobs:
            assert t.normalize(j.request).processors_needed <= t.size
            assert j.runtime > 0 and math.isfinite(j.runtime)


# --------------------------------------------------------------------------- bad input


def test_bad_workload_input():
    with pytest.raises(WorkloadError):
        Workload.build("hypercube:5", 0, "uniform", "uniform")
    with pytest.raises(WorkloadError):
        Workload.build("hypercube:5", 0.5, "uniform", "uniform", demand="both")
    with pytest.raises(WorkloadError):
        Workload.build("hypercube:5", 0.5, "uniform", "uniform", seed=-1)
    with pytest.raises(WorkloadError, match="unknown workload option 'cxx'"):
        Workload.build("hypercube:5", 0.5, "uniform", "hyperexp", cxx=3)
    with pytest.raises(UnknownPolicy, match="known: "):
        Workload.build("hypercube:5", 0.5, "gauss", "uniform")
    with pytest.raises(WorkloadError):
        generate("hypercube:5", 0.5, jobs=-3)
    # options reach the right distribution
    w = Workload.build("mesh:16x16", 0.5, "rect-restricted", "hyperexp", max_diff=2, cx=3.0, alpha=0.9)
    assert (w.size_distribution.max_diff, w.service_distribution.cx, w.service_distribution.alpha) == (2, 3.0, 0.9)
    assert (w.size_dist, w.service, w.service_mean) == ("rect-restricted", "hyperexp", 5.0)
    assert w.describe()["service"]["alpha"] == 0.9
    m = make_workload("mesh:16x16", 0.5, "square-var", service="exponential", service_mean=20.0, seed=2)
    assert (m.size_dist, m.service, m.mean_service) == ("square-var", "exponential", 20.0)
    assert m.rate == pytest.approx(256 / (m.mean_size * 20) * 0.5)
