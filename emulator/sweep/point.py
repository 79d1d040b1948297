"""One point of a user's sweep, ``sweep_point(params, seed) -> {metric: float}`` (top level, so
a process pool or a Dask worker unpickles it by reference), and :func:`check`, which builds
every stack and workload of a sweep once before any run, so an unknown policy or a bad value
is an error before the first replication starts.

A point is a discipline run (emulator.experiments._points.sim_point: the same run as the
reproductions'), a gang run (emulator.sim.gang), or the replay of a trace (optionally with
its arrivals scaled to a load).
"""
from __future__ import annotations

import dataclasses
import math

from emulator.experiments import _points
from emulator.experiments.stats import point_key
from emulator.sim import metrics
from emulator.sim.gang import run_gang
from emulator.sim.simulator import Simulation
from emulator.sim.workloads import Workload
from emulator.sweep.grid import GANG_METRICS, Sweep, SweepError
from scheduler.stack import StackConfig, build
from scheduler.topology import parse_topology


def sweep_point(params: dict, seed: int) -> dict:
    if params.get("gang"):
        return gang_point(params, seed)
    if params.get("trace"):
        return trace_point(params, seed)
    return _points.sim_point(params, seed)


def gang_point(params: dict, seed: int) -> dict:
    """A gang run of the jobs submitted before ``until`` (or the first ``completions`` jobs),
    each run to completion."""
    wl = _points.workload(params, seed)
    jobs = list(wl.jobs(params.get("completions"), params.get("until")))
    run = run_gang(params["gang"], params["topology"], jobs, allocator=params["allocator"],
                   policy_params=dict(params.get("dparams") or {}))
    m = run.metrics
    return {k: float(m[k]) if isinstance(m.get(k), (int, float)) else math.nan for k in GANG_METRICS}


def scaled_jobs(jobs: list, topology, load: float) -> list:
    """The trace's jobs with submit times scaled about the first one so that the offered load,
    processor-time asked / (machine size x span of the submits), is ``load``."""
    if len(jobs) < 2:
        return jobs
    topo = parse_topology(topology)
    first, last = jobs[0].submit, max(j.submit for j in jobs)
    if last <= first:
        return jobs
    work = sum(topo.normalize(j.request).processors_needed * j.runtime for j in jobs)
    factor = (work / (topo.size * (last - first))) / load
    return [dataclasses.replace(j, submit=first + (j.submit - first) * factor) for j in jobs]


def trace_point(params: dict, seed: int) -> dict:
    """The replay of an SWF log (the reproductions' trace_point), its arrivals scaled to
    ``load`` when given; deterministic, the seed is unused."""
    if params.get("load") is None:
        return _points.trace_point(params, seed)
    jobs = list(_points._trace(params["trace"], params["topology"], params.get("time_unit", 1.0)))
    jobs = scaled_jobs(jobs[:params["limit"]] if params.get("limit") else jobs, params["topology"], params["load"])
    res = Simulation(_points._discipline(params), jobs, keep_records=True).run()
    out = {k: float(res.metrics[k]) for k in _points.BASIC}
    out["mean_wait"] = out["mean_queueing_delay"]
    out["mean_runtime"] = sum(j.runtime for j in jobs) / len(jobs)
    first, end = min(j.submit for j in jobs), max(r.end for r in res.records)
    out["makespan"] = end - first
    out["utilization"] = metrics.utilization(metrics.busy_node_time(res.records),
                                             parse_topology(params["topology"]).size, end - first)
    return out


def check(sweep: Sweep) -> list[dict]:
    """The sweep's points, once every distinct stack and workload of them has been built (and
    the trace read): the first that cannot be is a one-line :class:`SweepError`."""
    if sweep.trace:
        for k in ("size", "service", "service_mean", "demand"):
            if k in sweep.axes:
                raise SweepError(f"{k} does not apply to a trace (its jobs are the log's)")
    points = sweep.points()
    stacks, loads = set(), set()
    for p in points:
        key = (p["topology"], p["allocator"], p["scheduler"], p.get("reduction"), p["gang"],
               point_key(p.get("dparams") or {}))
        if key not in stacks:
            stacks.add(key)
            try:
                build(StackConfig(p["topology"], p["allocator"], p["scheduler"], reduction=p.get("reduction"),
                                  gang=p["gang"], params=dict(p.get("dparams") or {})))
            except (ValueError, KeyError) as e:
                raise SweepError(_one_line(e)) from None
        if sweep.trace:
            wkey = (p["topology"],)
        else:
            wkey = (p["topology"], p["load"], p["size"], p["service"], p["service_mean"], p["demand"])
        if wkey not in loads:
            loads.add(wkey)
            try:
                if sweep.trace:
                    _points._trace(sweep.trace, p["topology"], sweep.time_unit)
                else:
                    Workload.build(p["topology"], p["load"], p["size"], p["service"], p["service_mean"], p["demand"])
            except (ValueError, KeyError, OSError) as e:
                raise SweepError(_one_line(e)) from None
    return points


def _one_line(e: Exception) -> str:
    msg = e.args[0] if isinstance(e, KeyError) and e.args and not str(e).startswith("unknown") else e
    return " ".join(str(msg).split())


__all__ = ["check", "gang_point", "scaled_jobs", "sweep_point", "trace_point"]
