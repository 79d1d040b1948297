"""Dissertation chapter 6, path level (§6.1): Figures 6.2/6.3 (the two 5-path layouts of
Fig 6.1) here, and the stairs that 6.4 (starting competitors) and 6.5 (intermediate
competitors) in :mod:`.ch6_competitors` share.

Every set of competing paths is the stair-layered model (NETWORK.md 2.1): a row of ``m + 1``
nodes, path P_j (1 = top .. m = bottom) entering at position ``m - j``, all paths ending at
the last node (``stair:m@0,0`` on a mesh of one row). The analysis (the figures' dotted lines)
is chapter 5's divide-and-conquer model, :func:`scheduler.network.heterogeneous.solve_multipath`
with its default readings (case 4 "physical", NETWORK.md 8.12; readings 14-16).

Points carry ``method`` = ``simulation`` | ``analysis`` so that both appear as series of one
panel; an analysis point is deterministic (its replications agree exactly). Fig 6.2/6.3's
points carry the ``path`` they report (1..5 or ``mean``) so that one panel shows the five
paths against k as the paper draws them; the five points of one (layout, k, seed) share one
simulation through a per-process cache.
"""
from __future__ import annotations

import functools

from emulator.experiments import register
from emulator.experiments import verdict as V
from emulator.experiments.experiment import Check, Experiment, Panel, fmt
from emulator.experiments.network.common import PAPER, net_point
from scheduler.network.heterogeneous import solve_multipath

L_TT = 25.0  # L * T_t: 500 flits x 0.05 us (§4.2.1)
T_FLIT = 0.05
STAIR_MESH = "mesh:8x1"  # a row: stairs of up to 7 layers

# ------------------------------------------------------------------ shared


def stair_spec(mtbs) -> str:
    """``stair:m@0,0:mtbs=a/b/...`` with the MTBS of P_1 (top) .. P_m (bottom)."""
    return f"stair:{len(mtbs)}@0,0:mtbs=" + "/".join(f"{float(v):g}" for v in mtbs)


@functools.lru_cache(maxsize=256)
def stair_sim(mtbs: tuple, messages: int, seed: int) -> tuple:
    """Simulated (delay, contention) per path, top to bottom, in us (cached: the points of one
    stair and seed share it)."""
    out = net_point({"topology": STAIR_MESH, "jobs": [stair_spec(mtbs)], "messages": messages}, seed)
    return tuple((out[f"delay#{i}"], out[f"contention#{i}"]) for i in range(len(mtbs)))


@functools.lru_cache(maxsize=1024)
def stair_model(mtbs: tuple):
    return solve_multipath(list(mtbs))


def _method(p):
    return "simulation" if p["method"] == "simulation" else "analysis"


# ------------------------------------------------------------------ Figures 6.2 / 6.3

LAYOUTS = {"a": (0, 50, None, 250, 500), "b": (500, 250, None, 50, 0)}  # None = k (P_3)
KS = [0, 25, 50, 75, 100, 150, 200, 250, 300, 350, 400, 450, 500]
KS_QUICK = [0, 250, 500]


def layout_mtbs(layout: str, k: float) -> tuple:
    """MTBS of P_1..P_5 (top to bottom) of Fig 6.1's layout (a) or (b) with P_3 at ``k``."""
    return tuple(float(k) if v is None else float(v) for v in LAYOUTS[layout])


def _five_delays(layout, k, method, messages, seed):
    mt = layout_mtbs(layout, k)
    if method == "analysis":
        return list(stair_model(mt).delays)
    return [x for x, _ in stair_sim(mt, messages, seed)]


def five_path_point(params: dict, seed: int) -> dict:
    """``layout`` "a", "b" or "a-b" (the difference of the two, path by path), ``path`` 1..5 or
    "mean"."""
    args = (params["k"], params["method"], params["messages"], seed)
    if params["layout"] == "a-b":
        d = [x - y for x, y in zip(_five_delays("a", *args), _five_delays("b", *args))]
    else:
        d = _five_delays(params["layout"], *args)
    p = params["path"]
    return {"delay": sum(d) / len(d) if p == "mean" else d[p - 1]}


