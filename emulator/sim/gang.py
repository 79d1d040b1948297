"""Virtual-time simulation of gang scheduling (issue 7; Zhou, Brent and Qu 1997).

The event engine (emulator.sim.engine) drives a gang policy of :mod:`scheduler.gang` the way
the live daemon does (arrive / depart / tick at ``next_wakeup()``); the work model here lets
jobs progress only while they are dispatched. Between two events every job's progress rate
is constant, so the model's own timer is the earliest of: a completion at the current rate
or the end of a job's switch or reload phase; the engine takes the earliest of that, the
next arrival and the policy's timer. The policy is built with scheduler.stack.

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

Metrics (emulator.sim.metrics.gang_metrics): ``completed``, ``mean_turnaround``,
``mean_slowdown`` (turnaround / run time), ``mean_turnaround_short`` and ``_long`` (run time
<= / > ``short_threshold``, default the median run time), ``context_switches``, ``node_context_switches``, ``preemptions`` (a live job
taken off the processors), ``slot_switches``, ``jobs_per_level`` (level of each parallel job
when it finished), ``jobs_per_makespan`` = completed / time of the last completion, ``makespan``.

``closed=M`` runs the perfectly balanced system of section 3: the first M jobs of the list
arrive at time 0 and each completion brings in the next job at that instant.
"""
from __future__ import annotations

import math
import statistics
import time as _time
from dataclasses import dataclass, field, replace

from emulator.sim.engine import ARRIVE, LAST, Engine
from emulator.sim.metrics import gang_metrics
from scheduler.decisions import Finish, SlotSwitch, Start
from scheduler.gang.office import GangError
from scheduler.jobs import Job
from scheduler.stack import StackConfig, build


@dataclass
class GangRun:
    metrics: dict
    jobs: list  # one dict per finished job
    trace: list = field(default_factory=list)  # SlotSwitch decisions, when asked for
    perf: dict = field(default_factory=dict)  # engine events, wall seconds (not deterministic)


