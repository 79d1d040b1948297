"""Point functions shared by the experiments and ``mcemu sweep``: ``(params, seed) -> {metric: float}``.

They are pure (the result depends only on the arguments) and top level, so that the runner's
process pool pickles them by reference. ``params`` is plain JSON (it is also the point's key
in ``runs.jsonl`` and its row in ``results.csv``). Every point is one run of
:func:`emulator.sim.run.run`: :func:`spec_of` reads the params into a
:class:`~emulator.sim.spec.RunSpec`, whose workload holds the only defaults.

The params' vocabulary: ``topology``, ``allocator`` (default: the topology's), ``scheduler``
(a discipline), ``reduction``, ``gang`` (a gang policy: the gang work model), ``dparams`` (the
policy's parameters); ``load`` or ``iatm``, ``size``, ``service``, ``service_mean``, ``demand``,
``size_params``, ``service_params``, ``jobs`` (a fixed list of that many jobs); ``trace``
(a log of ``../shared/traces`` or a path), ``time_unit``, ``limit``; ``until``, ``completions``,
``warmup``; ``samples``, ``per_size``; ``comm`` (``--comm`` specs: the comm work model) with
``net_time_unit``, ``flit_time``, ``message_length``; the gang model's ``switch_cost``,
``reload_time``, ``reload_rate``, ``short_threshold``, ``closed``, ``cut_at_until``.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

from emulator.sim import metrics
from emulator.sim.run import RunResult, run, workload as _workload
from emulator.sim.spec import WORK_OPTIONS, Observers, RunSpec, StopRule, WorkloadSpec
from scheduler.stack import StackConfig
from scheduler.topology import parse_topology

BASIC = ("mean_queueing_delay", "utilization", "throughput", "power", "mean_turnaround",
         "external_fragmentation", "ls_ratio", "measured_load", "waiting_at_end", "completed")
GANG_METRICS = ("mean_turnaround", "mean_slowdown", "mean_turnaround_short", "mean_turnaround_long",
                "jobs_per_makespan", "makespan", "completed", "context_switches", "preemptions")
COMM_METRICS = ("mean_message_delay", "mean_message_contention", "mean_turnaround", "mean_queueing_delay",
                "mean_comm_slowdown", "mean_comm_run_time", "utilization")
_WORKLOAD_KEYS = ("load", "iatm", "size", "service", "service_mean", "demand", "size_params", "service_params",
                  "time_unit", "limit")


def trace_path(name: str) -> Path:
    """A log of ``../shared/traces`` relative to the repository (the traces are not copied
    into it), or of ``$MCEMU_TRACES`` when set; an absolute path is itself."""
    env = os.environ.get("MCEMU_TRACES")
    base = Path(env) if env else Path(__file__).resolve().parents[2].parent / "shared" / "traces"
    return base / name


def _work(params: dict) -> tuple[str, dict]:
    if params.get("gang"):
        model = "gang"
    elif params.get("comm"):
        model = "comm"
    else:
        model = "fixed"
    return model, {k: params[k] for k in WORK_OPTIONS[model] if params.get(k) is not None}


def spec_of(params: dict, seed: int, *, records: bool = False) -> RunSpec:
    """The run of a point (the module docstring's vocabulary); a missing workload key takes
    the RunSpec's default."""
    model, options = _work(params)
    w = {k: params[k] for k in _WORKLOAD_KEYS if params.get(k) is not None}
    if params.get("trace"):
        w["trace"] = str(trace_path(params["trace"]))
    if params.get("jobs") is not None:
        w["count"] = params["jobs"]
    stack = StackConfig(params["topology"], params.get("allocator"), None if model == "gang" else params["scheduler"],
                        reduction=params.get("reduction"), gang=params.get("gang") or None,
                        params=dict(params.get("dparams") or {}))
    stop = StopRule(params.get("until"), params.get("completions"), params.get("warmup", 0))
    return RunSpec(stack, WorkloadSpec(seed=seed, **w), stop, model, options,
                   Observers(records=records, samples=params.get("samples") or 0))


def run_point(params: dict, seed: int, *, records: bool = False) -> RunResult:
    return run(spec_of(params, seed, records=records))


def workload(params: dict, seed: int):
    """The Poisson workload of a point (emulator.sim.workloads.Workload)."""
    spec = spec_of(params, seed)
    return _workload(spec.workload, parse_topology(params["topology"]))


def sim_point(params: dict, seed: int) -> dict:
    """One synthetic run. Stops at ``until`` (observation time) or after ``completions``
    with ``warmup`` discarded. ``samples``: also M of the jobs allocated up to each of that
    many equally spaced times (``M@t``). ``per_size``: mean turnaround by the size the job
    asked for (``tat@p``, p processors), measured on the counted completions."""
    per_size = bool(params.get("per_size"))
    res = run_point(params, seed, records=per_size)
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
    res = run_point(params, seed, records=True)
    # the last departure: a run to completion ends there (the engine takes no timer with
    # nothing in the system)
    return {"completion_time": max(r.end for r in res.records), "last_arrival": float(res.job_list[-1].submit),
            "mean_queueing_delay": float(res.metrics["mean_queueing_delay"])}


def trace_point(params: dict, seed: int) -> dict:
    """Replay the first ``limit`` jobs (all when None) of an SWF log, its arrivals scaled to
    ``load`` when given; deterministic, the seed is unused. Adds mean wait per job size
    (``wait@p``), the mean run time and the makespan; utilization over [first submit, last
    departure] (a log does not start at time 0, the simulator's window does)."""
    res = run_point(params, seed, records=True)
    jobs, m = res.job_list, res.metrics
    out = {k: float(m[k]) for k in BASIC}
    out["mean_wait"] = out["mean_queueing_delay"]
    out["mean_runtime"] = sum(j.runtime for j in jobs) / len(jobs)
    first = min(j.submit for j in jobs)
    end = max(r.end for r in res.records)
    out["makespan"] = end - first
    out["utilization"] = metrics.utilization(metrics.busy_node_time(res.records),
                                             parse_topology(params["topology"]).size, end - first)
    for size, v in m["per_size"].items():
        out[f"wait@{size}"] = float(v["mean_wait"])
    return out


def _num(v) -> float:
    return float(v) if isinstance(v, (int, float)) else math.nan


def gang_point(params: dict, seed: int) -> dict:
    """A gang run (``params["gang"]``) of the jobs submitted before ``until`` (or the first
    ``completions`` jobs), each run to completion: :data:`GANG_METRICS`."""
    m = run_point(params, seed).metrics
    return {k: _num(m.get(k)) for k in GANG_METRICS}


def comm_point(params: dict, seed: int) -> dict:
    """A run of jobs that communicate (``params["comm"]``): :data:`COMM_METRICS` and the mean
    message delay of the jobs of each MTBS (``delay@mtbsM``)."""
    res = run_point(params, seed)
    out = {k: float(res.metrics[k]) for k in COMM_METRICS}
    for mt in sorted({r["mtbs_us"] for r in res.comm}):
        d = [r["mean_delay_us"] for r in res.comm if r["mtbs_us"] == mt]
        out[f"delay@mtbs{mt:g}"] = sum(d) / len(d)
    return out


def point(params: dict, seed: int) -> dict:
    """The point of any params: a gang run, a trace replay, a fixed job list, jobs that
    communicate, or a synthetic run."""
    if params.get("gang"):
        return gang_point(params, seed)
    if params.get("trace"):
        return trace_point(params, seed)
    if params.get("comm"):
        return comm_point(params, seed)
    if params.get("jobs") is not None:
        return joblist_point(params, seed)
    return sim_point(params, seed)


def finite(v) -> bool:
    return isinstance(v, (int, float)) and math.isfinite(v)
