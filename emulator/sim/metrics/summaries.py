"""The summaries of runs that are not the plain simulator's: jobs that communicate (their
messages) and the gang simulator."""
from __future__ import annotations

import math

from emulator.sim.metrics.formulas import mean


def comm_metrics(records) -> dict:
    """The run's communication metrics from per-job records of emulator.sim.comm_work (our
    extension, NETWORK.md 3.3): ``comm_completed`` (counted jobs that communicated),
    ``mean_message_delay`` and ``mean_message_contention`` (microseconds: the mean over those
    jobs of each job's mean over its messages, the dissertation's job-level delay averaged per
    job), ``mean_comm_run_time`` and ``mean_contention_free_run_time`` (job time units),
    ``mean_comm_slowdown`` (mean of run time / contention-free run time: what the network's
    contention cost, not the gang model's ``mean_slowdown``) and ``messages`` (of those jobs)."""
    n = len(records)
    slow = [r["slowdown"] for r in records if not math.isnan(r["slowdown"])]
    return {
        "comm_completed": n,
        "mean_message_delay": mean(sum(r["mean_delay_us"] for r in records), n, math.nan),
        "mean_message_contention": mean(sum(r["mean_contention_us"] for r in records), n, math.nan),
        "mean_comm_run_time": mean(sum(r["run_time"] for r in records), n, math.nan),
        "mean_contention_free_run_time": mean(sum(r["contention_free_run_time"] for r in records), n, math.nan),
        "mean_comm_slowdown": mean(sum(slow), len(slow), math.nan),
        "messages": sum(r["messages"] for r in records),
    }


def gang_metrics(policy_name: str, finished: list, counts: dict, *, short_threshold: float,
                 costs: dict) -> dict:
    """The gang simulator's metrics from its finished-job records (dicts with ``runtime``,
    ``turnaround``, ``slowdown``, ``finish``, ``level``) and its switch ``counts``:
    ``mean_slowdown`` (turnaround / run time), ``mean_turnaround_short`` and ``_long`` (run
    time <= / > ``short_threshold``), ``jobs_per_level`` (level of each parallel job when it
    finished), ``jobs_per_makespan`` = completed / time of the last completion (every job of
    the list run to completion: not the simulator's ``throughput``, completed / observation
    time), ``makespan``."""
    n = len(finished)
    tat = [r["turnaround"] for r in finished]
    short = [r["turnaround"] for r in finished if r["runtime"] <= short_threshold]
    long_ = [r["turnaround"] for r in finished if r["runtime"] > short_threshold]
    per_level: dict = {}
    for r in finished:
        if r["level"] is not None:
            per_level[r["level"]] = per_level.get(r["level"], 0) + 1
    makespan = max((r["finish"] for r in finished), default=0.0)

    def avg(xs):
        return sum(xs) / len(xs) if xs else None

    return {
        "policy": policy_name,
        "completed": n,
        "mean_turnaround": avg(tat),
        "mean_slowdown": avg([r["slowdown"] for r in finished]),
        "mean_turnaround_short": avg(short),
        "mean_turnaround_long": avg(long_),
        "short_threshold": short_threshold,
        "jobs_per_makespan": n / makespan if makespan > 0 else None,
        "makespan": makespan,
        "jobs_per_level": {str(k): v for k, v in sorted(per_level.items())},
        **counts,
        **costs,
    }
