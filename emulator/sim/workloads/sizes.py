"""Job sizes (DESIGN "Workloads"): what a job asks for, by topology. Cube dimensions for a
hypercube (uniform, the papers' discretized normal), submesh shapes for a mesh (dissertation
7.1), or a processor count rounded by the topology (dissertation 8.2). Each distribution draws
a numpy block of integer codes and the processors each asks for; ``request(code)`` turns a code
into a cached :class:`Request`."""
from __future__ import annotations

import numpy as np

from emulator.sim.workloads.common import SIZE_DISTRIBUTIONS, WorkloadError, _Phi, _positive
from scheduler.topology import Request, Topology, parse_topology


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
