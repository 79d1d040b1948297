"""The metrics of DESIGN ("Metrics"): the formulas, the simulator's observer and the gang
summary. The live monitor (emulator.monitor.model) and the experiments' points
(emulator.experiments._points) use the same formulas.

Over an observation time T: ``generated`` G, ``completed`` C, ``allocated`` A, total queueing
delay R, total service demand S; ``mean_queueing_delay`` M = R/A; ``utilization`` U =
node-time used / node-time available (allocated nodes, clipped to the window);
``throughput`` X = C/T; ``power`` X/M; ``measured_load`` S/(N T), S counting each admitted
job's runtime times the nodes its request is rounded to (lazy 4.2: the measured rate differs
from the input rate by the round-off to cubes), so without folding it matches U in steady
state; ``mean_turnaround`` (wait + execution after folding, over completed jobs);
``external_fragmentation`` (dissertation 8.2: the idle share of the machine, averaged over
the moments an event left jobs waiting and started none -- the scheduler "is not able to
allocate any jobs"); ``ls_ratio`` (mean wait of jobs whose allocated size is above the median
size over the mean wait of the others, dissertation 8.2; jobs equal to the median count as
small); ``per_size`` means; ``delay_over_time`` (M of the jobs allocated so far, sampled
through the run: lazy Figure 8); ``mean_jobs_in_system`` (time average, for Little's law).

Windows (RSR paper 4.1): with a completion count N and a warm-up W, the first W completions
are not counted, and U, X and M are measured between the W-th and the last completion (the
warm-up's allocations are left out of M as its completions are of the other means).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from emulator.sim.engine import ARRIVE, DEPART, REJECT

# --------------------------------------------------------------------------- formulas


def mean(total: float, n: int, empty=0.0):
    return total / n if n else empty


def mean_queueing_delay(R: float, A: int) -> float:
    """M = R/A (0 when nothing was allocated)."""
    return R / A if A else 0.0


def utilization(node_time: float, size: int, T: float) -> float:
    """U = node-time used / node-time available over a window of length T."""
    return node_time / (size * T) if T > 0 else 0.0


def throughput(C: int, T: float) -> float:
    """X = C/T."""
    return C / T if T > 0 else 0.0


def power(X: float, M: float) -> float:
    """X/M; infinite when jobs complete without any queueing delay, 0 when none complete."""
    return X / M if M > 0 else math.inf if X > 0 else 0.0


def measured_load(S: float, size: int, T: float) -> float:
    """S/(N T): the service demand admitted over the node-time available."""
    return S / (size * T) if T > 0 else 0.0


def time_average(area: float, T: float) -> float:
    """The mean of a quantity whose integral over [0, T] is ``area`` (jobs in system)."""
    return area / T if T > 0 else 0.0


def ls_ratio(size_waits: list) -> float:
    """Mean wait of jobs above the median allocated size over the mean wait of the rest;
    ``size_waits``: ``(allocated size, wait, ...)`` per job."""
    if len(size_waits) < 2:
        return float("nan")
    med = statistics.median(x[0] for x in size_waits)
    large = [x[1] for x in size_waits if x[0] > med]
    small = [x[1] for x in size_waits if x[0] <= med]
    if not large or not small:
        return float("nan")
    ms = sum(small) / len(small)
    ml = sum(large) / len(large)
    if ms == 0:
        return float("inf") if ml > 0 else 1.0
    return ml / ms


def busy_node_time(records) -> float:
    """Node-time of a schedule's job records (each job's given nodes x its execution)."""
    return sum(r.given * (r.end - r.start) for r in records)


def turnaround_by_asked(records) -> dict:
    """Mean turnaround per requested size (processors asked for), over job records."""
    acc: dict = {}
    for r in records:
        a = acc.setdefault(r.asked, [0, 0.0])
        a[0] += 1
        a[1] += r.end - r.submit
    return {p: s / n for p, (n, s) in sorted(acc.items())}


# --------------------------------------------------------------------------- per job


@dataclass
class JobRecord:
    """One completed job of a run (``keep_records``): the SWF writer's input."""

    id: object
    submit: float
    start: float
    end: float
    asked: int
    given: int
    folds: int
    runtime: float
    nodes: tuple = ()

    @property
    def wait(self) -> float:
        return self.start - self.submit

    @property
    def turnaround(self) -> float:
        return self.end - self.submit


# --------------------------------------------------------------------------- the observer


