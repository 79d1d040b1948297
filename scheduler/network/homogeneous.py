"""The homogeneous stair-layered multipath contention model (dissertation chapter 4).

Source: Min (1995), §4.1-4.3, eqs (4.1)-(4.14); specification NETWORK.md §4.1-4.5 and the
readings 6-10 of its §8. All times are in microseconds; the defaults are the text's
``L = 500`` flits and ``T_t = 0.05`` µs/flit (§4.2.1), so ``L*T_t = 25`` µs.

The model: ``lv`` paths, all with the same MTBS, stair-layered on one row of channels (the
geometry of NETWORK.md §2.1). Path ``u`` (0 = top, lv-1 = bottom) is ``P_{u,d}`` with
``u`` intermediate contention points (the paths above it join it) and ``d = lv-1-u``
starting competitors (the paths below it pass its entrance channel).

Equations, as implemented (``Dtr = L*T_t``, ``DI0[u] = Dmax^{P_{u,0}}``):

* (4.2)-(4.5)  ``Cmax_I[u] = sum_{k<u} (lambda_k / mu_k) * DI0[k]`` with
  ``lambda_k = 1/(MTBS + Dmax[k])`` and ``mu_k = 1/Dmax[k]`` (the competitor's whole
  communication time is its service time: "If a message header is blocked at one of the later
  contention points, then the entire flit stream is blocked", §4.2.1).
* (4.6)-(4.9)  ``Cmax_S[u] = (sum_{k>u} lambda_k) * DI0[u+1] * DI0[u]``: merged Poisson
  arrivals of the ``d`` paths below, served at the literal rate ``mu_{u+1,0} = 1/DI0[u+1]``,
  holding for ``Dmax^{P_{u,0}} = DI0[u]``; zero for the bottom path.
* (4.10) ``Dmax[u] = Dtr + Cmax_I[u] + Cmax_S[u]``; (4.11) the average of ``Cmax`` over paths.

Readings (each is NETWORK.md's; see there for the evidence):

* ``Dmax^{P_{k,0}}`` (reading 6, NETWORK.md §4.3): path k of the *same* lv-layer model with
  its starting contention removed, ``DI0[k] = Dtr + Cmax_I[k]``, not a stand-alone path of a
  smaller model. §4.2.1 computes ``Dmax^{P_{1,0}}`` exactly this way.
* ``mu_S = mu_{u+1,0}`` kept literal (reading 7): with it the model equals the exact MTBS = 0
  behaviour (50/100/100 for lv = 3, 50/100/200/400/400 for lv = 5); ``mu_{u,0}`` does not.
* ``D_{u,0}`` in (4.10) is ``Dmax^{P_{u,0}}``, as in (4.9) (an OCR/author slip).
* Solver (NETWORK.md §4.4, the text's §4.2.2 recipe): an initial pass without starting
  contention (the text's "use lambda_{k-1,0} and mu_{k-1,0} instead"), then Jacobi sweeps of
  (4.5)/(4.9) on the previous sweep's values until the largest relative change is below
  ``tol``. No cap on ``Pr_S`` is applied (none is needed for lv <= 15, NETWORK.md §4.4).

Transpose predictors (§4.3.2, NETWORK.md §4.5):

* :func:`stair_interpolation` / :func:`transpose_interpolation`: eq (4.14) with its two sums
  read as the average (4.11) (reading 8: the printed sums lack ``/lv``; "represent
  Cmax^{basicpattern}"), extended to any pattern average ``x = ICL = SCL`` by linear
  interpolation between the odd stairs ``lv = 2*floor(x)+1`` and ``lv + 2`` (reading 9:
  a stair of lv layers has ICL = SCL = (lv-1)/2). ``x`` is used exactly (2/3, not 0.67).
  ``reading="sum"`` gives the printed sums, for comparison only.
* :func:`transpose_row_stairs` ([D], not in the text): under XY routing an n x n transpose
  splits exactly into independent row stairs (row i: an i-layer right-directed stair and an
  (n-1-i)-layer left-directed one, all ending at the diagonal column; their Y-segments never
  merge with other rows'), so the mean of (4.10) over those stairs is the pattern's mean
  maximum contention delay. The pattern's ICL = SCL = (n-2)/3 follows from the same split.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

L_FLITS = 500
T_FLIT_US = 0.05


class NoConvergence(ArithmeticError):
    """The fixed-point iteration did not settle within ``max_iter`` sweeps."""


@dataclass(frozen=True)
class StairSolution:
    """The homogeneous lv-layer stair at one MTBS. Per-path tuples run top -> bottom; µs."""

    lv: int
    mtbs: float
    dmax: tuple[float, ...]  # Dmax^{P_{u,d}}: transmission + Cmax_I + Cmax_S
    cmax_i: tuple[float, ...]  # (4.5)
    cmax_s: tuple[float, ...]  # (4.9)
    dmax_no_start: tuple[float, ...]  # Dmax^{P_{u,0}} as read in NETWORK.md §4.3
    iterations: int  # Jacobi sweeps after the initial pass

    @property
    def cmax(self) -> tuple[float, ...]:
        """(4.10) per path."""
        return tuple(i + s for i, s in zip(self.cmax_i, self.cmax_s))

    @property
    def average_cmax(self) -> float:
        """(4.11): the pattern's average maximum contention delay."""
        return sum(self.cmax) / self.lv

    @property
    def pr_start(self) -> tuple[float, ...]:
        """``Pr_S`` per path (4.8): ``Cmax_S / Dmax^{P_{u,0}}``."""
        return tuple(s / d for s, d in zip(self.cmax_s, self.dmax_no_start))