def _grid_62(quick):
    msgs = 300 if quick else 2000
    return [{"layout": lay, "k": k, "path": p, "method": m, "messages": msgs}
            for lay in ("a", "b", "a-b") for m in ("simulation", "analysis") for k in (KS_QUICK if quick else KS)
            for p in (1, 2, 3, 4, 5, "mean")]


def _check_62(res):
    c = Check()
    ks = res.values("k", layout="a", path=1, method="simulation")
    for method in ("simulation", "analysis"):
        outs, bad, worst = [], [], None
        for p in range(1, 6):
            for k in ks:
                a = res.est("delay", layout="a", k=k, path=p, method=method)
                b = res.est("delay", layout="b", k=k, path=p, method=method)
                outs.append(V.less(b, a))
                if worst is None or (a - b).mean < worst[0].mean:
                    worst = (a - b, p, k, a, b)
                if outs[-1] != V.HOLDS:
                    bad.append(f"P{p} at k={k}: {b} vs {a} ({outs[-1]})")
        c(V.every(outs), f"{method}: every path of layout (b) has a lower delay than the same path (same "
          f"position) of layout (a), for P1..P5 and every k in {ks} ({5 * len(ks)} comparisons; "
          f"smallest margin (a)-(b) = {worst[0]} us, P{worst[1]} at k={worst[2]}: "
          f"{worst[3]} vs {worst[4]})" + (f"; not beyond the CIs: {'; '.join(bad[:6])}" if bad else ""))
    pairs = [(k, res.est("delay", layout="a", k=k, path="mean", method="simulation"),
              res.est("delay", layout="b", k=k, path="mean", method="simulation")) for k in ks]
    c(V.every(V.less(b, a) for _, a, b in pairs),
      "simulation: the mean delay of the five paths is lower for layout (b) at every k ("
      + "; ".join(f"k={k}: {b} vs {a}" for k, a, b in pairs) + ")")
    return c


