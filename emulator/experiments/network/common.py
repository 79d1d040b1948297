"""What the network experiments share: the simulation point and the settings text.

``net_point(params, seed)`` runs placed jobs' steady traffic (``mcemu net simulate``'s
driver) and flattens the document into metrics: ``delay@JOB`` / ``contention@JOB`` (mean over
the job's paths), ``delay#I`` / ``contention#I`` / ``p95#I`` / ``starting#I`` (starting contention; path I in the order of the jobs
and their patterns), ``mean_delay`` (over all paths), all in microseconds. ``params``:
``topology``, ``jobs`` (job specs ``PATTERN:SHAPE@PLACE:...`` or job-file objects),
``messages``, optional ``warmup``, ``length``, ``flit_time``.
"""
from __future__ import annotations

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


def analysis_dotted(label: str) -> str:
    """The dissertation's convention: simulation solid, analysis dotted (chapters 4-6)."""
    return ":" if any(w in label for w in ("model", "analysis", "eq 4.14", "row stairs")) else "-"


__all__ = ["PAPER", "analysis_dotted", "build_jobs", "net_point"]