def _cost(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise GangError(f"{what} must be a finite number >= 0, got {value!r}")
    return float(value)


def run_gang(name: str, topology, jobs, *, allocator: str = "naive", policy_params: dict | None = None,
             **sim_options) -> GangRun:
    """Build gang policy ``name`` (scheduler.stack) and :func:`simulate` ``jobs`` under it."""
    stack = build(StackConfig(topology, allocator, gang=name, params=dict(policy_params or {})))
    return simulate(stack.policy, jobs, **sim_options)


class GangWork:
    """The gang work model (module docstring): remaining work per job, the switch and reload
    phases, per-job records and the switch counters."""

    def __init__(self, policy, *, switch_cost: float, reload_time: float, reload_rate: float,
                 later=(), trace: bool = False):
        self.policy = policy
        self.switch_cost, self.reload_time, self.reload_rate = switch_cost, reload_time, reload_rate
        self.later = list(later)[::-1]  # closed system: the jobs still to come, next last
        self.work: dict = {}  # job id -> remaining work
        self.job_of: dict = {}
        self.nodes_of: dict = {}
        self.local: dict = {}  # job id -> node
        self.local_n: dict = {}  # node -> sequential jobs
        self.disp_on: dict = {}  # node -> dispatched parallel job
        self.last_on: dict = {}  # node -> last parallel job dispatched there
        self.hold: dict = {}  # job id -> no progress before this time (switch)
        self.reload: dict = {}  # job id -> slow progress before this time (cache reload)
        self.dispatched: frozenset = frozenset()
        self.info: dict = {}  # job id -> per-job record
        self.finished: list = []
        self.trace: list | None = [] if trace else None
        self.counts = {"context_switches": 0, "node_context_switches": 0, "preemptions": 0, "slot_switches": 0}
        self.rates: dict = {}  # job id -> progress rate since rates_at
        self.rates_at = 0.0

    def bind(self, engine) -> None:
        self.engine = engine

    def apply(self, decisions, t) -> None:
        for d in decisions:
            if isinstance(d, Start):
                self._start(d, t)
            elif isinstance(d, Finish):
                self._finish(d.job_id)
            elif isinstance(d, SlotSwitch):
                self._switch(d, t)

    def _start(self, d: Start, t) -> None:
        jid = d.job.id
        self.job_of[jid] = d.job
        self.work[jid] = d.job.runtime
        self.info[jid] = {"id": jid, "submit": d.job.submit, "runtime": d.job.runtime, "start": t,
                          "first_run": t if d.sequential else None, "switches": 0, "preemptions": 0,
                          "kind": "sequential" if d.sequential else "parallel"}
        if d.sequential:
            self.local[jid] = d.node
            self.local_n[d.node] = self.local_n.get(d.node, 0) + 1
        else:
            self.info[jid]["row"] = d.row
            self.nodes_of[jid] = tuple(sorted(d.allocation.nodes))

    def _finish(self, jid) -> None:
        if jid in self.local:
            n = self.local.pop(jid)
            self.local_n[n] -= 1
            if not self.local_n[n]:
                del self.local_n[n]
        else:
            for n in self.nodes_of.pop(jid, ()):
                if self.disp_on.get(n) == jid:
                    del self.disp_on[n]
            if jid in self.dispatched:
                self.dispatched = self.dispatched - {jid}
        self.work.pop(jid, None)
        self.hold.pop(jid, None)
        self.reload.pop(jid, None)

    def _switch(self, d: SlotSwitch, t) -> None:
        counts, info, work, nodes_of = self.counts, self.info, self.work, self.nodes_of
        disp_on, last_on, dispatched = self.disp_on, self.last_on, self.dispatched
        counts["slot_switches"] += 1
        if self.trace is not None:
            self.trace.append(d)
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
            rec = info[jid]
            # a resumed job whose nodes ran another job meanwhile; a first start is free
            cold = 0 if rec["first_run"] is None else sum(1 for n in ns if last_on.get(n, jid) != jid)
            if cold:
                counts["context_switches"] += 1
                counts["node_context_switches"] += cold
                rec["switches"] += 1
                self.hold[jid] = t + self.switch_cost
                self.reload[jid] = t + self.switch_cost + self.reload_time
            for n in ns:
                disp_on[n] = jid
                last_on[n] = jid
            if rec["first_run"] is None:
                rec["first_run"] = t
        self.dispatched = new

    def next_event(self, t):
        """The rates from now on and the model's timer: the earliest completion at those
        rates or end of a switch or reload phase (None: nothing progresses).

        A sequential job shares its node: rate 1/(k + d). A parallel job makes no progress
        in its switch phase, runs at the pace of its most loaded node, 1/(1 + s), and at
        ``reload_rate`` of that in its reload phase."""
        work, hold, reload, local, local_n = self.work, self.hold, self.reload, self.local, self.local_n
        disp_on, nodes_of = self.disp_on, self.nodes_of
        self.rates = rates = {}
        self.rates_at = t
        best = None
        for j in [j for j in self.dispatched if j in work] + list(local):
            if j in local:
                n = local[j]
                r = 1.0 / (local_n[n] + (1 if n in disp_on else 0))
            elif hold.get(j, -1.0) > t:
                r = 0.0
            else:
                r = 1.0
                if local_n:
                    worst = max((local_n.get(n, 0) for n in nodes_of[j]), default=0)
                    r = 1.0 / (1 + worst)
                if reload.get(j, -1.0) > t:
                    r *= self.reload_rate
            rates[j] = r
            if r > 0:
                c = t + work[j] / r
                if best is None or c < best:
                    best = c
            for b in (hold.get(j), reload.get(j)):
                if b is not None and b > t and (best is None or b < best):
                    best = b
        return best

    def advance(self, t) -> int:
        """Progress every job to ``t``; the jobs whose work is done leave (in start order).
        Returns how many left."""
        dt = t - self.rates_at
        work = self.work
        if dt > 0:
            for j, r in self.rates.items():
                work[j] -= r * dt
        done = [j for j in self.rates if work[j] <= 1e-9 * max(1.0, self.job_of[j].runtime)]
        done.sort(key=lambda j: (self.info[j]["start"], str(j)))
        for j in done:
            self._complete(j, t)
        return len(done)

    def _complete(self, j, t) -> None:
        rec = self.policy.jobs.get(j)
        level = rec.level if rec is not None else None
        slots = rec.slots if rec is not None else 0
        self.apply(self.policy.depart(j, t), t)
        r = self.info.pop(j)
        r.update(finish=t, turnaround=t - r["submit"], slowdown=(t - r["submit"]) / r["runtime"],
                 level=level, slots=slots)
        self.finished.append(r)
        if self.later:  # closed system: a completion brings in the next job at once
            self.engine.schedule(t, ARRIVE, replace(self.later.pop(), submit=t))


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
        first, later = [replace(j, submit=0.0) for j in jobs[:closed]], jobs[closed:]
    else:
        first, later = sorted(jobs, key=lambda j: (j.submit, str(j.id))), []
    if short_threshold is None:
        short_threshold = statistics.median(j.runtime for j in jobs) if jobs else 0.0
    model = GangWork(policy, switch_cost=switch_cost, reload_time=reload_time, reload_rate=reload_rate,
                     later=later, trace=trace)
    # completions, then arrivals, then the slot timer at equal times; the slot switch after
    # the last departure is taken (and counted) although no job is left
    engine = Engine(policy, first, model=model, timer_rank=LAST, idle_timer=True)
    wall = _time.perf_counter()
    engine.run(max_time)
    wall = _time.perf_counter() - wall
    metrics = gang_metrics(policy.name, model.finished, model.counts, short_threshold=short_threshold,
                           costs={"switch_cost": switch_cost, "reload_time": reload_time, "reload_rate": reload_rate})
    finished = sorted(model.finished, key=lambda r: (r["submit"], str(r["id"])))
    return GangRun(metrics, finished, model.trace or [], {
        "events": engine.events, "wall_s": wall, "events_per_s": engine.events / wall if wall > 0 else None})


__all__ = ["GangRun", "GangWork", "run_gang", "simulate"]