def _table_62(res):
    ks = res.values("k", layout="a", path=1, method="simulation")
    lines = ["**Analysis vs simulation** (relative difference (analysis - simulation) / simulation "
             "over every path and k)", "", "| layout | mean | largest over-estimate | largest under-estimate |",
             "|---|---|---|---|"]
    for lay in "ab":
        errs = []
        for p in range(1, 6):
            for k in ks:
                s = res.mean("delay", layout=lay, k=k, path=p, method="simulation")
                a = res.mean("delay", layout=lay, k=k, path=p, method="analysis")
                errs.append(((a - s) / s, p, k))
        mx, mn = max(errs), min(errs)
        lines.append(f"| ({lay}) | {fmt(100 * sum(e for e, _, _ in errs) / len(errs), 3)}% | "
                     f"{fmt(100 * mx[0], 3)}% (P{mx[1]}, k={mx[2]}) | {fmt(100 * mn[0], 3)}% (P{mn[1]}, k={mn[2]}) |")
    lines += ["", "**The same MTBS in the two layouts** (simulation, k = 250: the comparison by rate "
              "instead of by position; the text compares positions P1..P5)", "",
              "| path's MTBS (us) | position in (a) | delay in (a) | position in (b) | delay in (b) |",
              "|---|---|---|---|---|"]
    k = 250 if 250 in ks else ks[len(ks) // 2]
    for v in (0, 50, 250, 500):
        pa = LAYOUTS["a"].index(v) + 1
        pb = LAYOUTS["b"].index(v) + 1
        da = res.mean("delay", layout="a", k=k, path=pa, method="simulation")
        db = res.mean("delay", layout="b", k=k, path=pb, method="simulation")
        lines.append(f"| {v} | P{pa} | {fmt(da)} | P{pb} | {fmt(db)} |")
    lit = {(lay, k): solve_multipath(list(layout_mtbs(lay, k)), case4="literal").delays for lay in "ab" for k in ks}
    bad = [(i + 1, k) for k in ks for i in range(5) if not lit["b", k][i] < lit["a", k][i]]
    gap = max(abs(x - y) for (lay, k), d in lit.items() for x, y in zip(d, stair_model(layout_mtbs(lay, k)).delays))
    verdict = "yes" if not bad else f"no, not at {bad[:6]}"
    lines += ["", "With the literal case 4 of (5.10)/(5.11) (NETWORK.md 8.12) instead of the physical one, the "
              f"analysis puts layout (b) below (a) for every path and k: {verdict} (largest difference "
              f"between the two readings {fmt(gap)} us)."]
    return "\n".join(lines)


def _path_label(layout):
    def label(p):
        i = p["path"]
        if layout == "a-b":
            return f"P{i}"
        v = LAYOUTS[layout][i - 1]
        return f"P{i} (MTBS {'k' if v is None else v})"
    return label


def _five_panel(title, layout, method):
    return Panel(title, "delay", x="k", where={"layout": layout, "method": method, "path": lambda v: v != "mean"},
                 series=_path_label(layout),
                 ylabel="delay difference (us)" if layout == "a-b" else "mean communication delay (us)",
                 xlabel="MTBS of P3, k (us)")


register(Experiment(
    "net-fig6-2", PAPER, "Figures 6.2 and 6.3",
    "5 competing paths: delay of each path vs the MTBS of P3, layouts (a) and (b) of Fig 6.1",
    "Five stair-layered competing paths with MTBS (top to bottom) 0, 50, k, 250, 500 (layout (a)) "
    "or 500, 250, k, 50, 0 (layout (b)), k = 0..500: 'the communication delays for all paths of "
    "layout (b) are smaller than that of layout (a)'; the overall delay is reduced by placing the "
    "high-rate paths low in the stair, where they meet many intermediate contention points (§6.1, "
    "§6.1.2). Dotted lines are the chapter-5 analysis, solid lines simulation.",
    five_path_point, _grid_62, ("delay",),
    [_five_panel("Fig 6.2: layout (a) 0, 50, k, 250, 500, simulation", "a", "simulation"),
     _five_panel("Fig 6.2: layout (a), analysis (dotted in the text)", "a", "analysis"),
     Panel("mean of the five paths, (a) vs (b)", "delay", x="k",
           where={"path": "mean", "layout": lambda v: v in ("a", "b")},
           series=lambda p: f"layout ({p['layout']}) {_method(p)}",
           ylabel="mean communication delay (us)", xlabel="MTBS of P3, k (us)"),
     _five_panel("Fig 6.3: layout (b) 500, 250, k, 50, 0, simulation", "b", "simulation"),
     _five_panel("Fig 6.3: layout (b), analysis (dotted in the text)", "b", "analysis"),
     _five_panel("(a) minus (b), path by path, simulation (> 0: (b) lower)", "a-b", "simulation")],
    _check_62,
    settings=lambda quick: (
        "Stair-layered model of 5 paths on a row of 6 nodes (NETWORK.md 2.1), XY wormhole, L = 500 "
        "flits, T_t = 0.05 us, 1-flit buffers, FCFS, exponential think time with mean MTBS, at most "
        f"one message per path; {'300' if quick else '2,000'} measured messages per path after a "
        f"warm-up of a tenth. k = {KS_QUICK if quick else KS} us. Analysis: chapter 5's m-path "
        "model (solve_multipath, case 4 'physical'). Path P_i is the i-th from the top in both "
        "layouts."),
    notes=(
        "Series 'analysis' are the text's dotted lines, 'simulation' its solid lines. The claim is "
        "read by position: P_i of (b) against P_i of (a), as the figures plot P1..P5 against k. "
        "Read by rate it is a different comparison: the path with MTBS 0 sits at P1 in (a) and at "
        "P5 in (b); the second table above follows each rate across the layouts. The *mean* over "
        "the five paths, which holds the same set of rates, compares the layouts under either "
        "reading. Paths enter "
        "one by one along a row; P1 (top) enters last and has only starting contention, P5 "
        "(bottom) enters first and has only intermediate contention."),
    table=_table_62, min_reps=3, max_reps=12, quick_reps=2,
    layout=(2, 3),
))

__all__ = ["LAYOUTS", "STAIR_MESH", "layout_mtbs", "stair_model", "stair_sim", "stair_spec"]
