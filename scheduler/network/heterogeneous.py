"""The heterogeneous multipath contention model (dissertation chapter 5).

Source: Min (1995), §5.1-5.4, eqs (5.1)-(5.11), the unnumbered equations of §5.4.1/§5.4.2 and
the appendix (p.136-137); specification NETWORK.md §5.1-5.4 and readings 11-17 of its §8.
Times in µs; ``L*T_t = 25`` µs by default.

2-path function :func:`two_path` (the text's ``f``, §5.3.1). One channel H is the first
contention point of an upper path P_i and a lower path P_j; after H they hold it for known
times ``rd_i``, ``rd_j``. Think times ``T ~ Exp(mtbs)``; (5.1) sums four cases over
``Pr{T_i < rd_j}``, ``Pr{T_j < rd_i}`` (5.2), with (5.3) for case 1, (5.4)-(5.9) for case 2
(the ceiling of (5.4) as printed; ``E[N_t]`` of (5.6) is ``E[N_i]``, reading 13), case 3 the
mirror of case 2, and (5.10)/(5.11) for case 4. Remaining times are halves of means, as the
analysis uses them (reading 11: the body's residual-life formula is misprinted and unused).

* ``case4="physical"`` (default, reading 12): a waiter waits half of the *other* path's
  holding time, ``E[Cex_i|4] = rd_j/(rd_j + E[T_j|T_j>=rd_i]) * rd_j/2``. This is what the
  §5.3.1 prose ("the waiting time is approximately one-half of rd_i" for P_j's message) says.
* ``case4="literal"``: (5.10)/(5.11) as printed, with the waiter's own ``rd/2``. The two
  coincide when ``rd_i == rd_j``.

Conditional expectations (appendix; the ``<`` one is the standard result the appendix omits),
for ``T ~ Exp(mean m)``: ``E[T|T>=k] = k + m``, ``E[T|T<k] = m - k/(e^{k/m} - 1)``,
``Pr{T<k} = 1 - e^{-k/m}``. ``m = 0`` is back-to-back sending: ``T == 0``.

m-path model :func:`solve_multipath` (§5.2, §5.4; NETWORK.md §5.3). Paths P_1 (top) .. P_m
(bottom); stage S_i is P_i's entrance channel, stages numbered against the message direction
(S_1 is shared by all paths). ``D[i][j] = D_{S_i,d}^{P_j}`` for ``i <= j``, ``D[0][j] = L*T_t``.
Each iteration runs the stages backward, S_1 .. S_m, from the previous iteration's values;
iteration 0 ignores all starting contention. Readings:

* 14: ``tau(n)_{S_i,P_j} = mtbs_j + C(n-1)_{S_j,S_{i+1}}^{P_j}``: contention *upstream* of
  S_i only, ``= D(n-1)[j][j] - D(n-1)[i][j]``; the printed ``C_{S_j,S_i}`` would count S_i
  twice once added to ``D_{S_i,d}`` in the arrival rate. Iteration 0 uses ``tau = mtbs_j``.
* 15: ``D(n-1)_{S_i,d}^Q`` (undefined in the text) is the lambda-weighted mean of the
  competitors' ``D(n-1)_{S_i,d}``; ``tau_Q`` is clamped at >= 0.
* 16: P_i's remaining delay after S_i is ``D(n)_{S_{i-1},d}^{P_i}`` (the formula's n, not the
  prose's n-1): stages run backward, so it is already known. Q's remaining delay (§5.4.1-c)
  keeps the printed ``D(n-1)`` of the competitors.
* ``lambda(n)_{S_i,P_j} = 1/(tau(n-1)_{S_i,P_j} + D(n-1)_{S_i,d}^{P_j})`` as printed. With
  reading 14 this tends to ``1/(mtbs_j + D^{P_j})``, the flow-control rate of (4.2).
* Stopping ([D]; the text says only "until steady state values are reached for C(n)"): the
  iteration stops when C(n) repeats within ``tol``. The printed ceiling of (5.4) makes ``f``
  discontinuous, and for about 2.5 % of 5-path MTBS vectors over {0, 25, 50, 100, 250, 500}
  there is no fixed point, only a short cycle (period 2-16, spread up to ~5 µs on ~190 µs).
  Then every returned value is the mean over one cycle, and ``cycle_period``/``cycle_spread``
  say so. ``ceiling=False`` (a continuous ``E[N_i]``, not the text) always settled to a fixed
  point on that grid.

m-n interaction model :func:`mn_interaction` (§5.3.2, Fig 5.7; NETWORK.md §5.4): ``rd`` of each
path is its ``Dmax`` inside its own homogeneous stair (chapter 4), taken for the *bottom* path
of the stair (reading 17: not stated; the bottom path has only intermediate contention).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from scheduler.network.homogeneous import L_FLITS, T_FLIT_US, NoConvergence, solve_stair

CASE4_READINGS = ("physical", "literal")


# ------------------------------------------------------------ exponential think times


def prob_less(mtbs: float, k: float) -> float:
    """``Pr{T < k}`` for ``T ~ Exp(mean mtbs)``; ``T == 0`` when ``mtbs == 0``."""
    if k <= 0:
        return 0.0
    if mtbs == 0:
        return 1.0
    return -math.expm1(-k / mtbs)


def mean_below(mtbs: float, k: float) -> float:
    """``E[T | T < k]``; 0 for back-to-back sending or ``k <= 0`` (an empty condition)."""
    if mtbs == 0 or k <= 0:
        return 0.0
    r = k / mtbs
    if r > 700.0:  # e^r overflows; the correction term is then below 1e-300
        return mtbs
    if r < 1e-8:  # uniform on [0, k) in the limit; avoids 0/0 cancellation
        return k / 2.0
    return mtbs - k / math.expm1(r)


def mean_above(mtbs: float, k: float) -> float:
    """``E[T | T >= k] = k + mtbs`` (memorylessness, derived in the appendix)."""
    return max(k, 0.0) + mtbs


# ------------------------------------------------------------------ the 2-path model


def external_contention(
    mtbs_i: float,
    mtbs_j: float,
    rd_i: float,
    rd_j: float,
    case4: str = "physical",
    ceiling: bool = True,
) -> tuple[float, float]:
    """``(E[Cex_i], E[Cex_j])`` of eq (5.1), µs. ``ceiling=False`` drops the ceil of (5.4)."""
    if case4 not in CASE4_READINGS:
        raise ValueError(f"case4 must be one of {CASE4_READINGS}, got {case4!r}")
    if min(mtbs_i, mtbs_j) < 0 or min(rd_i, rd_j) <= 0:
        raise ValueError("MTBS must be >= 0 and remaining delays > 0")
    a_i, a_j = prob_less(mtbs_i, rd_j), prob_less(mtbs_j, rd_i)
    ti_lt, tj_lt = mean_below(mtbs_i, rd_j), mean_below(mtbs_j, rd_i)
    ti_ge, tj_ge = mean_above(mtbs_i, rd_j), mean_above(mtbs_j, rd_i)

    p1, p2 = a_i * a_j, a_i * (1 - a_j)
    p3, p4 = (1 - a_i) * a_j, (1 - a_i) * (1 - a_j)

    # Case 1 (5.3): the paths alternate on H.
    c1 = (rd_j - ti_lt, rd_i - tj_lt)

    def fast_slow(rd_f, rd_s, tf_lt, ts_ge):
        """Case 2 for fast path f and slow path s (5.4)-(5.9): (E[Cex_f], E[Cex_s])."""
        n = (rd_s + ts_ge) / (rd_f + tf_lt)
        if ceiling:
            n = math.ceil(n)
        pr_a = tf_lt / (rd_f + tf_lt)
        pr_b = rd_f / (rd_f + tf_lt)
        cex_f = pr_a * (rd_s - tf_lt / 2) / n + pr_b * (rd_s - tf_lt) / n
        cex_s = pr_b * rd_f / 2
        return cex_f, cex_s

    # Cases 2/3 only enter with positive probability; skip them otherwise so that the
    # degenerate MTBS = 0 inputs never reach a 0/0.
    c2 = fast_slow(rd_i, rd_j, ti_lt, tj_ge) if p2 > 0 else (0.0, 0.0)
    c3j, c3i = fast_slow(rd_j, rd_i, tj_lt, ti_ge) if p3 > 0 else (0.0, 0.0)

    busy_j = rd_j / (rd_j + tj_ge)  # renewal fraction of time P_j holds H (case 4)
    busy_i = rd_i / (rd_i + ti_ge)
    if case4 == "physical":
        c4 = (busy_j * rd_j / 2, busy_i * rd_i / 2)
    else:
        c4 = (busy_j * rd_i / 2, busy_i * rd_j / 2)

    cex_i = p1 * c1[0] + p2 * c2[0] + p3 * c3i + p4 * c4[0]
    cex_j = p1 * c1[1] + p2 * c2[1] + p3 * c3j + p4 * c4[1]
    return cex_i, cex_j


def two_path(
    mtbs_i: float,
    mtbs_j: float,
    rd_i: float,
    rd_j: float,
    case4: str = "physical",
    ceiling: bool = True,
) -> tuple[float, float]:
    """The text's ``f``: ``(f_i, f_j) = (E[Cex_i] + rd_i, E[Cex_j] + rd_j)``, µs (§5.3.1 end)."""
    cex_i, cex_j = external_contention(mtbs_i, mtbs_j, rd_i, rd_j, case4, ceiling)
    return cex_i + rd_i, cex_j + rd_j


