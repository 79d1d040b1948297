"""Synthetic workloads: Poisson arrivals, job sizes and service times (DESIGN "Workloads").

A workload is a stream of :class:`scheduler.jobs.Job` in submit order, drawn in numpy blocks
so that a 10,000-time-unit run never holds all its jobs in memory.

Arrivals (lazy paper section 4; RSR paper 4.1): a Poisson process of rate
``lambda = system size / (mean job size x mean service) x load``, where the mean job size is
the mean number of processors a job asks for (lazy 4: "mean job size of 10 processes" on a
6-cube, i.e. the mean of 2^k for k uniform over 0..5, 63/6 = 10.5). The paper's worked example
reads ``2^6 / (10 x 5) x 0.3 = 0.32``; the formula gives 0.384 (0.32 would be load 0.25), so the
printed result is an arithmetic slip and we follow the formula, which the RSR paper repeats.

Sizes on an n-cube are dimensions 0..n-1: the lazy paper lists p_0..p_9 for a 10-cube and
the RSR paper draws "between 0 and 7 dimensions" on an 8-cube. The lazy captions' "mean job
size = 5-cube" is loose: the symmetric normal (p_0 = p_9) has mean dimension 4.5.

Demand (lazy 4.1): *dependent* -- the residence time is drawn from the service distribution
whatever the size (dissertation 7.2 calls this "uncorrelated"); *independent* -- a total
demand x is drawn from the same family with mean ``mean job size x mean residence time`` and
the residence time is ``x / processors``. For a processor-count request "processors" is the
count asked for (before the topology rounds it to a cube or submesh).

Determinism: one seed gives one job stream. Arrival times, sizes and service times come from
three independent generators spawned from the seed, so the stream does not depend on the
allocator or discipline, changing only the service distribution keeps the same arrival times
and sizes (common random numbers), and the first N jobs of a longer stream are the N jobs of
a shorter one.
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from scheduler.jobs import Job
from scheduler.registry import Registry
from scheduler.topology import Request, Topology, parse_topology

SIZE_DISTRIBUTIONS = Registry("size distribution")
SERVICE_DISTRIBUTIONS = Registry("service distribution")

BLOCK = 4096  # jobs drawn per numpy block; fixed so that a seed's stream never depends on it


class WorkloadError(ValueError):
    """A bad workload parameter: unknown option, a distribution that does not fit the
    topology, a non-positive load or mean, an impossible hyperexponential fit."""


def _positive(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise WorkloadError(f"{what} must be a finite number > 0, got {value!r}")
    return float(value)


def _Phi(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


def _phi(z: float) -> float:
    return math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)


# =========================================================================== sizes


class SizeDistribution:
    """Draws requests for one topology. ``sample`` returns integer codes (one per job) and the
    processors each code asks for; ``request(code)`` gives the (cached) :class:`Request`."""

    kinds: tuple = ()
    mean_processors: float = 0.0

    def __init__(self, topology: Topology):
        if topology.kind not in self.kinds:
            fits = ", ".join(size_names(topology)) or "(none)"
            raise WorkloadError(
                f"size distribution {getattr(self, 'registry_name', type(self).__name__)!r} is for "
                f"{' or '.join(self.kinds)}; for {topology} use one of: {fits}")
        self.topology = topology
        self._cache: dict[int, Request] = {}

    def sample(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError  # pragma: no cover

    def request(self, code: int) -> Request:
        r = self._cache.get(code)
        if r is None:
            r = self._cache[code] = self._make(code)
        return r

    def _make(self, code: int) -> Request:
        raise NotImplementedError  # pragma: no cover

    def describe(self) -> dict:
        return {"name": getattr(self, "registry_name", type(self).__name__),
                "mean_processors": self.mean_processors}


class _CubeSizes(SizeDistribution):
    """Cube dimensions ``min_dim..max_dim`` with probabilities ``self.probabilities``. The
    default range is 0..n-1 on an n-cube: both papers draw n sizes (lazy 4.1: p_0..p_9 on a
    10-cube; RSR 4.1: "between 0 and 7 dimensions" on an 8-cube), never the whole machine."""

    kinds = ("hypercube",)

    def __init__(self, topology, min_dim: int = 0, max_dim: int | None = None):
        super().__init__(topology)
        n = topology.n
        if max_dim is None:
            max_dim = max(0, n - 1)
        for v in (min_dim, max_dim):
            if isinstance(v, bool) or not isinstance(v, int):
                raise WorkloadError(f"cube dimensions must be integers, got {v!r}")
        if not 0 <= min_dim <= max_dim <= n:
            raise WorkloadError(f"need 0 <= min_dim <= max_dim <= {n} on {topology}, got {min_dim}..{max_dim}")
        self.min_dim, self.max_dim = min_dim, max_dim
        self.dims = np.arange(min_dim, max_dim + 1)
        self.probabilities = self._probabilities()
        self._cdf = np.cumsum(self.probabilities)
        self._cdf[-1] = 1.0
        self.mean_processors = float(np.dot(self.probabilities, 2.0 ** self.dims))
        self.mean_dim = float(np.dot(self.probabilities, self.dims))

    def _probabilities(self) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover

    def sample(self, rng, n):
        idx = np.searchsorted(self._cdf, rng.random(n), side="right")
        k = self.dims[np.minimum(idx, len(self.dims) - 1)]
        return k, np.ldexp(1.0, k)

    def _make(self, code):
        return Request.cube(int(code))

    def describe(self):
        return {**super().describe(), "dims": [self.min_dim, self.max_dim],
                "probabilities": [float(p) for p in self.probabilities]}


@SIZE_DISTRIBUTIONS.register("uniform")
class UniformCubes(_CubeSizes):
    """Cube dimension uniform over 0..n-1 (lazy 4.1: 1/10 each on a 10-cube; RSR 4.1: 1/8)."""

    def _probabilities(self):
        return np.full(len(self.dims), 1.0 / len(self.dims))


def normal_probabilities(count: int, sigmas: float = 2.5, decimals: int | None = 3) -> np.ndarray:
    """The discretized normal of lazy 4.1 / RSR 4.1 over ``count`` cube sizes.

    The standard normal density between -``sigmas`` and +``sigmas`` is cut into ``count``
    equally wide slices; p_i is the area of slice i, normalized to sum to one (i.e. the area
    outside is shared in proportion). The papers print these rounded to three decimals and
    say "these numbers are used for simulating"; their printed values are exactly the
    largest-remainder rounding of the exact areas (the rounding that keeps the sum at 1:
    plain rounding would give p_1 = 0.045 on a 10-cube and p_0 = 0.024 on an 8-cube, not the
    printed 0.044 and 0.025). ``decimals=3`` (default) reproduces the papers' numbers;
    ``decimals=None`` gives the exact areas.
    """
    if count < 1:
        raise WorkloadError("a normal size distribution needs at least one size")
    edges = [-sigmas + 2.0 * sigmas * i / count for i in range(count + 1)]
    areas = np.array([_Phi(edges[i + 1]) - _Phi(edges[i]) for i in range(count)])
    p = areas / areas.sum()
    if decimals is None:
        return p
    unit = 10 ** decimals
    scaled = p * unit
    floors = np.floor(scaled + 1e-9).astype(np.int64)
    short = unit - int(floors.sum())
    # stable sort: among equal remainders the lower index gets the unit first
    order = np.argsort(-(scaled - floors), kind="stable")
    floors[order[:short]] += 1
    return floors / unit


@SIZE_DISTRIBUTIONS.register("normal")
class NormalCubes(_CubeSizes):
    """Cube dimension 0..n-1 by a normal discretized over +-2.5 sigma (lazy 4.1, RSR 4.1).

    Centred on the middle of the range: p_0 = p_9 = 0.017 ... p_4 = p_5 = 0.194 on a 10-cube
    (lazy 4.1), p_0 = p_7 = 0.025 ... p_3 = p_4 = 0.237 on an 8-cube (RSR 4.1).

    Options: ``sigmas`` (half-width of the cut, 2.5), ``decimals`` (3: the papers' rounded
    probabilities, see :func:`normal_probabilities`; None: exact areas)."""

    def __init__(self, topology, min_dim: int = 0, max_dim: int | None = None,
                 sigmas: float = 2.5, decimals: int | None = 3):
        self.sigmas = _positive(sigmas, "sigmas")
        if decimals is not None and (isinstance(decimals, bool) or not isinstance(decimals, int) or not 1 <= decimals <= 12):
            raise WorkloadError(f"decimals must be None or 1..12, got {decimals!r}")
        self.decimals = decimals
        super().__init__(topology, min_dim, max_dim)

    def _probabilities(self):
        return normal_probabilities(len(self.dims), self.sigmas, self.decimals)


class _MeshShapes(SizeDistribution):
    """A w x h submesh request; code = w * (H + 1) + h."""

    kinds = ("mesh",)

    def __init__(self, topology):
        super().__init__(topology)
        self._stride = topology.height + 1

    def _codes(self, w, h):
        w = np.asarray(w, dtype=np.int64)
        h = np.asarray(h, dtype=np.int64)
        return w * self._stride + h, (w * h).astype(np.float64)

    def _make(self, code):
        w, h = divmod(int(code), self._stride)
        return Request.submesh(w, h)


def _side_limit(topology, max_side, what="max_side") -> int:
    lim = min(topology.width, topology.height)
    if max_side is None:
        return lim
    if isinstance(max_side, bool) or not isinstance(max_side, int) or not 1 <= max_side <= lim:
        raise WorkloadError(f"{what} must be an integer in 1..{lim} on {topology}, got {max_side!r}")
    return max_side


@SIZE_DISTRIBUTIONS.register("square-pow2")
class SquarePow2(_MeshShapes):
    """Square submesh of side 2^k, k uniform up to the shorter side (dissertation 7.1).

    "Square-2^k": sides 1, 2, 4, ... up to the largest power of two that fits the shorter side
    of the mesh (the 2-D buddy's jobs). Option ``max_side``."""

    def __init__(self, topology, max_side: int | None = None):
        super().__init__(topology)
        top = _side_limit(topology, max_side).bit_length() - 1
        self.sides = 1 << np.arange(top + 1)
        self.mean_processors = float(np.mean(self.sides.astype(np.float64) ** 2))

    def sample(self, rng, n):
        s = self.sides[rng.integers(0, len(self.sides), n)]
        return self._codes(s, s)


@SIZE_DISTRIBUTIONS.register("square-var")
class SquareVar(_MeshShapes):
    """Square submesh, side uniform over 1..shorter side of the mesh (dissertation 7.1).

    "Square-var"; also RSR 4.1's jobs for the 2-D buddy on a 32x32 mesh. Option ``max_side``."""

    def __init__(self, topology, max_side: int | None = None):
        super().__init__(topology)
        self.max_side = _side_limit(topology, max_side)
        s = np.arange(1, self.max_side + 1, dtype=np.float64)
        self.mean_processors = float(np.mean(s * s))

    def sample(self, rng, n):
        s = rng.integers(1, self.max_side + 1, n)
        return self._codes(s, s)


@SIZE_DISTRIBUTIONS.register("rect-restricted")
class RectRestricted(_MeshShapes):
    """w x h with |w - h| <= max_diff, uniform over the shapes that fit (dissertation 7.1).

    "Rectangular-restricted". The dissertation gives no constant; the default ``max_diff`` is
    a quarter of the shorter side (4 on its 16x16 mesh). Uniform over the allowed (w, h)
    pairs keeps the class symmetric in x and y."""

    def __init__(self, topology, max_diff: int | None = None):
        super().__init__(topology)
        W, H = topology.width, topology.height
        if max_diff is None:
            max_diff = max(1, min(W, H) // 4)
        if isinstance(max_diff, bool) or not isinstance(max_diff, int) or max_diff < 0:
            raise WorkloadError(f"max_diff must be an integer >= 0, got {max_diff!r}")
        self.max_diff = max_diff
        w = np.arange(1, W + 1)
        self._hlo = np.maximum(1, w - max_diff)
        hhi = np.minimum(H, w + max_diff)
        counts = np.maximum(0, hhi - self._hlo + 1)
        self._w = w[counts > 0]
        self._hlo = self._hlo[counts > 0]
        counts = counts[counts > 0]
        self._cum = np.cumsum(counts)
        self.shapes = int(self._cum[-1])
        area = 0.0
        for wi, lo, c in zip(self._w, self._hlo, counts):
            area += wi * (c * lo + c * (c - 1) / 2)  # w * sum of h over lo..lo+c-1
        self.mean_processors = float(area / self.shapes)

    def sample(self, rng, n):
        idx = rng.integers(0, self.shapes, n)
        row = np.searchsorted(self._cum, idx, side="right")
        before = np.where(row > 0, self._cum[row - 1], 0)
        return self._codes(self._w[row], self._hlo[row] + (idx - before))


@SIZE_DISTRIBUTIONS.register("rect-unrestricted")
class RectUnrestricted(_MeshShapes):
    """w uniform over 1..W and h over 1..H, independently (dissertation 7.1, RSR 4.1).

    "Rectangular-unrestricted"; RSR 4.1's jobs for frame sliding and first fit."""

    def __init__(self, topology):
        super().__init__(topology)
        self.mean_processors = (topology.width + 1) / 2 * (topology.height + 1) / 2

    def sample(self, rng, n):
        w = rng.integers(1, self.topology.width + 1, n)
        h = rng.integers(1, self.topology.height + 1, n)
        return self._codes(w, h)


@SIZE_DISTRIBUTIONS.register("processors")
class UniformProcessors(SizeDistribution):
    """Processor count uniform over 1..system size, rounded by the topology (dissertation 8.2).

    The topology turns the count into the smallest submesh (or cube) that holds it. Options
    ``min_processors``, ``max_processors``. Works on any topology."""

    kinds = ("mesh", "hypercube")

    def __init__(self, topology, min_processors: int = 1, max_processors: int | None = None):
        super().__init__(topology)
        hi = topology.size if max_processors is None else max_processors
        for v in (min_processors, hi):
            if isinstance(v, bool) or not isinstance(v, int):
                raise WorkloadError(f"processor counts must be integers, got {v!r}")
        if not 1 <= min_processors <= hi <= topology.size:
            raise WorkloadError(
                f"need 1 <= min_processors <= max_processors <= {topology.size} on {topology}, "
                f"got {min_processors}..{hi}")
        self.lo, self.hi = min_processors, hi
        self.mean_processors = (min_processors + hi) / 2

    def sample(self, rng, n):
        p = rng.integers(self.lo, self.hi + 1, n)
        return p, p.astype(np.float64)

    def _make(self, code):
        return Request.processors(int(code))


def size_names(topology) -> list[str]:
    """The size distributions that fit ``topology``."""
    topo = parse_topology(topology)
    return [n for n in SIZE_DISTRIBUTIONS.names()
            if topo.kind in getattr(SIZE_DISTRIBUTIONS.get(n), "kinds", ())]


# =========================================================================== service


class ServiceDistribution:
    """A positive random time with a given ``mean``; ``cx`` is its coefficient of variation.
    ``scaled(f)`` is the same shape with every time multiplied by f (independent demand)."""

    def __init__(self, mean: float = 5.0):
        self.mean = _positive(mean, "service mean")
        self._floor = self.mean * 1e-12  # a draw of exactly 0 (probability ~2^-53) is no run time

    @property
    def cx(self) -> float:
        raise NotImplementedError  # pragma: no cover

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover

    def scaled(self, factor: float) -> "ServiceDistribution":
        raise NotImplementedError  # pragma: no cover

    def describe(self) -> dict:
        return {"name": getattr(self, "registry_name", type(self).__name__), "mean": self.mean, "cx": self.cx}


@SERVICE_DISTRIBUTIONS.register("uniform")
class UniformService(ServiceDistribution):
    """Uniform on (0, 2 x mean] (lazy 4.1's uniform residence time of mean 5).

    In general (mean (1 - width), mean (1 + width)]; ``width`` defaults to 1."""

    def __init__(self, mean: float = 5.0, width: float = 1.0):
        super().__init__(mean)
        if not isinstance(width, (int, float)) or isinstance(width, bool) or not 0 <= width <= 1:
            raise WorkloadError(f"uniform width must be in [0, 1], got {width!r}")
        self.width = float(width)

    @property
    def cx(self):
        return self.width / math.sqrt(3.0)

    def sample(self, rng, n):
        # 1 - U lies in (0, 1], so the lower end is open and a width of 1 never yields 0
        return self.mean * (1.0 - self.width + 2.0 * self.width * (1.0 - rng.random(n)))

    def scaled(self, factor):
        return UniformService(self.mean * factor, self.width)


@SERVICE_DISTRIBUTIONS.register("exponential")
class ExponentialService(ServiceDistribution):
    """Exponential with the given mean (RSR 4.1, dissertation 7.2 and 8.2)."""

    @property
    def cx(self):
        return 1.0

    def sample(self, rng, n):
        return np.maximum(rng.standard_exponential(n) * self.mean, self._floor)

    def scaled(self, factor):
        return ExponentialService(self.mean * factor)


@SERVICE_DISTRIBUTIONS.register("hyperexp")
class HyperexpService(ServiceDistribution):
    """Bimodal hyperexponential with mean, Cx (4.0) and alpha (0.95) (lazy 4.1).

    With probability alpha exponential of mean
    1/lambda_s = m (1 - sqrt((cx^2-1)(1-alpha)/(2 alpha))), else of mean
    1/lambda_l = m (1 + sqrt((cx^2-1) alpha/(2(1-alpha)))).

    With the paper's alpha 0.95 and cx 4 both means are positive (0.372 m and 12.94 m), and
    the mixture has exactly mean m and coefficient of variation cx. The small branch stays
    positive only while cx^2 < 1 + 2 alpha/(1-alpha) (cx < 6.24 for alpha 0.95); beyond that
    the paper's formulas describe no distribution, so ``fit="paper"`` refuses with a clear
    error and ``fit="balanced"`` uses the standard balanced-means two-phase fit (each branch
    carries half the mean; valid for every cx >= 1; alpha is then derived, not given).
    """

    def __init__(self, mean: float = 5.0, cx: float = 4.0, alpha: float = 0.95, fit: str = "paper"):
        super().__init__(mean)
        cx = _positive(cx, "cx")
        if cx < 1:
            raise WorkloadError(f"a hyperexponential needs cx >= 1, got {cx}")
        if fit not in ("paper", "balanced"):
            raise WorkloadError(f"hyperexp fit must be 'paper' or 'balanced', got {fit!r}")
        m, c2 = self.mean, cx * cx
        if fit == "paper":
            if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
                raise WorkloadError(f"hyperexp alpha must be in (0, 1), got {alpha!r}")
            small = m * (1 - math.sqrt((c2 - 1) * (1 - alpha) / (2 * alpha)))
            large = m * (1 + math.sqrt((c2 - 1) * alpha / (2 * (1 - alpha))))
            if small <= 0:
                limit = math.sqrt(1 + 2 * alpha / (1 - alpha))
                raise WorkloadError(
                    f"hyperexp with alpha={alpha} and cx={cx}: the lazy paper's formula gives a "
                    f"small-branch mean of {small:.4g} <= 0 (it needs cx < {limit:.3g}); "
                    f"use fit='balanced' or a larger alpha")
        else:
            alpha = 0.5 * (1 + math.sqrt((c2 - 1) / (c2 + 1)))
            small, large = m / (2 * alpha), m / (2 * (1 - alpha))
        self._cx, self.alpha, self.fit = cx, float(alpha), fit
        self.small_mean, self.large_mean = small, large

    @property
    def cx(self):
        return self._cx

    def sample(self, rng, n):
        means = np.where(rng.random(n) < self.alpha, self.small_mean, self.large_mean)
        return np.maximum(rng.standard_exponential(n) * means, self._floor)

    def scaled(self, factor):
        return HyperexpService(self.mean * factor, self._cx, self.alpha, self.fit)

    def describe(self):
        return {**super().describe(), "alpha": self.alpha, "fit": self.fit,
                "small_mean": self.small_mean, "large_mean": self.large_mean}


@SERVICE_DISTRIBUTIONS.register("truncnormal")
class TruncNormalService(ServiceDistribution):
    """Normal truncated to positive times (RSR 4.1: mean 5, standard deviation 2).

    ``sd`` (default 0.4 x mean, the paper's 2 for 5) is the deviation of the normal before
    truncation. Truncation at 0 would raise the mean (by 0.7% for 5 and 2), so the location
    of the underlying normal is solved for so that the truncated times have exactly the
    stated mean, as the paper says both its distributions have "the same mean of 5"."""

    def __init__(self, mean: float = 5.0, sd: float | None = None):
        super().__init__(mean)
        self.sd = 0.4 * self.mean if sd is None else _positive(sd, "truncnormal sd")
        s, m = self.sd, self.mean
        tmean = lambda mu: mu + s * _phi(mu / s) / _Phi(mu / s)  # noqa: E731 - increasing in mu
        lo, hi = -3.0 * s, m
        if tmean(lo) > m:
            raise WorkloadError(
                f"truncnormal sd {s:g} is too large for mean {m:g} (the normal would be mostly "
                f"below zero); use sd <= about {m / 0.28:.3g} or the exponential")
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            if tmean(mid) < m:
                lo = mid
            else:
                hi = mid
        self.mu = 0.5 * (lo + hi)
        z = self.mu / s
        lam = _phi(z) / _Phi(z)
        self._var = s * s * (1 - z * lam - lam * lam)

    @property
    def cx(self):
        return math.sqrt(self._var) / self.mean

    def sample(self, rng, n):
        x = rng.normal(self.mu, self.sd, n)
        bad = np.flatnonzero(x <= 0)
        while bad.size:  # rejection: redraw only the non-positive ones, deterministically
            x[bad] = rng.normal(self.mu, self.sd, bad.size)
            bad = bad[x[bad] <= 0]
        return x

    def scaled(self, factor):
        return TruncNormalService(self.mean * factor, self.sd * factor)


# =========================================================================== workload


def arrival_rate(system_size: float, mean_size: float, mean_service: float, load: float) -> float:
    """lambda = system size / (mean job size x mean service) x load (lazy 4, RSR 4.1)."""
    return system_size / (_positive(mean_size, "mean job size") * _positive(mean_service, "mean service")) \
        * _positive(load, "load")


def _accepts(factory) -> set[str]:
    ps = inspect.signature(factory).parameters
    return {n for n, p in ps.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)} - {"topology", "mean", "self"}


def _split_params(size_name: str, service_name: str, params: dict) -> tuple[dict, dict]:
    sz, sv = _accepts(SIZE_DISTRIBUTIONS.get(size_name)), _accepts(SERVICE_DISTRIBUTIONS.get(service_name))
    a, b = {}, {}
    for k, v in params.items():
        if k in sz and k in sv:
            raise WorkloadError(f"option {k!r} fits both {size_name!r} and {service_name!r}; "
                                f"pass size_params/service_params")
        if k in sz:
            a[k] = v
        elif k in sv:
            b[k] = v
        else:
            raise WorkloadError(
                f"unknown workload option {k!r}; size {size_name!r} takes {sorted(sz) or 'none'}, "
                f"service {service_name!r} takes {sorted(sv) or 'none'}")
    return a, b


def _seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise WorkloadError(f"seed must be an integer >= 0, got {seed!r}")
    return int(seed)


@dataclass(frozen=True)
class Workload:
    """One configured workload: ``rate`` is lambda, ``mean_size`` the mean processors asked
    for; the stream's total demand (runtime x processors asked) over N T then measures
    ``load`` up to sampling noise, for dependent and independent demand alike. The
    simulator's ``measured_load`` counts the nodes a request is rounded to (lazy 4.2), so
    with processor-count requests on cubes or submeshes it is higher by the round-off."""

    topology: Topology
    load: float
    size_distribution: SizeDistribution
    service_distribution: ServiceDistribution  # residence time (dependent demand), mean = service_mean
    demand: str = "dependent"
    seed: int = 0
    mean_size_override: float | None = None  # a paper's round "mean job size" for lambda

    @classmethod
    def build(cls, topology, load: float, size_dist: str = "uniform", service_dist: str = "uniform",
              service_mean: float = 5.0, demand: str = "dependent", seed: int = 0,
              size_params: dict | None = None, service_params: dict | None = None,
              mean_size: float | None = None, **params) -> "Workload":
        """``mean_size`` replaces the exact mean processors in lambda only (the lazy paper's
        6-cube example uses a round 10 for the 10.5 of its uniform sizes)."""
        topo = parse_topology(topology)
        if mean_size is not None:
            mean_size = _positive(mean_size, "mean job size")
        _positive(load, "load")
        if demand not in ("dependent", "independent"):
            raise WorkloadError(f"demand must be 'dependent' or 'independent', got {demand!r}")
        a, b = _split_params(size_dist, service_dist, params)
        try:
            sizes = SIZE_DISTRIBUTIONS.create(size_dist, topo, **{**a, **(size_params or {})})
            service = SERVICE_DISTRIBUTIONS.create(service_dist, service_mean, **{**b, **(service_params or {})})
        except TypeError as e:  # a wrong option passed in size_params/service_params
            raise WorkloadError(str(e)) from None
        return cls(topo, float(load), sizes, service, demand, _seed(seed), mean_size)

    @property
    def size_dist(self) -> str:
        return self.size_distribution.registry_name

    @property
    def service(self) -> str:
        return self.service_distribution.registry_name

    @property
    def mean_size(self) -> float:
        if self.mean_size_override is not None:
            return self.mean_size_override
        return self.size_distribution.mean_processors

    @property
    def mean_service(self) -> float:
        return self.service_distribution.mean

    service_mean = mean_service

    @property
    def rate(self) -> float:
        return arrival_rate(self.topology.size, self.mean_size, self.mean_service, self.load)

    @property
    def demand_distribution(self) -> ServiceDistribution:
        """What a job's total service demand (dependent) or residence time is drawn from."""
        if self.demand == "independent":
            return self.service_distribution.scaled(self.mean_size)
        return self.service_distribution

    def describe(self) -> dict:
        return {"topology": str(self.topology), "load": self.load, "rate": self.rate,
                "mean_size": self.mean_size, "mean_service": self.mean_service,
                "demand": self.demand, "seed": self.seed,
                "size": self.size_distribution.describe(), "service": self.service_distribution.describe()}

    def _rngs(self):
        return [np.random.default_rng(s) for s in np.random.SeedSequence(self.seed).spawn(3)]

    def jobs(self, n: int | None = None, until: float | None = None, *, first_id: int = 1,
             at: float | None = None) -> Iterator[Job]:
        """Jobs in submit order: ``n`` of them, those submitted before ``until``, or (neither)
        an endless stream. ``at``: submit every job at that time instead (a batch)."""
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
            raise WorkloadError(f"job count must be an integer >= 0, got {n!r}")
        if until is not None:
            _positive(until, "until")
        if at is not None and (not isinstance(at, (int, float)) or not math.isfinite(at) or at < 0):
            raise WorkloadError(f"batch time must be >= 0, got {at!r}")
        return self._stream(n, until, first_id, at)

    def _stream(self, n, until, first_id, at):
        arr_rng, size_rng, svc_rng = self._rngs()
        mean_gap = 1.0 / self.rate
        dist = self.demand_distribution
        independent = self.demand == "independent"
        sizes = self.size_distribution
        request, cache = sizes.request, sizes._cache
        last, jid, left = 0.0, first_id, n
        while left is None or left > 0:
            gaps = arr_rng.standard_exponential(BLOCK) * mean_gap
            times = last + np.cumsum(gaps)
            last = float(times[-1])
            codes, procs = sizes.sample(size_rng, BLOCK)
            run = dist.sample(svc_rng, BLOCK)
            if independent:
                run = run / procs
            m = BLOCK if left is None else min(BLOCK, left)
            if until is not None:
                m = min(m, int(np.searchsorted(times, until, side="left")))
            submit = times[:m].tolist() if at is None else [float(at)] * m
            for t, c, r in zip(submit, codes[:m].tolist(), run[:m].tolist()):
                req = cache.get(c)
                yield Job(jid, t, req if req is not None else request(c), r)
                jid += 1
            if left is not None:
                left -= m
            if until is not None and last >= until:
                return

    def job_list(self, n: int, **kw) -> list[Job]:
        return list(self.jobs(n, **kw))


def generate(topology, load: float, size_dist: str = "uniform", service_dist: str = "uniform",
             service_mean: float = 5.0, demand: str = "dependent", seed: int = 0,
             jobs: int | None = None, until: float | None = None, **params) -> Iterator[Job]:
    """Stream the jobs of a Poisson workload (see the module docstring). ``params`` go to the
    size or the service distribution, whichever takes them (e.g. ``cx=4, alpha=0.95``)."""
    w = Workload.build(topology, load, size_dist, service_dist, service_mean, demand, seed, **params)
    return w.jobs(jobs, until)


def make_workload(topology, load: float, size_dist: str = "uniform", service: str = "uniform",
                  service_mean: float = 5.0, demand: str = "dependent", seed: int = 0,
                  **params) -> Workload:
    """:meth:`Workload.build` with the command line's names (``--service``)."""
    return Workload.build(topology, load, size_dist, service, service_mean, demand, seed, **params)


def fixed_jobs(topology, n: int, size_dist: str = "uniform", service_dist: str = "uniform",
               service_mean: float = 5.0, demand: str = "dependent", seed: int = 0,
               load: float | None = None, **params) -> list[Job]:
    """A fixed list of ``n`` jobs for completion-time runs (lazy Figure 9: a fixed set of jobs,
    the same order for every discipline). ``load=None`` submits all at time 0 (a batch);
    with a load they arrive as the Poisson stream of that load, as in the paper's Figure 9
    ("generated at various input rates"). Sizes and times are those of ``generate`` with the
    same seed, whichever arrival pattern is chosen."""
    w = Workload.build(topology, 1.0 if load is None else load, size_dist, service_dist,
                       service_mean, demand, seed, **params)
    return w.job_list(n, at=0.0 if load is None else None)


__all__ = [
    "SIZE_DISTRIBUTIONS", "SERVICE_DISTRIBUTIONS", "Workload", "WorkloadError", "generate", "make_workload",
    "fixed_jobs", "arrival_rate", "normal_probabilities", "size_names", "SizeDistribution",
    "ServiceDistribution",
]
