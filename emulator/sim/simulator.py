"""The discrete-event simulator: the policy objects of ``scheduler/`` in virtual time.

One heap of events ordered by ``(time, kind, seq)``: at equal times departures come first
(so the nodes a job frees are there for a job arriving at the same instant, as in the lazy
paper's event-driven simulator), then a discipline's timers, then arrivals; ``seq`` breaks the
remaining ties in insertion order, so a run is a pure function of its job stream. The
discipline's one pending timer (``next_wakeup``) is kept beside the heap and taken at exactly
that place in the order, so a timer superseded before it fires costs nothing and is not
counted: ``events`` = arrivals + departures + timers that fired. Arrivals are
pulled from the job iterator one at a time, so memory grows with the jobs in the system, not
with the length of the run.

A run ends at an observation time T (lazy paper 4.2: metrics over [0, T]), after N
completions with the first W discarded (RSR paper 4.1: 50,500 completions, first 500 not
counted; utilization, throughput and M are then measured between the W-th and the N-th
completion), or, for a trace, when every job has completed. Given both T and N, whichever
comes first ends the run and the metrics are taken up to that moment.

Metrics (DESIGN "Metrics"): ``generated`` G, ``completed`` C, ``allocated`` A, total queueing
delay R, total service demand S; ``mean_queueing_delay`` M = R/A; ``utilization`` U = node-time
used / node-time available (allocated nodes, clipped to the window); ``throughput`` X = C/T;
``power`` X/M; ``measured_load`` S/(N T), S counting each admitted job's runtime times the nodes
its request is rounded to (lazy 4.2: the measured rate differs from the input rate by the
round-off to cubes), so without folding it matches U in steady state; ``mean_turnaround`` (wait + execution after
folding, over completed jobs); ``external_fragmentation`` (dissertation 8.2: the idle share of
the machine, averaged over the moments an event left jobs waiting and started none — the
scheduler "is not able to allocate any jobs"); ``ls_ratio`` (mean wait of jobs whose allocated
size is above the median size over the mean wait of the others, dissertation 8.2; jobs equal to
the median count as small); ``per_size`` means; ``delay_over_time`` (M of the jobs allocated so
far, sampled through the run: lazy Figure 8); ``mean_jobs_in_system`` (time average, for
Little's law).
"""
from __future__ import annotations

import heapq
import math
import statistics
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

from scheduler import allocators, disciplines
from scheduler.disciplines.base import Discipline
from scheduler.decisions import Start
from scheduler.jobs import Job
from scheduler.topology import RequestError, parse_topology

DEPART, TIMER, ARRIVE = 0, 1, 2


class SimulationError(ValueError):
    pass


def build_discipline(topology, allocator: str, scheduler: str, reduction: str | None = None,
                     params: dict | None = None, allocator_params: dict | None = None):
    """Topology string/object + policy names -> a ready discipline object (shared by the
    simulator, the daemon and the experiments, so every front end configures alike)."""
    topo = parse_topology(topology)
    try:
        alloc = allocators.create(allocator, topo, **(allocator_params or {}))
    except TypeError as e:  # an unknown keyword of the allocator's constructor
        raise SimulationError(f"allocator {allocator!r}: {e}") from None
    if reduction and reduction != "none":
        from scheduler import reduction as red

        alloc = red.wrap(alloc, reduction)
    try:
        return disciplines.create(scheduler, topo, alloc, **(params or {}))
    except TypeError as e:  # an unknown keyword (``--param``) of the discipline
        raise SimulationError(f"scheduler {scheduler!r}: {e}") from None


@dataclass
class JobRecord:
    """What the simulator keeps of a job when asked to (``keep_records``: SWF output)."""

    id: object
    submit: float
    start: float
    end: float
    asked: int
    given: int
    folds: int
    runtime: float
    nodes: tuple = ()


@dataclass
class SimResult:
    metrics: dict
    records: list = field(default_factory=list)
    rejected: list = field(default_factory=list)


