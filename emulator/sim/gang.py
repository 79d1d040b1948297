"""Virtual-time simulation of gang scheduling (issue 7; Zhou, Brent and Qu 1997).

A small event loop of its own drives a gang policy of :mod:`scheduler.gang` the way the live
daemon does (arrive / depart / tick at ``next_wakeup()``), and lets jobs progress only while
they are dispatched. Between two events every job's progress rate is constant, so the next
event is the earliest of: an arrival, the policy's timer, a completion at the current rate,
or the end of a job's switch or reload phase.

Work model (all times in the papers' time units):

* A parallel job of run time T needs T units of work; it progresses only while a SlotSwitch
  has it running. A gang advances at the pace of its slowest process: with s sequential jobs
  on its most loaded node its rate is 1/(1+s) (local-level processor sharing, section 1 of
  the paper).
* A sequential (one-node) job shares its node: rate 1/(k + d), k sequential jobs on the node
  and d = 1 when a parallel task is dispatched there.
* Context switch: when a job that has run before is switched back in and at least one of its
  nodes ran another parallel job meanwhile, the switch costs ``switch_cost`` units during which the job makes no progress
  (the slot clock runs on: the switch eats into the slot). Counted once per gang switch in
  ``context_switches`` and once per node in ``node_context_switches``. Switching a job back
  in on nodes that ran nothing else meanwhile costs nothing (its cache and state are there),
  and so does a job's first start (start-up is part of its run time).
* Cache reload: after such a switch the first ``reload_time`` units of the job's run progress
  at ``reload_rate`` (0.5: half speed), i.e. a cold cache costs
  ``reload_time * (1 - reload_rate)`` units of work per switch. Zero by default.

Ties at one instant: completions first, then arrivals, then the policy's timer, so a job that
finishes exactly at the end of its slot leaves before P moves, and a job arriving at a slot
boundary is seen by the choice of the next slot.

Metrics: ``completed``, ``mean_turnaround``, ``mean_slowdown`` (turnaround / run time),
``mean_turnaround_short`` and ``_long`` (run time <= / > ``short_threshold``, default the
median run time), ``context_switches``, ``node_context_switches``, ``preemptions`` (a live job
taken off the processors), ``slot_switches``, ``jobs_per_level`` (level of each parallel job
when it finished), ``throughput`` = completed / time of the last completion, ``makespan``.

``closed=M`` runs the perfectly balanced system of section 3: the first M jobs of the list
arrive at time 0 and each completion brings in the next job at that instant.
"""
from __future__ import annotations

import math
import statistics
import time as _time
from collections import deque
from dataclasses import dataclass, field, replace

from scheduler import gang
from scheduler.decisions import Finish, SlotSwitch, Start
from scheduler.gang.office import GangError
from scheduler.jobs import Job


@dataclass
class GangRun:
    metrics: dict
    jobs: list  # one dict per finished job
    trace: list = field(default_factory=list)  # SlotSwitch decisions, when asked for
    perf: dict = field(default_factory=dict)  # events, wall seconds (not deterministic)