# ------------------------------------------------------------------ the m-path model


@dataclass(frozen=True)
class MultipathSolution:
    """Per-path results, top (P_1) -> bottom (P_m); µs."""

    mtbs: tuple[float, ...]
    delays: tuple[float, ...]  # D^{P_j} = L*T_t + sum_i C_{S_i}^{P_j}
    starting: tuple[float, ...]  # C_{S_j}^{P_j} (0 for P_m)
    intermediate: tuple[float, ...]  # sum_{i<j} C_{S_i}^{P_j}
    stage_contention: tuple[tuple[float, ...], ...]  # [j][i-1] = C_{S_i}^{P_j}, i = 1..j
    iterations: int  # iterations after iteration 0
    cycle_period: int = 1  # 1: a fixed point; p > 1: a p-cycle, every field its mean over it
    cycle_spread: float = 0.0  # largest max-min of a path's delay over the cycle (µs)


def _merge(lams: Sequence[float], vals: Sequence[float]) -> float:
    tot = sum(lams)
    return sum(l * v for l, v in zip(lams, vals)) / tot


def solve_multipath(
    mtbs: Sequence[float],
    *,
    L: int = L_FLITS,
    t_flit: float = T_FLIT_US,
    case4: str = "physical",
    ceiling: bool = True,
    tol: float = 1e-9,
    max_iter: int = 10_000,
    max_period: int = 64,
) -> MultipathSolution:
    """Divide and conquer over the stages (§5.4) for paths with MTBS ``mtbs`` (top first):
    iteration 0, then iterations until C(n) repeats (reading 14-16 and the stopping rule of
    the module docstring)."""
    m = len(mtbs)
    if m < 1:
        raise ValueError("need at least one path")
    if any(x < 0 for x in mtbs):
        raise ValueError(f"MTBS must be >= 0, got {list(mtbs)!r}")
    dtr = L * t_flit
    mt = [0.0] + [float(x) for x in mtbs]  # 1-based: mt[j] is mtbs_j
    D, tau = _sweep(mt, dtr, None, None, True, case4, ceiling)
    history = [_contention(D)]  # C(n) of the last max_period+1 iterations, oldest first
    period = 0
    for it in range(1, max_iter + 1):
        D, tau = _sweep(mt, dtr, D, tau, False, case4, ceiling)
        c_now = _contention(D)
        period = _cycle_period(history, c_now, tol, max_period)
        history.append(c_now)
        del history[: -(max_period + 1)]
        if period:
            break
    else:
        raise NoConvergence(f"multipath {list(mtbs)}: C(n) not steady after {max_iter} iterations")
    return _solution(mtbs, dtr, history[-period:], it, period)


