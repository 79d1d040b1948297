"""What the size and service distributions share: their registries, the error they raise, and
the checks and normal-curve helpers both use."""
from __future__ import annotations

import math

from scheduler.registry import Registry

SIZE_DISTRIBUTIONS = Registry("size distribution")
SERVICE_DISTRIBUTIONS = Registry("service distribution")


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