def _cost(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise GangError(f"{what} must be a finite number >= 0, got {value!r}")
    return float(value)


def run_gang(name: str, topology, jobs, *, allocator: str = "naive", policy_params: dict | None = None,
             **sim_options) -> GangRun:
    """Create gang policy ``name`` and :func:`simulate` ``jobs`` under it."""
    policy = gang.create(name, topology, allocator, **(policy_params or {}))
    return simulate(policy, jobs, **sim_options)


def simulate(policy, jobs, *, switch_cost: float = 0.0, reload_time: float = 0.0,
             reload_rate: float = 0.5, closed: int | None = None, short_threshold: float | None = None,
             max_time: float | None = None, trace: bool = False) -> GangRun:
    switch_cost = _cost(switch_cost, "switch_cost")
    reload_time = _cost(reload_time, "reload_time")
    if isinstance(reload_rate, bool) or not isinstance(reload_rate, (int, float)) or not 0 < reload_rate <= 1:
        raise GangError(f"reload_rate must be in (0, 1], got {reload_rate!r}")
    jobs = list(jobs)
    for j in jobs:
        if not isinstance(j, Job):
            raise GangError(f"jobs must be Job objects, got {j!r}")
    if closed is not None:
        if isinstance(closed, bool) or not isinstance(closed, int) or closed < 1:
            raise GangError(f"closed (jobs kept in the system) must be an integer >= 1, got {closed!r}")
        first = [replace(j, submit=0.0) for j in jobs[:closed]]
        later = deque(jobs[closed:])
        pending = deque(first)
    else:
        pending = deque(sorted(jobs, key=lambda j: (j.submit, str(j.id))))
        later = deque()
    runtimes = [j.runtime for j in jobs]
    if short_threshold is None:
        short_threshold = statistics.median(runtimes) if runtimes else 0.0

    work: dict = {}  # job id -> remaining work
    job_of: dict = {}
    nodes_of: dict = {}
    local: dict = {}  # job id -> node
    local_n: dict = {}  # node -> sequential jobs
    disp_on: dict = {}  # node -> dispatched parallel job
    last_on: dict = {}  # node -> last parallel job dispatched there
    hold: dict = {}  # job id -> no progress before this time (switch)
    reload: dict = {}  # job id -> slow progress before this time (cache reload)
    dispatched: frozenset = frozenset()
    info: dict = {}  # job id -> per-job record
    finished: list = []
    tr: list = []
    counts = {"context_switches": 0, "node_context_switches": 0, "preemptions": 0, "slot_switches": 0}
    events = 0

    def apply(decisions, t):
        nonlocal dispatched
        for d in decisions:
            if isinstance(d, Start):
                jid = d.job.id
                job_of[jid] = d.job
                work[jid] = d.job.runtime
                info[jid] = {"id": jid, "submit": d.job.submit, "runtime": d.job.runtime, "start": t,
                             "first_run": t if d.sequential else None, "switches": 0, "preemptions": 0,
                             "kind": "sequential" if d.sequential else "parallel"}
                if d.sequential:
                    local[jid] = d.node
                    local_n[d.node] = local_n.get(d.node, 0) + 1
                else:
                    info[jid]["row"] = d.row
                    nodes_of[jid] = tuple(sorted(d.allocation.nodes))
            elif isinstance(d, Finish):
                jid = d.job_id
                if jid in local:
                    n = local.pop(jid)
                    local_n[n] -= 1
                    if not local_n[n]:
                        del local_n[n]
                else:
                    for n in nodes_of.pop(jid, ()):
                        if disp_on.get(n) == jid:
                            del disp_on[n]
                    if jid in dispatched:
                        dispatched = dispatched - {jid}
                work.pop(jid, None)
                hold.pop(jid, None)
                reload.pop(jid, None)
            elif isinstance(d, SlotSwitch):
                counts["slot_switches"] += 1
                if trace:
                    tr.append(d)
                new = d.running
                for jid in dispatched - new:
                    if jid in work:
                        counts["preemptions"] += 1
                        info[jid]["preemptions"] += 1
                        for n in nodes_of[jid]:
                            if disp_on.get(n) == jid:
                                del disp_on[n]
                for jid in new - dispatched:
                    ns = nodes_of[jid]
                    # a resumed job whose nodes ran another job meanwhile; a first start is free
                    cold = 0 if info[jid]["first_run"] is None else sum(
                        1 for n in ns if last_on.get(n, jid) != jid)
                    if cold:
                        counts["context_switches"] += 1
                        counts["node_context_switches"] += cold
                        info[jid]["switches"] += 1
                        hold[jid] = t + switch_cost
                        reload[jid] = t + switch_cost + reload_time
                    for n in ns:
                        disp_on[n] = jid
                        last_on[n] = jid
                    if info[jid]["first_run"] is None:
                        info[jid]["first_run"] = t
                dispatched = new

    def rate(jid, t):
        if jid in local:
            n = local[jid]
            return 1.0 / (local_n[n] + (1 if n in disp_on else 0))
        if hold.get(jid, -1.0) > t:
            return 0.0
        r = 1.0
        if local_n:
            worst = max((local_n.get(n, 0) for n in nodes_of[jid]), default=0)
            r = 1.0 / (1 + worst)
        if reload.get(jid, -1.0) > t:
            r *= reload_rate
        return r

    t = 0.0
    wall = _time.perf_counter()
    while True:
        events += 1
        active = [j for j in dispatched if j in work] + list(local)
        rates = {j: rate(j, t) for j in active}
        cands = []
        if pending:
            cands.append(pending[0].submit)
        w = policy.next_wakeup()
        if w is not None:
            cands.append(w)
        for j, r in rates.items():
            if r > 0:
                cands.append(t + work[j] / r)
            for b in (hold.get(j), reload.get(j)):
                if b is not None and b > t:
                    cands.append(b)
        if not cands:
            break
        tn = max(t, min(cands))
        if max_time is not None and tn > max_time:
            break
        dt = tn - t
        if dt > 0:
            for j, r in rates.items():
                work[j] -= r * dt
        t = tn
        done = [j for j in active if work[j] <= 1e-9 * max(1.0, job_of[j].runtime)]
        for j in sorted(done, key=lambda j: (info[j]["start"], str(j))):
            rec = policy.jobs.get(j)
            level = rec.level if rec is not None else None
            slots = rec.slots if rec is not None else 0
            apply(policy.depart(j, t), t)
            r = info.pop(j)
            r.update(finish=t, turnaround=t - r["submit"], slowdown=(t - r["submit"]) / r["runtime"],
                     level=level, slots=slots)
            finished.append(r)
            if later:
                pending.append(replace(later.popleft(), submit=t))
        while pending and pending[0].submit <= t:
            apply(policy.arrive(pending.popleft(), t), t)
        guard = 0
        while (w := policy.next_wakeup()) is not None and w <= t:
            apply(policy.tick(t), t)
            guard += 1
            if guard > 1000:
                raise RuntimeError(f"gang policy {policy.name} keeps asking for a tick at {t}")
    wall = _time.perf_counter() - wall

    n = len(finished)
    tat = [r["turnaround"] for r in finished]
    short = [r["turnaround"] for r in finished if r["runtime"] <= short_threshold]
    long_ = [r["turnaround"] for r in finished if r["runtime"] > short_threshold]
    per_level: dict = {}
    for r in finished:
        if r["level"] is not None:
            per_level[r["level"]] = per_level.get(r["level"], 0) + 1
    makespan = max((r["finish"] for r in finished), default=0.0)

    def mean(xs):
        return sum(xs) / len(xs) if xs else None

    metrics = {
        "policy": policy.name,
        "completed": n,
        "mean_turnaround": mean(tat),
        "mean_slowdown": mean([r["slowdown"] for r in finished]),
        "mean_turnaround_short": mean(short),
        "mean_turnaround_long": mean(long_),
        "short_threshold": short_threshold,
        "throughput": n / makespan if makespan > 0 else None,
        "makespan": makespan,
        "jobs_per_level": {str(k): v for k, v in sorted(per_level.items())},
        **counts,
        "switch_cost": switch_cost,
        "reload_time": reload_time,
        "reload_rate": reload_rate,
    }
    finished.sort(key=lambda r: (r["submit"], str(r["id"])))
    return GangRun(metrics, finished, tr, {"events": events, "wall_s": wall,
                                           "events_per_s": events / wall if wall > 0 else None})


__all__ = ["GangRun", "run_gang", "simulate"]
