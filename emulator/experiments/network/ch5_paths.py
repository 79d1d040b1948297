"""Dissertation Figure 5.15: the heterogeneous 5-path contention model (``net-fig5-15``).

Five stair-layered paths (NETWORK.md 2.1; path 1 on top, entering last, with four starting
competitors; path 5 at the bottom with four intermediate contention points), MTBS 0, 50, k,
250, 500 µs from path 1 to path 5, k from 0 to 500 (§5.4.3; the same as layout (a) of Fig 6.1).
Simulation: the wormhole simulator; analysis: the divide-and-conquer model of §5.4
(:func:`scheduler.network.heterogeneous.solve_multipath`).
"""
from __future__ import annotations

from emulator.experiments import register
from emulator.experiments import verdict as V
from emulator.experiments.experiment import Check, Experiment, Panel, fmt
from emulator.experiments.network.ch4_sim import MODEL, SIM, messages_for
from emulator.experiments.network.common import AGREE, PAPER, agrees, net_point
from scheduler.network.heterogeneous import solve_multipath
from scheduler.network.homogeneous import solve_stair

OTHERS = (0, 50, None, 250, 500)  # path 3's MTBS is the swept k
KS, KS_QUICK = [0, 25, 50, 100, 150, 200, 250, 300, 400, 500], [0, 500]


def five_mtbs(k: float) -> list[float]:
    return [float(k) if v is None else float(v) for v in OTHERS]


def five_params(source: str, k: float, quick: bool) -> dict:
    p = {"source": source, "k": k}
    if source == SIM:
        mt = five_mtbs(k)
        d = solve_stair(5, 0).dmax  # rates at their highest: a conservative run length
        msgs, w = messages_for([1.0 / (x + y) for x, y in zip(mt, d)], quick)
        p.update(topology="mesh:6x1", jobs=["stair:5@0,0:mtbs=" + "/".join(f"{x:g}" for x in mt)],
                 messages=msgs, warmup=w)
    return p


def five_point(params: dict, seed: int) -> dict:
    """Mean delay (µs) of each path, ``d1`` (top) .. ``d5`` (bottom), and their mean."""
    if params["source"] == MODEL:
        d = list(solve_multipath(five_mtbs(params["k"])).delays)
    else:
        r = net_point(params, seed)
        d = [r[f"delay#{u}"] for u in range(5)]
    return {f"d{u + 1}": v for u, v in enumerate(d)} | {"d_mean": sum(d) / 5}


UNAFFECTED = 0.10


def _check(res):
    c = Check()
    ks = res.values("k")
    s = {(u, k): res.est(f"d{u}", source=SIM, k=k) for u in range(1, 6) for k in ks}
    mod = {(u, k): res.est(f"d{u}", source=MODEL, k=k) for u in range(1, 6) for k in ks}
    agrees(c, [(f"path {u}, k = {k}", s[u, k], mod[u, k]) for u in range(1, 6) for k in ks], "every path and k")
    for name, v in (("simulation", s), ("analysis", mod)):
        out = {u: V.every(V.not_more(v[u, b], v[u, a]) for a, b in zip(ks, ks[1:])) for u in range(1, 6)}
        bad = [u for u in out if out[u] != V.HOLDS]
        c(V.every(out.values()), f"{name}: as path 3's MTBS decreases, every path's mean delay increases (none "
          "rises with k)" + (f"; not beyond the CIs for path(s) {bad}" if bad else ""))
    for name, v in (("simulation", s), ("analysis", mod)):
        rise = {u: v[u, ks[0]] - v[u, ks[-1]] for u in range(1, 6)}  # µs, from k = ks[-1] to ks[0]
        rel = {u: rise[u].mean / v[u, ks[-1]].mean for u in range(1, 6)}
        order = [rise[u] for u in (1, 2, 4, 5)]
        c(V.every(V.less(a, b) for a, b in zip(order, order[1:])),
          f"{name}: paths with more intermediate contention points are more sensitive to the load (the rise "
          f"of the delay from k = {ks[-1]} to k = {ks[0]} must grow along paths 1, 2, 4, 5, with 0, 1, 3, 4 "
          "intermediate points: " + ", ".join(f"path {u}: +{rise[u]} µs ({fmt(100 * rel[u], 3)}%)" for u in range(1, 6)) + ")")
        # "Path 1 is relatively unaffected by the network load": the text's absolute reading (its
        # own delay barely moves) is scored; "less than the others" is the sensitivity row
        d1 = (v[1, ks[0]], v[1, ks[-1]])
        c(V.not_more(d1[0] - d1[1], UNAFFECTED * d1[1].mean),
          f"{name}: path 1 is relatively unaffected by the load: its delay rises by at most {UNAFFECTED:.0%} from "
          f"k = {ks[-1]} to k = {ks[0]} ({d1[1]} -> {d1[0]} µs, +{fmt(100 * rel[1], 3)}%)",
          tol=f"{UNAFFECTED:.0%} of its delay", why="'unaffected' has no number in the text; 10% is the least "
          "change visible on the figure's linear axis")
        others = [rise[u] for u in range(2, 6)]
        c.sensitivity(V.every(V.not_more(rise[1], 0.5 * o) for o in others),
                      f"{name}, the comparative reading: path 1's rise, +{rise[1]} µs, is at most half of every "
                      f"other path's, the smallest being +{min(others, key=lambda e: e.mean)} µs",
                      tol="half the others' rise", why="'relatively' read as against the other paths")
    return c


