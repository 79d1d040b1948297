"""The statistics of ``mcemu reproduce``: 95% confidence intervals, the stopping rule (half-width
within a precision of the mean, the lazy paper's criterion), the replication seeds and the key
that identifies a point in ``runs.jsonl``; and ratio-of-means estimators (system power X/M,
lazy paper 4.2) with their delta-method intervals."""
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


def ratio_ci(xs: Iterable[float], ys: Iterable[float]) -> tuple[float, float, int]:
    """(mean(x) / mean(y), 95% half-width, count) over paired replications (x_r, y_r), the
    pairs with both values finite.

    The ratio of means, not the mean of the ratios: a replication whose y is near 0 (a
    delay M close to 0 at light load) makes x_r / y_r huge and would decide a mean of ratios
    on its own, while it moves mean(y) by 1/n of itself. The interval is the delta method's
    (first-order Taylor expansion of x/y about the means): with R = xbar / ybar,
    Var(R) ~ (s_x^2 - 2 R s_xy + R^2 s_y^2) / (n ybar^2), the half-width t_{0.975, n-1} sqrt(Var).
    The half-width is inf with one pair and nan with none; a mean(y) of 0 gives a ratio of
    inf (0 when mean(x) is 0 too: metrics.power's convention) and a nan half-width."""
    pairs = [(float(x), float(y)) for x, y in zip(xs, ys)
             if x is not None and y is not None and math.isfinite(float(x)) and math.isfinite(float(y))]
    n = len(pairs)
    if n == 0:
        return math.nan, math.nan, 0
    mx = sum(x for x, _ in pairs) / n
    my = sum(y for _, y in pairs) / n
    if my == 0:  # as metrics.power: jobs completed and none waited
        return (math.inf if mx > 0 else 0.0), math.nan, n
    r = mx / my
    if n == 1:
        return r, math.inf, 1
    sxx = sum((x - mx) ** 2 for x, _ in pairs) / (n - 1)
    syy = sum((y - my) ** 2 for _, y in pairs) / (n - 1)
    sxy = sum((x - mx) * (y - my) for x, y in pairs) / (n - 1)
    return r, _delta_hw(r, my, sxx, syy, sxy, n), n


def _delta_hw(r, my, sxx, syy, sxy, n) -> float:
    var = max(0.0, sxx - 2 * r * sxy + r * r * syy) / (n * my * my)
    return t975(n - 1) * math.sqrt(var)


def ratio_ci_from_cis(x: tuple, y: tuple, total: tuple, n: int) -> tuple[float, float]:
    """:func:`ratio_ci` from the (mean, half-width) that :func:`mean_ci` gives of x, of y and
    of x + y over the same n replications (what an experiment's results keep of each point):
    the sample variances are n (hw / t)^2 and, the sample variance being a quadratic form,
    s_xy = (s_{x+y}^2 - s_x^2 - s_y^2) / 2 exactly. Returns (ratio, half-width)."""
    (mx, hx), (my, hy), (_, hs) = x, y, total
    if not (math.isfinite(mx) and math.isfinite(my)):
        return math.nan, math.nan
    if my == 0:
        return (math.inf if mx > 0 else 0.0), math.nan
    r = mx / my
    if n < 2 or not all(math.isfinite(h) for h in (hx, hy, hs)):
        return r, math.inf
    t = t975(n - 1)
    sxx, syy, sss = (n * (h / t) ** 2 for h in (hx, hy, hs))
    return r, _delta_hw(r, my, sxx, syy, (sss - sxx - syy) / 2, n)


def derive_ratio(points, name: str, num: str, den: str, total: str) -> None:
    """Set ``name`` in the stats of every point (objects with ``stats`` {metric: (mean,
    half-width)} and ``reps``) to the ratio of the means of ``num`` and ``den`` with its
    delta-method interval, ``total`` being the metric num + den of each replication. Points
    without those metrics are left alone."""
    for p in points:
        st = p.stats
        if num in st and den in st and total in st:
            st[name] = ratio_ci_from_cis(st[num], st[den], st[total], p.reps)


def rep_seed(name: str, rep: int) -> int:
    h = hashlib.sha256(f"{name}:{rep}".encode()).digest()
    return int.from_bytes(h[:4], "big")


def point_key(params: dict) -> str:
    return json.dumps(params, sort_keys=True, separators=(",", ":"), default=str)

