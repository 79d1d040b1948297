"""Point functions shared by the experiments: ``(params, seed) -> {metric: float}``.

They are pure (the result depends only on the arguments) and top level, so that the runner's
process pool pickles them by reference. ``params`` is plain JSON (it is also the point's key
in ``runs.jsonl`` and its row in ``results.csv``).
"""
from __future__ import annotations

import functools
import math
import os
from pathlib import Path

from emulator.sim import metrics, swf
from emulator.sim.simulator import Simulation
from emulator.sim.workloads import Workload, fixed_jobs
from scheduler.stack import StackConfig, build
from scheduler.topology import parse_topology

BASIC = ("mean_queueing_delay", "utilization", "throughput", "power", "mean_turnaround",
         "external_fragmentation", "ls_ratio", "measured_load", "waiting_at_end", "completed")


def workload(params: dict, seed: int) -> Workload:
    """The Poisson workload of a point; ``iatm`` (mean inter-arrival time, dissertation 8.2)
    stands in for ``load`` when given."""
    kw = dict(size_dist=params.get("size", "uniform"), service_dist=params.get("service", "uniform"),
              service_mean=params.get("service_mean", 5.0), demand=params.get("demand", "dependent"),
              seed=seed, size_params=params.get("size_params"), service_params=params.get("service_params"))
    load = params.get("load")
    if params.get("iatm") is not None:
        unit = Workload.build(params["topology"], 1.0, **kw)
        load = 1.0 / (params["iatm"] * unit.rate)
    return Workload.build(params["topology"], load, **kw)


def _discipline(params: dict):
    config = StackConfig(params["topology"], params.get("allocator", "buddy"), params["scheduler"],
                         reduction=params.get("reduction"), params=dict(params.get("dparams") or {}))
    return build(config).policy


def sim_point(params: dict, seed: int) -> dict:
    """One synthetic run. Stops at ``until`` (observation time) or after ``completions``
    with ``warmup`` discarded. ``samples``: also M of the jobs allocated up to each of that
    many equally spaced times (``M@t``). ``per_size``: mean turnaround by the size the job
    asked for (``tat@p``, p processors), measured on the counted completions."""
    wl = workload(params, seed)
    until = params.get("until")
    per_size = bool(params.get("per_size"))
    sim = Simulation(_discipline(params), wl.jobs(until=until) if until else wl.jobs(),
                     until=until, completions=params.get("completions"), warmup=params.get("warmup", 0),
                     samples=params.get("samples") or 0, keep_records=per_size)
    res = sim.run()
    m = res.metrics
    out = {k: float(m[k]) for k in BASIC}
    for t, v in m.get("delay_over_time") or []:
        out[f"M@{round(t)}"] = float(v)
    if per_size:
        for p, tat in metrics.turnaround_by_asked(res.records).items():
            out[f"tat@{p}"] = tat
    return out


def joblist_point(params: dict, seed: int) -> dict:
    """Lazy Figure 9: a fixed list of ``jobs`` jobs arriving at ``load``, run to the end;
    ``completion_time`` is the last departure, ``last_arrival`` the last submit time."""
    jobs = fixed_jobs(params["topology"], params["jobs"], params.get("size", "uniform"),
                      params.get("service", "uniform"), params.get("service_mean", 5.0),
                      params.get("demand", "dependent"), seed, load=params["load"])
    res = Simulation(_discipline(params), jobs, keep_records=True).run()
    # the last departure: a run to completion ends there (the engine takes no timer with
    # nothing in the system)
    return {"completion_time": max(r.end for r in res.records), "last_arrival": float(jobs[-1].submit),
            "mean_queueing_delay": float(res.metrics["mean_queueing_delay"])}


@functools.lru_cache(maxsize=4)
def _trace(path: str, topology: str, time_unit: float):
    return swf.read_jobs(path, topology, time_unit=time_unit)


def trace_path(name: str) -> Path:
    """A log of ``../shared/traces`` relative to the repository (the traces are not copied
    into it), or of ``$MCEMU_TRACES`` when set."""
    env = os.environ.get("MCEMU_TRACES")
    base = Path(env) if env else Path(__file__).resolve().parents[2].parent / "shared" / "traces"
    return base / name


def trace_point(params: dict, seed: int) -> dict:
    """Replay the first ``limit`` jobs (all when None) of an SWF log; deterministic, the seed
    is unused. Adds mean wait per job size (``wait@p``) and the mean run time."""
    jobs = _trace(str(trace_path(params["trace"])), params["topology"], params.get("time_unit", 1.0))
    limit = params.get("limit")
    jobs = list(jobs[:limit] if limit else jobs)
    res = Simulation(_discipline(params), jobs, keep_records=True).run()
    m = res.metrics
    out = {k: float(m[k]) for k in BASIC}
    out["mean_wait"] = out["mean_queueing_delay"]
    out["mean_runtime"] = sum(j.runtime for j in jobs) / len(jobs)
    # over [first submit, last departure]: a log does not start at time 0, the simulator's
    # window does
    first = min(j.submit for j in jobs)
    end = max(r.end for r in res.records)
    out["makespan"] = end - first
    out["utilization"] = metrics.utilization(metrics.busy_node_time(res.records),
                                             parse_topology(params["topology"]).size, end - first)
    for size, v in m["per_size"].items():
        out[f"wait@{size}"] = float(v["mean_wait"])
    return out


def finite(v) -> bool:
    return isinstance(v, (int, float)) and math.isfinite(v)