class SimMetrics:
    """An observer of the engine (plain work model) that keeps the counters of the lazy
    paper and the per-job records; :meth:`result` gives the metrics dict.

    ``observe`` is one call after every event; the integrals (busy node-time, jobs in
    system) are advanced at every event, as the numbers of a run depend on it. The per-job
    sums (turnaround, per size, L/S) are taken at the end from ``done``, in completion order."""

    def __init__(self, policy, *, until=None, completions=None, warmup=0, samples=20,
                 keep_records=False, keep_nodes=False):
        self.size = policy.topology.size
        self.running = policy.running
        self.until, self.completions, self.warmup = until, completions, warmup
        self.records = [] if keep_records else None
        self.done: list = []  # (allocated size, wait, turnaround) of the counted completions
        self.every = (until / samples) if (until and samples) else None
        self.delay_series: list = []  # (time, M of the jobs allocated so far)
        # S counts the nodes a job is given before any folding: a count request rounded up
        # to its cube or submesh (lazy 4.2)
        normalize = policy.normalize
        self.observe, self._state = _observer(self, normalize, keep_nodes)

    @property
    def completed(self) -> int:
        return self._state()["C"]

    def result(self, now: float, events: int) -> dict:
        """The metrics of a run that ended at ``now`` (the last event) after ``events``."""
        st = self._state()
        until, size, C, R, A = self.until, self.size, st["C"], st["R"], st["A"]
        area, sys_area, window, series = st["area"], st["sys_area"], st["window"], list(self.delay_series)
        # with both T and N the count may end the run before T: measure up to then
        by_time = until is not None and not (self.completions is not None and C >= self.completions)
        if by_time:
            dt = until - st["last"]
            if dt > 0:
                area += st["busy"] * dt
                sys_area += st["in_system"] * dt
            t = st["next_sample"]
            while self.every is not None and t <= until + 1e-9:
                series.append((t, R / A if A else 0.0))
                t += self.every
            T = span = until
            util = utilization(area, size, T)
            R0, A0 = (0.0, 0) if window is None else window[2:]
        else:
            T = now
            if window is None:  # fewer completions than the warm-up: nothing counted
                window = (now, area, R, A)
            t0, area0, R0, A0 = window
            span = now - t0
            util = utilization(area - area0, size, span)
        M = mean_queueing_delay(R - R0, A - A0)
        counted = len(self.done)
        X = throughput(C if by_time else counted, span)
        tat_sum, per_size = per_size_means(self.done)
        running = len(self.running)
        m = {
            "generated": int(st["in_system"]) + C, "completed": C, "allocated": A,
            "total_queueing_delay": R, "total_service_demand": st["S"],
            "mean_queueing_delay": M, "utilization": util, "throughput": X, "power": power(X, M),
            "measured_load": measured_load(st["S"], size, T),
            "mean_turnaround": mean(tat_sum, counted),
            "external_fragmentation": mean(st["frag_sum"], st["frag_n"]),
            "ls_ratio": ls_ratio(self.done),
            "mean_jobs_in_system": time_average(sys_area, T),
            "observation_time": T, "counted_completions": counted,
            "waiting_at_end": int(st["in_system"]) - running, "running_at_end": running,
            "events": events, "per_size": per_size,
            "delay_over_time": [[round(a, 9), b] for a, b in series],
        }
        if st["rejected"]:
            m["rejected"] = st["rejected"]
        return m


def _observer(m: SimMetrics, normalize, keep_nodes: bool):
    """``(observe, state)``: the observer's hook as a closure over its counters (cell
    variables cost the interpreter less than attributes; this runs once per event) and a
    function reading them. Busy nodes, jobs in system and the size are floats: the same
    values (small integers are exact) on the interpreter's fast path for floats."""
    size, running, warmup, every = float(m.size), m.running, m.warmup, m.every
    stop_after = m.completions if m.completions is not None else -1
    done, records, series, demand = m.done, m.records, m.delay_series, {}
    C = A = rejected = frag_n = 0
    R = S = area = sys_area = last = frag_sum = busy = in_system = 0.0
    next_sample = every if every is not None else math.inf
    window = (0.0, 0.0, 0.0, 0) if warmup == 0 else None  # (time, area, R, A) at the warm-up's end

    def observe(t, kind, item, starts):
        nonlocal C, A, rejected, frag_n, R, S, area, sys_area, last, frag_sum, busy, in_system
        nonlocal next_sample, window
        dt = t - last
        if dt:
            area += busy * dt
            sys_area += in_system * dt
            last = t
        while t >= next_sample:
            series.append((next_sample, R / A if A else 0.0))
            next_sample += every
        if kind == DEPART:
            g = item.allocation.size
            busy -= g
            in_system -= 1.0
            C += 1
            if C > warmup:
                sj = item.job
                done.append((g, item.time - sj.submit, t - sj.submit))
                if records is not None:
                    records.append(_record(t, item, keep_nodes))
            elif C == warmup:
                window = (t, area, R, A)
        elif kind == ARRIVE:
            in_system += 1.0
            req = item.request
            nodes = demand.get(req)
            if nodes is None:
                nodes = demand[req] = float(normalize(req).processors_needed)
            S += item.runtime * nodes
        elif kind == REJECT:
            rejected += 1
        if starts:
            for s in starts:
                R += s.time - s.job.submit
                busy += s.allocation.size
            A += len(starts)
        elif in_system > len(running):
            frag_sum += (size - busy) / size
            frag_n += 1
        return C == stop_after  # the N-th completion ends the run

    def state() -> dict:
        return {"C": C, "A": A, "rejected": rejected, "R": R, "S": S, "area": area,
                "sys_area": sys_area, "last": last, "frag_sum": frag_sum, "frag_n": frag_n, "busy": busy,
                "in_system": in_system, "next_sample": next_sample, "window": window}

    return observe, state


