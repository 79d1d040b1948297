"""The statistics of ``mcemu reproduce``: 95% confidence intervals, the stopping rule (half-width
within a precision of the mean, the lazy paper's criterion), the replication seeds and the key
that identifies a point in ``runs.jsonl``."""
from __future__ import annotations

import hashlib
import json
import math
from typing import Iterable

# Two-sided 95% Student t quantiles t_{0.975, df} for df = 1..30; beyond, the normal 1.96
# is within 2% (no scipy dependency for one table).
_T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def t975(df: int) -> float:
    if df < 1:
        return math.inf
    return _T975[df - 1] if df <= len(_T975) else 1.96 + 2.4 / df  # smooth tail toward 1.96


def mean_ci(values: Iterable[float]) -> tuple[float, float, int]:
    """(mean, 95% half-width, count) of the finite values; the half-width is inf with one
    value and nan with none."""
    xs = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    n = len(xs)
    if n == 0:
        return math.nan, math.nan, 0
    m = sum(xs) / n
    if n == 1:
        return m, math.inf, 1
    var = sum((x - m) ** 2 for x in xs) / (n - 1)
    return m, t975(n - 1) * math.sqrt(var / n), n


def precise_enough(values: Iterable[float], precision: float) -> bool:
    """The stopping rule: half-width <= precision x |mean|. A metric with no finite value
    (an L/S ratio with no large job) cannot be improved by more runs and counts as met."""
    m, hw, n = mean_ci(values)
    if n == 0:
        return True
    if n == 1:
        return False
    return hw <= precision * abs(m) or hw == 0.0


def reps_needed(values: Iterable[float], precision: float) -> int:
    """Rough total count for the target, from the current spread (normal approximation)."""
    m, hw, n = mean_ci(values)
    if n < 2 or not math.isfinite(hw) or m == 0:
        return n + 1
    return max(n + 1, math.ceil(n * (hw / (precision * abs(m))) ** 2))


def rep_seed(name: str, rep: int) -> int:
    h = hashlib.sha256(f"{name}:{rep}".encode()).digest()
    return int.from_bytes(h[:4], "big")


def point_key(params: dict) -> str:
    return json.dumps(params, sort_keys=True, separators=(",", ":"), default=str)
