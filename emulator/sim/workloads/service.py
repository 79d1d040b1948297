"""Service times (DESIGN "Workloads"): a job's residence time, or with independent demand its
total demand, drawn from uniform (lazy 4.1), exponential, the lazy paper's bimodal
hyperexponential or RSR's truncated normal, each with an exact mean."""
from __future__ import annotations

import math

import numpy as np

from emulator.sim.spec import WorkloadSpec
from emulator.sim.workloads.common import SERVICE_DISTRIBUTIONS, WorkloadError, _Phi, _phi, _positive


_MEAN = WorkloadSpec.service_mean  # the one default (emulator.sim.spec)


class ServiceDistribution:
    """A positive random time with a given ``mean``; ``cx`` is its coefficient of variation.
    ``scaled(f)`` is the same shape with every time multiplied by f (independent demand)."""

    def __init__(self, mean: float = _MEAN):
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

    def __init__(self, mean: float = _MEAN, width: float = 1.0):
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

    def __init__(self, mean: float = _MEAN, cx: float = 4.0, alpha: float = 0.95, fit: str = "paper"):
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

    def __init__(self, mean: float = _MEAN, sd: float | None = None):
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