def _record(t, s, keep_nodes: bool) -> JobRecord:
    sj, a = s.job, s.allocation
    return JobRecord(sj.id, sj.submit, s.time, t, a.asked.processors_needed, a.size, a.folds, sj.runtime,
                     tuple(sorted(a.nodes)) if keep_nodes else ())


def per_size_means(done) -> tuple:
    """(turnaround sum, ``per_size``) of ``(allocated size, wait, turnaround)`` triples: per
    allocated size the completions, mean wait and mean turnaround."""
    tat_sum = 0.0
    by_size: dict = {}
    for g, wait, tat in done:
        tat_sum += tat
        w = by_size.get(g)
        if w is None:
            w = by_size[g] = [0, 0.0, 0.0]
        w[0] += 1
        w[1] += wait
        w[2] += tat
    return tat_sum, {str(k): {"completed": v[0], "mean_wait": v[1] / v[0], "mean_turnaround": v[2] / v[0]}
                     for k, v in sorted(by_size.items())}


# --------------------------------------------------------------------------- jobs that communicate


def comm_metrics(records) -> dict:
    """The run's communication metrics from per-job records of emulator.sim.comm (our
    extension, NETWORK.md 3.3): ``comm_completed`` (counted jobs that communicated),
    ``mean_message_delay`` and ``mean_message_contention`` (microseconds: the mean over those
    jobs of each job's mean over its messages, the dissertation's job-level delay averaged per
    job), ``mean_comm_run_time`` and ``mean_contention_free_run_time`` (job time units),
    ``mean_slowdown`` (mean of run time / contention-free run time) and ``messages`` (of
    those jobs)."""
    n = len(records)
    slow = [r["slowdown"] for r in records if not math.isnan(r["slowdown"])]
    return {
        "comm_completed": n,
        "mean_message_delay": mean(sum(r["mean_delay_us"] for r in records), n, math.nan),
        "mean_message_contention": mean(sum(r["mean_contention_us"] for r in records), n, math.nan),
        "mean_comm_run_time": mean(sum(r["run_time"] for r in records), n, math.nan),
        "mean_contention_free_run_time": mean(sum(r["contention_free_run_time"] for r in records), n, math.nan),
        "mean_slowdown": mean(sum(slow), len(slow), math.nan),
        "messages": sum(r["messages"] for r in records),
    }


# --------------------------------------------------------------------------- gang runs


def gang_metrics(policy_name: str, finished: list, counts: dict, *, short_threshold: float,
                 costs: dict) -> dict:
    """The gang simulator's metrics from its finished-job records (dicts with ``runtime``,
    ``turnaround``, ``slowdown``, ``finish``, ``level``) and its switch ``counts``:
    ``mean_slowdown`` (turnaround / run time), ``mean_turnaround_short`` and ``_long`` (run
    time <= / > ``short_threshold``), ``jobs_per_level`` (level of each parallel job when it
    finished), ``throughput`` = completed / time of the last completion, ``makespan``."""
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
        "throughput": n / makespan if makespan > 0 else None,
        "makespan": makespan,
        "jobs_per_level": {str(k): v for k, v in sorted(per_level.items())},
        **counts,
        **costs,
    }


__all__ = ["JobRecord", "SimMetrics", "busy_node_time", "comm_metrics", "gang_metrics", "ls_ratio", "mean",
           "mean_queueing_delay", "measured_load", "per_size_means", "power", "throughput", "time_average",
           "turnaround_by_asked", "utilization"]