def _sweep(mt: list, dtr: float, D_prev, tau_prev, first: bool, case4: str, ceiling: bool):
    """One iteration over the stages S_1 .. S_m (§5.4.1, §5.4.2): ``(D, tau)`` from the
    previous iteration's (``first``: iteration 0, no starting contention)."""
    m = len(mt) - 1
    # D[i][j] for 0 <= i <= j <= m (entries with i > j unused); D[0][j] = Dtr.
    D = [[0.0] * (m + 1) for _ in range(m + 1)]
    tau = [[0.0] * (m + 1) for _ in range(m + 1)]
    for j in range(1, m + 1):
        D[0][j] = dtr
    for i in range(1, m + 1):
        # Step 1 (reading 14): tau of every path through S_i.
        for j in range(i, m + 1):
            if j == i or first:
                tau[i][j] = mt[j]
            else:
                tau[i][j] = mt[j] + max(0.0, D_prev[j][j] - D_prev[i][j])
        comp = list(range(i + 1, m + 1))  # starting competitors of P_i
        if first or not comp:
            lam = {}
        else:
            lam = {j: 1.0 / (tau_prev[i][j] + D_prev[i][j]) for j in comp}

        def reduced(paths):
            """(tau_Q, remaining delay of Q after S_i) for the merged ``paths``."""
            ls = [lam[j] for j in paths]
            d_q_here = _merge(ls, [D_prev[i][j] for j in paths])  # reading 15
            tau_q = max(0.0, 1.0 / sum(ls) - d_q_here)
            rd_q = _merge(ls, [D_prev[i - 1][j] for j in paths])  # §5.4.1-c, n-1
            return tau_q, rd_q

        rd_i = D[i - 1][i]  # reading 16: this iteration's value
        # Starting contention of P_i at S_i (§5.4.1).
        if first or not comp:
            D[i][i] = rd_i
        else:
            tau_q, rd_q = reduced(comp)
            D[i][i] = two_path(mt[i], tau_q, rd_i, rd_q, case4, ceiling)[0]
        # Intermediate contention of each P_j (j > i) at S_i against P_i (§5.4.2).
        for j in comp:
            others = [k for k in comp if k != j]
            if first or not others:
                rd_hat = rd_i
            else:
                tau_q, rd_q = reduced(others)
                rd_hat = two_path(mt[i], tau_q, rd_i, rd_q, case4, ceiling)[0]
            D[i][j] = two_path(mt[i], tau[i][j], rd_hat, D[i - 1][j], case4, ceiling)[1]
    return D, tau