class Simulation:
    """Drive one discipline with one job stream.

    ``until``: observation time T. ``completions``/``warmup``: stop after that many
    completions, not counting the first ``warmup`` in the means. Neither: run until every job
    has completed (trace replay). ``on_reject``: "error" (default: a job that can never fit is
    a clear error naming it) or "skip" (count it in ``rejected``).
    """

    def __init__(self, discipline, jobs: Iterable[Job], *, until: float | None = None,
                 completions: int | None = None, warmup: int = 0, keep_records: bool = False,
                 keep_nodes: bool = False, samples: int = 20, on_reject: str = "error",
                 progress: Callable[[float, int], None] | None = None,
                 trace: Callable[[str, float, object], None] | None = None):
        if until is not None and (not math.isfinite(until) or until <= 0):
            raise SimulationError(f"observation time must be > 0, got {until}")
        if completions is not None and completions <= warmup:
            raise SimulationError("completions must exceed the warm-up count")
        if warmup < 0:
            raise SimulationError("warm-up must be >= 0")
        self.d = discipline
        self.jobs: Iterator[Job] = iter(jobs)
        self.until = until
        self.completions = completions
        self.warmup = warmup
        self.keep_records = keep_records
        self.keep_nodes = keep_nodes
        self.samples = samples
        self.on_reject = on_reject
        self.progress = progress
        self.trace = trace
        self.events = 0

    def run(self) -> SimResult:
        d = self.d
        size = d.topology.size
        until, completions, warmup = self.until, self.completions, self.warmup
        heap: list = []
        push, pop = heapq.heappush, heapq.heappop
        seq = 0
        trace = self.trace
        records = [] if self.keep_records else None
        keep_nodes = self.keep_nodes
        reject_error = self.on_reject == "error"
        rejected = []
        jobs = self.jobs
        arrive, depart, tick = d.arrive, d.depart, d.tick
        # S counts the nodes a job is given before any folding: a count request rounded up to
        # its cube or submesh (lazy 4.2: the measured rate differs from the input rate "due to
        # round off effect while limiting the job size to cubic").
        normalize = getattr(d, "_normalize", None) or d.allocator.normalize
        demand_size: dict = {}
        running = d.running
        # A discipline that never overrides next_wakeup never asks for a timer: skip the call.
        next_wakeup = d.next_wakeup
        if "next_wakeup" not in vars(d) and getattr(type(d), "next_wakeup", None) is Discipline.next_wakeup:
            next_wakeup = None

        job = next(jobs, None)
        if job is not None:
            seq += 1
            push(heap, (job.submit, ARRIVE, seq, job))
        # counters (lazy 4.2)
        G = C = A = 0
        R = S = 0.0
        busy = 0  # allocated nodes now
        in_system = 0
        area = 0.0  # integral of busy nodes over time
        sys_area = 0.0  # integral of jobs in system
        last = 0.0
        frag_sum, frag_n = 0.0, 0
        waits_by_size: dict = {}
        tat_sum, tat_n = 0.0, 0
        done_waits: list = []  # (given size, wait) of counted completions, for L/S
        # completions mode: the window between the warmup-th and the last completion
        win_start_t, win_start_area = (0.0, 0.0) if warmup == 0 else (None, None)
        win_start_R, win_start_A = 0.0, 0  # R and A when the window opened (M over the window)
        counted_C = 0
        # The discipline's one pending timer lives outside the heap: at equal times it comes
        # after the departures and before the arrivals, exactly where a (t, TIMER, seq) heap
        # entry would, and a superseded timer leaves nothing behind to pop.
        timer_at = None
        last_tick = None
        sample_every = (until / self.samples) if (until and self.samples) else None
        next_sample = sample_every if sample_every is not None else math.inf
        delay_series = []
        now = 0.0
        events = 0
        progress = self.progress
        stop_at = until if until is not None else math.inf

        while True:
            if heap:
                top = heap[0]
                t = top[0]
                if timer_at is not None and (timer_at < t or (timer_at == t and top[1] == ARRIVE)):
                    t, kind = timer_at, TIMER
                else:
                    kind = top[1]
            elif timer_at is not None and in_system:
                # a timer matters only while jobs wait; with nothing left it would only
                # stretch the end of a run-to-completion (trace, fixed list) past its last job
                t, kind = timer_at, TIMER
            else:
                break
            if t > stop_at:
                break
            # integrate up to t
            dt = t - last
            if dt:
                area += busy * dt
                sys_area += in_system * dt
                last = t
            if t >= next_sample:
                while t >= next_sample:
                    delay_series.append((next_sample, R / A if A else 0.0))
                    next_sample += sample_every
            now = t
            events += 1
            if kind == ARRIVE:
                job = pop(heap)[3]
                try:
                    starts = arrive(job, t)
                except RequestError as e:
                    if reject_error:
                        raise SimulationError(f"job {job.id}: {e}") from None
                    rejected.append((job.id, str(e)))
                    starts = []
                else:
                    G += 1
                    in_system += 1
                    req = job.request
                    nodes = demand_size.get(req)
                    if nodes is None:
                        nodes = demand_size[req] = normalize(req).processors_needed
                    S += job.runtime * nodes
                job = next(jobs, None)
                if job is not None:
                    seq += 1
                    push(heap, (job.submit, ARRIVE, seq, job))
            elif kind == DEPART:
                s: Start = pop(heap)[3]
                sj = s.job
                starts = depart(sj.id, t)
                a = s.allocation
                g = a.size
                busy -= g
                in_system -= 1
                C += 1
                if C > warmup:
                    counted_C += 1
                    wait = s.time - sj.submit
                    tat = t - sj.submit
                    tat_sum += tat
                    tat_n += 1
                    done_waits.append((g, wait))
                    w = waits_by_size.get(g)
                    if w is None:
                        w = waits_by_size[g] = [0, 0.0, 0.0]
                    w[0] += 1
                    w[1] += wait
                    w[2] += tat
                    if records is not None:
                        records.append(JobRecord(
                            sj.id, sj.submit, s.time, t,
                            a.asked.processors_needed, g, a.folds, sj.runtime,
                            tuple(sorted(a.nodes)) if keep_nodes else ()))
                elif C == warmup:
                    win_start_t, win_start_area = t, area
                    win_start_R, win_start_A = R, A
                if trace:
                    trace("depart", t, s)
            else:  # TIMER
                timer_at = None
                last_tick = t
                starts = tick(t)
            if starts:
                for s in starts:
                    A += 1
                    R += s.time - s.job.submit
                    busy += s.allocation.size
                    seq += 1
                    push(heap, (t + s.runtime, DEPART, seq, s))
                    if trace:
                        trace("start", t, s)
            elif in_system > len(running):
                frag_sum += (size - busy) / size
                frag_n += 1
            if next_wakeup is not None:
                w = next_wakeup()
                if w is None:
                    timer_at = None  # withdrawn: the daemon would not tick either
                else:
                    if w < t:
                        w = t
                    if w != timer_at and not (w == t and last_tick == t):
                        timer_at = w
            if completions is not None and C >= completions:
                break
            if progress is not None and not events & 0x3FFF:
                progress(now, C)

        self.events = events
        # with both --time and --jobs, the count may end the run before T: measure up to then
        by_time = until is not None and not (completions is not None and C >= completions)
        if by_time:
            end = until
            dt = end - last
            if dt > 0:
                area += busy * dt
                sys_area += in_system * dt
            while sample_every is not None and next_sample <= until + 1e-9:
                delay_series.append((next_sample, R / A if A else 0.0))
                next_sample += sample_every
            T = until
            util = area / (size * T)
            window = T
        else:
            end = now
            if win_start_t is None:  # fewer completions than the warm-up: nothing counted
                win_start_t, win_start_area = end, area
                win_start_R, win_start_A = R, A
            window = end - win_start_t
            util = (area - win_start_area) / (size * window) if window > 0 else 0.0
            T = end
        # the warm-up's allocations are left out of M as its completions are of the other means
        # (RSR 4.1: "the first 500 jobs are ignored in the measurement")
        R_w, A_w = R - win_start_R, A - win_start_A
        M = R_w / A_w if A_w else 0.0
        X = (C if by_time else counted_C) / window if window > 0 else 0.0
        metrics = {
            "generated": G,
            "completed": C,
            "allocated": A,
            "total_queueing_delay": R,
            "total_service_demand": S,
            "mean_queueing_delay": M,
            "utilization": util,
            "throughput": X,
            "power": X / M if M > 0 else float("inf") if X > 0 else 0.0,
            "measured_load": S / (size * T) if T > 0 else 0.0,
            "mean_turnaround": tat_sum / tat_n if tat_n else 0.0,
            "external_fragmentation": frag_sum / frag_n if frag_n else 0.0,
            "ls_ratio": ls_ratio(done_waits),
            "mean_jobs_in_system": sys_area / T if T > 0 else 0.0,
            "observation_time": T,
            "counted_completions": tat_n,
            "waiting_at_end": in_system - len(d.running),
            "running_at_end": len(d.running),
            "events": events,
            "per_size": {
                str(k): {"completed": v[0], "mean_wait": v[1] / v[0], "mean_turnaround": v[2] / v[0]}
                for k, v in sorted(waits_by_size.items())
            },
            "delay_over_time": [[round(a, 9), b] for a, b in delay_series],
        }
        if rejected:
            metrics["rejected"] = len(rejected)
        return SimResult(metrics, records or [], rejected)


def ls_ratio(size_waits: list) -> float:
    """Mean wait of jobs above the median allocated size over the mean wait of the rest."""
    if len(size_waits) < 2:
        return float("nan")
    med = statistics.median(s for s, _ in size_waits)
    large = [w for s, w in size_waits if s > med]
    small = [w for s, w in size_waits if s <= med]
    if not large or not small:
        return float("nan")
    ms = sum(small) / len(small)
    ml = sum(large) / len(large)
    if ms == 0:
        return float("inf") if ml > 0 else 1.0
    return ml / ms


def simulate(topology, allocator: str, scheduler: str, jobs: Iterable[Job], *,
             reduction: str | None = None, params: dict | None = None, **kwargs) -> SimResult:
    """One run: build the policies by name and drive them with ``jobs``."""
    d = build_discipline(topology, allocator, scheduler, reduction, params)
    return Simulation(d, jobs, **kwargs).run()


__all__ = ["Simulation", "SimResult", "SimulationError", "JobRecord", "build_discipline",
           "simulate", "ls_ratio"]