register(Experiment(
    "net-fig5-15", PAPER, "Figure 5.15", "heterogeneous 5-path model: delay of each path vs MTBS of path 3",
    "The analysis agrees with the simulation (§5.4.3: 'results that show agreement between the "
    "analysis and a simulation'); 'As the MTBS decreases, the mean communication delay increases'; "
    "'the paths that have the greater number of intermediate contention points are more sensitive "
    "to the network load than the paths that have fewer intermediate contention points. Path 1 is "
    "relatively unaffected by the network load.'",
    five_point, lambda q: [five_params(src, k, q) for src in (SIM, MODEL) for k in (KS_QUICK if q else KS)],
    ("d1", "d2", "d3", "d4", "d5", "d_mean"),
    [Panel(f"path {u} ({u - 1} intermediate, {5 - u} starting competitors)", f"d{u}", x="k",
           series=lambda p: "sim" if p["source"] == SIM else "model", ylabel="mean communication delay (µs)",
           xlabel="MTBS of path 3 (µs)") for u in range(1, 6)]
    + [Panel("mean over the 5 paths", "d_mean", x="k", series=lambda p: "sim" if p["source"] == SIM else "model",
             ylabel="mean communication delay (µs)", xlabel="MTBS of path 3 (µs)")],
    _check, stop_on=("d1", "d2", "d3", "d4", "d5"), layout=(2, 3),
    settings=lambda q: ("Wormhole mesh (a row of 6 nodes), XY routing, L = 500 flits, T_t = 0.05 µs, 1-flit "
                        "buffers, FCFS, non-blocking sink; each path loops send -> delivery -> Exp(MTBS). "
                        "MTBS of paths 1..5 = 0, 50, k, 250, 500 µs; k in "
                        f"{KS_QUICK if q else KS}. Run length: messages per path chosen so that a run "
                        "simulates about 120,000 messages (quick 5,000), the first max(2, n/10) discarded."),
    notes=("Readings of §5.4 (NETWORK.md 8.12-8.16), as implemented in "
           "`scheduler/network/heterogeneous.py`: case 4 physical (a waiter waits half the other "
           "path's holding time); tau of a competitor at S_i counts its contention upstream of S_i "
           "only; the undefined D(n-1)_{S_i,d}^Q is the lambda-weighted mean of the competitors', "
           "tau_Q clamped at 0; P_i's remaining delay after S_i uses this iteration's value; the "
           "stair geometry of NETWORK.md 2.1. Path 3's own MTBS is the swept load, so the sensitivity "
           f"ordering is tested on paths 1, 2, 4, 5. 'Agrees' means within {AGREE:.0%} of the simulated "
           "mean delay. Sensitivity is the rise of a path's delay, in µs, from k = 500 to k = 0 (what the "
           "figure's linear axes show; the relative rise is given too: in relative terms paths 4 and 5 "
           "tie in the simulation); 'relatively unaffected' is scored in the text's absolute reading, path "
           "1's own delay rising by at most 10% (issue 29: before, the comparative reading, path 1's rise at "
           "most half of every other path's, was scored because the absolute one fails; it is now a "
           "sensitivity row). Every "
           "series is drawn solid with markers (the text: solid = simulation, dotted = analysis). "
           "All sub-claims are computed from results.csv.")))