def solve_stair(
    lv: int,
    mtbs: float,
    *,
    L: int = L_FLITS,
    t_flit: float = T_FLIT_US,
    tol: float = 1e-12,
    max_iter: int = 100_000,
) -> StairSolution:
    """Solve (4.5)/(4.9) for the lv-layer stair with every path at ``mtbs`` µs."""
    if not isinstance(lv, int) or lv < 1:
        raise ValueError(f"lv must be an int >= 1, got {lv!r}")
    if mtbs < 0:
        raise ValueError(f"MTBS must be >= 0, got {mtbs!r}")
    dtr = L * t_flit

    # Initial pass: starting contention ignored, so Dmax = DI0 and the sums run forward.
    ci = [0.0] * lv
    di0 = [0.0] * lv
    for u in range(lv):
        ci[u] = sum(di0[k] / (mtbs + di0[k]) * di0[k] for k in range(u))
        di0[u] = dtr + ci[u]
    cs = [0.0] * lv

    for it in range(1, max_iter + 1):
        d = [dtr + ci[u] + cs[u] for u in range(lv)]
        busy = [dk / (mtbs + dk) for dk in d]  # lambda/mu of each path as a competitor
        lam = [1.0 / (mtbs + dk) for dk in d]
        di0 = [dtr + c for c in ci]
        new_ci = [0.0] * lv
        acc = 0.0
        for u in range(lv):
            new_ci[u] = acc
            acc += busy[u] * di0[u]
        new_cs = [0.0] * lv
        below = 0.0  # sum of lambda over the paths below u
        for u in range(lv - 2, -1, -1):
            below += lam[u + 1]
            new_cs[u] = below * di0[u + 1] * di0[u]
        change = max(
            max(abs(a - b) / max(1.0, abs(b)) for a, b in zip(new_ci, ci)),
            max(abs(a - b) / max(1.0, abs(b)) for a, b in zip(new_cs, cs)),
        )
        ci, cs = new_ci, new_cs
        if change <= tol:
            di0 = [dtr + c for c in ci]
            return StairSolution(
                lv=lv,
                mtbs=mtbs,
                dmax=tuple(dtr + a + b for a, b in zip(ci, cs)),
                cmax_i=tuple(ci),
                cmax_s=tuple(cs),
                dmax_no_start=tuple(di0),
                iterations=it,
            )
    raise NoConvergence(f"stair lv={lv} MTBS={mtbs}: no fixed point after {max_iter} sweeps")


def average_cmax(lv: int, mtbs: float, **kw) -> float:
    """(4.11) for an lv-layer stair; 0 for lv = 0 (no paths) and lv = 1 (no contention)."""
    if lv == 0:
        return 0.0
    return solve_stair(lv, mtbs, **kw).average_cmax


def stair_interpolation(
    x: float | Fraction, mtbs: float, *, reading: str = "average", **kw
) -> float:
    """Eq (4.14) generalised: max contention delay (µs) of a pattern with ICL = SCL = ``x``.

    Linear in ``x`` between the odd stairs lv_lo = 2*floor(x)+1 and lv_lo+2 (NETWORK.md §4.5).
    ``reading="average"`` (default, reading 8) uses (4.11); ``"sum"`` the printed sums.
    """
    if x < 0:
        raise ValueError(f"contention level must be >= 0, got {x!r}")
    if reading not in ("average", "sum"):
        raise ValueError(f"reading must be 'average' or 'sum', got {reading!r}")
    fl = math.floor(x)
    lo, hi = 2 * fl + 1, 2 * fl + 3
    frac = float(x - fl)

    def term(lv: int) -> float:
        a = average_cmax(lv, mtbs, **kw)
        return a * lv if reading == "sum" else a

    t_lo = term(lo)
    if frac == 0.0:
        return t_lo
    return t_lo + frac * (term(hi) - t_lo)


def transpose_level(n: int) -> Fraction:
    """ICL = SCL average of the n x n transpose under XY routing: (n-2)/3 (0 for n < 2)."""
    return Fraction(n - 2, 3) if n >= 2 else Fraction(0)


def transpose_interpolation(n: int, mtbs: float, *, reading: str = "average", **kw) -> float:
    """The text's predictor for the n x n transpose (4.14), Fig 4.7: µs of contention delay."""
    return stair_interpolation(transpose_level(n), mtbs, reading=reading, **kw)


def transpose_row_stairs(n: int, mtbs: float, **kw) -> float:
    """[D] Exact row-stair decomposition: mean Cmax (µs) over the n(n-1) transpose paths.

    Stair sizes 0..n-1 each occur twice (row k right, row n-1-k left); a stair of k layers
    holds k paths, so the mean is ``sum_k 2*k*avgCmax(k) / (n(n-1))``.
    """
    if n < 2:
        return 0.0
    total = sum(2 * k * average_cmax(k, mtbs, **kw) for k in range(1, n))
    return total / (n * (n - 1))


__all__ = [
    "L_FLITS",
    "NoConvergence",
    "StairSolution",
    "T_FLIT_US",
    "average_cmax",
    "solve_stair",
    "stair_interpolation",
    "transpose_interpolation",
    "transpose_level",
    "transpose_row_stairs",
]
