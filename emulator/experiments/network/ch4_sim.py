"""What the chapter-4 and chapter-5 figure experiments share: the run length of a simulation
point, the stair point (simulation with the starting/intermediate split, and the chapter-4
model), the transpose point, and the labels.

**Run length.** The simulation runs until *every* path has delivered ``messages`` measured
messages, so the slowest path sets the length: in a 13-layer stair at MTBS 0 the top path
sends 2,048 messages for each one of the bottom path. We therefore choose ``messages`` per
point from the chapter-4 model's rates ``1/(MTBS + Dmax)`` so that the run simulates about
``total`` messages in all (at least ``lo``, at most ``hi`` per path), and discard
``max(2, messages // 10)`` per path as warm-up. The estimate only sets the run length; it
never enters a result. Replications then narrow the interval (the runner's rule).

**Starting contention in the simulation** (Fig 4.4). Each delivery carries when its header
acquired its first channel (``Delivery.first``); the wait from injection to then is the
*starting contention* (§3.2: the contention at "the first communication channel that a
message faces"), the rest of the message's contention is *intermediate*; the simulator reports
the mean per path (``mean_starting_contention_us``). A one-hop path has only its starting
channel, so all its contention is starting.
"""
from __future__ import annotations

from emulator.experiments.network.common import build_jobs, net_point
from emulator.sim.network import simulate_network
from scheduler.network.homogeneous import solve_stair, transpose_interpolation, transpose_row_stairs
from scheduler.network.wormhole import Wormhole

LT = 25.0  # L * T_t, µs (500 flits x 0.05 µs)
SIM, MODEL = "simulation", "analysis"


def messages_for(rates, quick: bool, total: int | None = None) -> tuple[int, int]:
    """(messages, warm-up) per path so that the run simulates about ``total`` messages."""
    total = total or (5_000 if quick else 120_000)
    lo, hi = (6, 300) if quick else (20, 4000)
    r = [x for x in rates if x > 0]
    n = int(max(lo, min(hi, total * min(r) / sum(r)))) if r else hi
    return n, max(2, n // 10)


def stair_rates(lv: int, mtbs: float) -> list[float]:
    return [1.0 / (mtbs + d) for d in solve_stair(lv, mtbs).dmax]


def run_probed(params: dict, seed: int) -> tuple[dict, list[float]]:
    """``simulate_network`` as net_point runs it; returns the document and each path's mean
    starting contention (µs) over its measured messages."""
    net = Wormhole(params["topology"])
    doc = simulate_network(net, build_jobs(params), messages=params["messages"],
                           warmup=params.get("warmup"), seed=seed)
    return doc, [p["mean_starting_contention_us"] for p in doc["paths"]]


# ------------------------------------------------------------------ the stair (Figs 4.3-4.5)


def stair_params(source: str, lv: int, mtbs: float, quick: bool) -> dict:
    p = {"source": source, "lv": lv, "mtbs": mtbs}
    if source == SIM:
        n, w = messages_for(stair_rates(lv, mtbs), quick)
        p.update(topology=f"mesh:{lv + 1}x1", jobs=[f"stair:{lv}@0,0:mtbs={mtbs:g}"], messages=n, warmup=w)
    return p


def _stair_metrics(delay, cs, ci) -> dict:
    lv = len(delay)
    out = {"ci_bottom": ci[-1], "ci_avg": sum(ci) / lv, "cs_avg": sum(cs) / lv,
           "c_avg": (sum(ci) + sum(cs)) / lv, "d_bottom": delay[-1], "d_mean": sum(delay) / lv}
    for u in range(lv):
        out[f"d#{u}"], out[f"cs#{u}"], out[f"ci#{u}"] = delay[u], cs[u], ci[u]
    return out


def stair_point(params: dict, seed: int) -> dict:
    """One lv-layer stair at one MTBS (paths top -> bottom). ``source`` "simulation": the
    wormhole simulation, contention split at the first channel; "analysis": eqs (4.5)/(4.9)
    solved (:func:`scheduler.network.homogeneous.solve_stair`): Cmax_I, Cmax_S, Dmax.
    Metrics (µs): ``ci_bottom`` (the bottom path's intermediate contention), ``ci_avg``,
    ``cs_avg``, ``c_avg`` (averages over the paths, (4.11) for c), ``d_bottom``, ``d_mean``,
    and per path ``d#u``, ``cs#u``, ``ci#u``."""
    if params["source"] == MODEL:
        s = solve_stair(params["lv"], params["mtbs"])
        return _stair_metrics(list(s.dmax), list(s.cmax_s), list(s.cmax_i))
    doc, start = run_probed(params, seed)
    paths = doc["paths"]
    cs = start
    ci = [p["mean_contention_us"] - s for p, s in zip(paths, start)]
    return _stair_metrics([p["mean_delay_us"] for p in paths], cs, ci)


# ------------------------------------------------------------------ the transpose (Fig 4.7)

TRANSPOSE_SOURCES = {SIM: "simulation", "interpolation": "eq 4.14 (interpolation)",
                     "row-stairs": "row stairs [ours]"}


def transpose_rates(n: int, mtbs: float) -> list[float]:
    """Model rates of the n x n transpose's paths: path (i,j) -> (j,i) is path u of row i's
    stair (right-directed, i layers, u = i-1-j, if j < i; left-directed, n-1-i layers,
    u = j-i-1, if j > i)."""
    d = {k: solve_stair(k, mtbs).dmax for k in range(1, n)}
    out = []
    for i in range(n):
        for j in range(n):
            if j < i:
                out.append(1.0 / (mtbs + d[i][i - 1 - j]))
            elif j > i:
                out.append(1.0 / (mtbs + d[n - 1 - i][j - i - 1]))
    return out


def transpose_params(source: str, n: int, mtbs: float, quick: bool) -> dict:
    p = {"source": source, "n": n, "mtbs": mtbs}
    if source == SIM:
        msgs, w = messages_for(transpose_rates(n, mtbs), quick, total=(5_000 if quick else 150_000))
        p.update(topology=f"mesh:{n}x{n}", jobs=[f"transpose:{n}x{n}@0,0:mtbs={mtbs:g}:name=t"],
                 messages=msgs, warmup=w)
    return p


def transpose_point(params: dict, seed: int) -> dict:
    """Mean contention delay (µs) over the n(n-1) paths of an n x n transpose (``c_mean``):
    simulated (net_point), by eq (4.14) generalised (interpolation between odd stairs), or by
    the exact row-stair decomposition (ours)."""
    src = params["source"]
    if src == "interpolation":
        return {"c_mean": transpose_interpolation(params["n"], params["mtbs"])}
    if src == "row-stairs":
        return {"c_mean": transpose_row_stairs(params["n"], params["mtbs"])}
    r = net_point(params, seed)
    return {"c_mean": r["contention@t"], "d_mean": r["delay@t"]}


__all__ = ["LT", "MODEL", "SIM", "messages_for", "run_probed", "stair_params", "stair_point",
           "stair_rates", "transpose_params", "transpose_point", "transpose_rates"]