def _contention(D) -> list:
    """C(n): every stage's contention of every path, ``C_{S_i}^{P_j}`` for i <= j, by j then i."""
    m = len(D) - 1
    return [D[i][j] - D[i - 1][j] for j in range(1, m + 1) for i in range(1, j + 1)]


def _cycle_period(history: list, c_now: list, tol: float, max_period: int) -> int:
    """The period p of the cycle ``c_now`` closes (C(n) within ``tol`` of C(n-p)), 0 when
    none does (yet)."""
    for p in range(1, min(len(history), max_period) + 1):
        if max(abs(a - b) for a, b in zip(c_now, history[-p])) <= tol:
            # A "cycle" whose states all agree is a damped oscillation still settling.
            orbit = history[-p + 1 :] + [c_now] if p > 1 else [c_now]
            if p == 1 or max(max(col) - min(col) for col in zip(*orbit)) > 100 * tol:
                return p
            return 0
    return 0


def _solution(mtbs: Sequence[float], dtr: float, orbit: list, iterations: int, period: int) -> MultipathSolution:
    """The per-path results, the means over one cycle ``orbit`` (a single state when period == 1)."""
    m = len(mtbs)
    mean_c = [sum(col) / period for col in zip(*orbit)]
    stage, k = [], 0
    for j in range(1, m + 1):
        stage.append(tuple(mean_c[k : k + j]))
        k += j
    delays_orbit = [
        [dtr + sum(c[j * (j - 1) // 2 : j * (j + 1) // 2]) for j in range(1, m + 1)] for c in orbit
    ]
    spread = max(max(col) - min(col) for col in zip(*delays_orbit))
    return MultipathSolution(
        mtbs=tuple(float(x) for x in mtbs),
        delays=tuple(dtr + sum(s) for s in stage),
        starting=tuple(s[-1] for s in stage),
        intermediate=tuple(sum(s[:-1]) for s in stage),
        stage_contention=tuple(stage),
        iterations=iterations,
        cycle_period=period,
        cycle_spread=spread,
    )


# ---------------------------------------------------------------- the m-n interaction model


@dataclass(frozen=True)
class MNResult:
    """The m-n interaction model (Fig 5.7): delays of P_i and P_j (µs) and their rd inputs."""

    d_i: float | None
    d_j: float | None
    rd_i: float | None
    rd_j: float | None


def mn_interaction(
    m: int,
    n: int,
    mtbs_i: float,
    mtbs_j: float,
    *,
    L: int = L_FLITS,
    t_flit: float = T_FLIT_US,
    case4: str = "physical",
    ceiling: bool = True,
) -> MNResult:
    """P_i, bottom path of an m-layer stair at ``mtbs_i``, meets P_j, bottom of an n-layer
    stair at ``mtbs_j``, at one shared first contention point (§5.3.2).

    A stair of 0 layers means the other path is absent (Fig 5.11's x = 0): no interaction,
    the present path's delay is its own ``rd``, the absent one's fields are ``None``.
    """
    if m < 0 or n < 0:
        raise ValueError("layer counts must be >= 0")
    rd_i = solve_stair(m, mtbs_i, L=L, t_flit=t_flit).dmax[-1] if m else None
    rd_j = solve_stair(n, mtbs_j, L=L, t_flit=t_flit).dmax[-1] if n else None
    if rd_i is None or rd_j is None:
        return MNResult(rd_i, rd_j, rd_i, rd_j)
    d_i, d_j = two_path(mtbs_i, mtbs_j, rd_i, rd_j, case4, ceiling)
    return MNResult(d_i, d_j, rd_i, rd_j)


__all__ = [
    "CASE4_READINGS",
    "MNResult",
    "MultipathSolution",
    "external_contention",
    "mean_above",
    "mean_below",
    "mn_interaction",
    "prob_less",
    "solve_multipath",
    "two_path",
]
