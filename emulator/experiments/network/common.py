"""What the network experiments share: the simulation point and the settings text.

``net_point(params, seed)`` runs placed jobs' steady traffic (``mcemu net simulate``'s
driver) and flattens the document into metrics: ``delay@JOB`` / ``contention@JOB`` (mean over
the job's paths), ``delay#I`` / ``contention#I`` / ``p95#I`` / ``starting#I`` (starting contention; path I in the order of the jobs
and their patterns), ``mean_delay`` (over all paths), all in microseconds. ``params``:
``topology``, ``jobs`` (job specs ``PATTERN:SHAPE@PLACE:...`` or job-file objects),
``messages``, optional ``warmup``, ``length``, ``flit_time``.
"""
from __future__ import annotations

from emulator.experiments import verdict as V
from emulator.experiments.experiment import fmt
from emulator.sim.network import simulate_network
from scheduler.network.layout import job_from_dict, parse_job
from scheduler.network.wormhole import Wormhole

PAPER = "Mesh processor management dissertation"


def build_jobs(params: dict) -> list:
    topo = params["topology"]
    return [job_from_dict(j, topo, i) if isinstance(j, dict) else parse_job(j, topo, i)
            for i, j in enumerate(params["jobs"])]


def net_point(params: dict, seed: int) -> dict:
    net = Wormhole(params["topology"], flit_time=params.get("flit_time", 0.05),
                   length=params.get("length", 500))
    doc = simulate_network(net, build_jobs(params), messages=params["messages"],
                           warmup=params.get("warmup"), seed=seed)
    out = {}
    for j in doc["jobs"]:
        out[f"delay@{j['name']}"] = j["mean_delay_us"]
        out[f"contention@{j['name']}"] = j["mean_contention_us"]
    for i, p in enumerate(doc["paths"]):
        out[f"delay#{i}"] = p["mean_delay_us"]
        out[f"contention#{i}"] = p["mean_contention_us"]
        out[f"p95#{i}"] = p["p95_delay_us"]
        out[f"starting#{i}"] = p["mean_starting_contention_us"]
    out["mean_delay"] = sum(p["mean_delay_us"] for p in doc["paths"]) / len(doc["paths"])
    return out


AGREE = 0.15
AGREE_WHY = ("'agrees' has no number in the text; 15% is the scatter between the analysis and the "
             "simulation in the text's own figures of chapter 5")


def agrees(c, rows, what: str) -> None:
    """One sub-claim: at every row (label, simulated estimate, analysis estimate) the analysis is
    within AGREE of the simulated mean, beyond the simulation's CI (the analysis is exact)."""
    rows = list(rows)
    out = [V.close(m, s, AGREE) for _, s, m in rows]
    err = [abs(m.mean - s.mean) / abs(s.mean) if s.mean else float("inf") for _, s, m in rows]
    w = max(range(len(rows)), key=err.__getitem__)
    bad = [rows[i][0] for i, o in enumerate(out) if o != V.HOLDS]
    c(V.every(out), f"{what}: the analysis agrees with the simulation at every point (largest error "
      f"{fmt(100 * err[w], 3)}% at {rows[w][0]}: sim {rows[w][1]}, model {rows[w][2]}"
      + (f"; not beyond the CI at {', '.join(map(str, bad[:8]))}" if bad else "") + ")",
      tol=f"{AGREE:.0%} of the simulated mean", why=AGREE_WHY)


def analysis_dotted(label: str) -> str:
    """The dissertation's convention: simulation solid, analysis dotted (chapters 4-6)."""
    return ":" if any(w in label for w in ("model", "analysis", "eq 4.14", "row stairs")) else "-"


__all__ = ["AGREE", "PAPER", "agrees", "analysis_dotted", "build_jobs", "net_point"]
