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

One observation window per run, for every metric. Without a warm-up it is [0, T] (lazy 4.2)
or, for a run to N completions or to the end of a trace, [0, the last event]. With a warm-up
of W completions (RSR paper 4.1: 50,500 completions, the first 500 not counted) the window
starts at the W-th completion, with ``--time T`` as with ``--jobs N``: G, C, A, R, S, M, U,
X, power, the measured load, the turnaround, per-size means, L/S, the fragmentation and the
jobs in system all count only what happens in it (a job allocated in the warm-up is not in
A or R; one that completes after it is in C and in the turnaround means; U clips the
node-time to the window). ``observation_time`` is the window's length and ``window`` states
it: ``{"start", "end", "warmup_completions", "ends_by"}`` (``ends_by``: "time",
"completions" or "drained"). ``delay_over_time`` alone is cumulative from 0 (lazy Figure 8
plots M of every job allocated so far).
"""
from __future__ import annotations

import math
from array import array
from dataclasses import dataclass
from operator import itemgetter

from emulator.sim.engine import ARRIVE, BATCH, DEPART, REJECT

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
    return ls_ratio_of(list(map(itemgetter(0), size_waits)), list(map(itemgetter(1), size_waits)))


def ls_ratio_of(sizes, waits) -> float:
    """:func:`ls_ratio` of the columns: ``sizes[i]`` and ``waits[i]`` of job i."""
    if len(sizes) < 2:
        return float("nan")
    import numpy as np  # here: the live monitor imports these formulas and never calls this

    sizes, waits = np.asarray(sizes), np.asarray(waits, dtype=float)
    large = sizes > np.median(sizes)  # the median of the sizes (of two middle ones, their mean)
    n_large = int(np.count_nonzero(large))
    if n_large == 0 or n_large == len(sizes):
        return float("nan")
    ms = _running_sum(waits[~large]) / (len(sizes) - n_large)
    ml = _running_sum(waits[large]) / n_large
    if ms == 0:
        return float("inf") if ml > 0 else 1.0
    return ml / ms


def _running_sum(values) -> float:
    """The sum of a numpy array added one value after the other, in order: what a Python loop
    ``total += v`` from 0.0 gives (numpy's ``sum`` adds pairwise, whose rounding differs;
    issue 18: the per-job sums of a run, by C loops with the same numbers)."""
    import numpy as np

    return float(np.add.accumulate(values)[-1]) if len(values) else 0.0


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
    system) are advanced at every event, as the numbers of a run depend on it (in batches of
    events, see ``_observer``; ``done``, ``records`` and ``delay_series`` are complete once
    :meth:`result` or :attr:`completed` has been read). The per-job
    sums (turnaround, per size, L/S) are taken at the end from ``done``, in completion order:
    its columns ``sizes`` (allocated), ``waits`` and ``turnarounds`` are arrays of machine
    numbers (issue 18: a tuple and two floats per completion were a sixth of a NASA replay's
    memory, and each new page of memory costs a page fault).

    ``batch`` (without a completion count to stop at): ``(note, flush)``, which an engine may
    call instead of ``observe``, the same numbers: ``note((t, kind, item, decisions))`` for
    every event and ``flush()`` now and then (issue 18: no call per event)."""

    def __init__(self, policy, *, until=None, completions=None, warmup=0, samples=20,
                 keep_records=False, keep_nodes=False):
        self.size = policy.topology.size
        self.running = policy.running
        self.until, self.completions, self.warmup = until, completions, warmup
        self.records = [] if keep_records else None
        self.done = _Completions()  # (allocated size, wait, turnaround) of the counted completions
        self.every = (until / samples) if (until and samples) else None
        self.delay_series: list = []  # (time, M of the jobs allocated so far)
        # S counts the nodes a job is given before any folding: a count request rounded up
        # to its cube or submesh (lazy 4.2)
        normalize = policy.normalize
        self.observe, self._state, self.batch = _observer(self, normalize, keep_nodes)

    @property
    def completed(self) -> int:
        return self._state()["C"]

    def result(self, now: float, events: int) -> dict:
        """The metrics of a run that ended at ``now`` (the last event) after ``events``, over
        the one observation window of the module docstring."""
        st = self._state()
        until, size, C = self.until, self.size, st["C"]
        area, sys_area, series = st["area"], st["sys_area"], list(self.delay_series)
        R, A = st["R"], st["A"]
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
            end = until
        else:
            end = now
        cur = _Totals(end, area, R, A, st["S"], sys_area, st["frag_sum"], st["frag_n"], st["G"])
        # fewer completions than the warm-up: the window is empty, nothing counted
        w0 = st["window"] or cur
        span = end - w0.time
        done = self.done
        Rw, Aw, counted = R - w0.R, A - w0.A, len(done.sizes)
        M = mean_queueing_delay(Rw, Aw)
        X = throughput(counted, span)
        Sw = st["S"] - w0.S
        tat_sum, per_size = per_size_means(done.sizes, done.waits, done.turnarounds)
        running = len(self.running)
        generated = st["G"]
        ends_by = "time" if by_time else ("completions" if self.completions is not None
                                          and C >= self.completions else "drained")
        m = {
            "generated": generated - w0.G, "completed": counted, "allocated": Aw,
            "total_queueing_delay": Rw, "total_service_demand": Sw,
            "mean_queueing_delay": M, "utilization": utilization(area - w0.area, size, span),
            "throughput": X, "power": power(X, M),
            "measured_load": measured_load(Sw, size, span),
            "mean_turnaround": mean(tat_sum, counted),
            "external_fragmentation": mean(st["frag_sum"] - w0.frag_sum, st["frag_n"] - w0.frag_n),
            "ls_ratio": ls_ratio_of(done.sizes, done.waits),
            "mean_jobs_in_system": time_average(sys_area - w0.sys_area, span),
            "observation_time": span, "counted_completions": counted,
            "window": {"start": w0.time, "end": end, "warmup_completions": self.warmup, "ends_by": ends_by},
            "waiting_at_end": int(st["in_system"]) - running, "running_at_end": running,
            "events": events, "per_size": per_size,
            "delay_over_time": [[round(a, 9), b] for a, b in series],
        }
        if st["rejected"]:
            m["rejected"] = st["rejected"]
        return m


class _Completions:
    """The counted completions, in completion order, as columns of machine numbers."""

    __slots__ = ("sizes", "waits", "turnarounds")

    def __init__(self):
        self.sizes, self.waits, self.turnarounds = array("q"), array("d"), array("d")

    def __len__(self) -> int:
        return len(self.sizes)


@dataclass(frozen=True)
class _Totals:
    """The running totals at one moment: where the observation window starts (the W-th
    completion) and where it ends."""

    time: float
    area: float
    R: float
    A: int
    S: float
    sys_area: float
    frag_sum: float
    frag_n: int
    G: int


def _observer(m: SimMetrics, normalize, keep_nodes: bool):
    """``(observe, state, batch)``: the observer's hook, a function reading its counters and,
    when the observer never stops a run, the engine's batch hooks (``(note, flush)``; see
    :class:`SimMetrics`), else None.

    Issue 18: ``observe`` only notes the event and ``flush`` folds the noted events into the
    counters every ``BATCH`` events (the engine's) and whenever the state is read: the same
    arithmetic on the same values in the same order, so the same numbers, at about half the
    cost of doing it inside the event loop (the counters are locals of ``flush`` there, and
    the loop runs hot). The stop at the N-th completion needs only the count of departures, kept by
    ``observe``. The running jobs, which the fragmentation sample compares with the jobs in
    system, are the starts so far less the departures (A - C, plus those running before the
    first event): every start is a decision the observer sees, every departure an event.
    Busy nodes, jobs in system and the size are floats: the same values (small integers are
    exact) on the interpreter's fast path for floats."""
    size, warmup, every = float(m.size), m.warmup, m.every
    running_before = len(m.running)
    stop_after = m.completions if m.completions is not None else -1
    records, series, demand = m.records, m.delay_series, {}
    done_size, done_wait, done_tat = m.done.sizes.append, m.done.waits.append, m.done.turnarounds.append
    # the counters: C, A, G, rejected, frag_n, R, S, area, sys_area, last, frag_sum, busy,
    # in_system, next_sample and the totals where the window starts: 0, or at the W-th
    # completion (None until then)
    st = [0, 0, 0, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, every if every is not None else math.inf,
          _Totals(0.0, 0.0, 0.0, 0, 0.0, 0.0, 0.0, 0, 0) if warmup == 0 else None]
    log: list = []  # (t, kind, item, starts) of the events not yet folded in
    push = log.append
    departed = 0

    if stop_after == -1:
        def observe(t, kind, item, starts):
            push((t, kind, item, starts))
            if len(log) >= BATCH:
                flush()
            return False
    else:
        def observe(t, kind, item, starts):
            nonlocal departed
            push((t, kind, item, starts))
            if kind == DEPART:
                departed += 1  # C, as flush will count it
            if len(log) >= BATCH:
                flush()
            return departed == stop_after  # the N-th completion ends the run

    def flush():
        C, A, G, rejected, frag_n, R, S, area, sys_area, last, frag_sum, busy, in_system, next_sample, window = st
        for t, kind, item, starts in log:
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
                    done_size(g)
                    done_wait(item.time - sj.submit)
                    done_tat(t - sj.submit)
                    if records is not None:
                        records.append(_record(t, item, keep_nodes))
                elif C == warmup:
                    # the window opens at this instant: the jobs this departure lets start
                    # (and the fragmentation sample it may leave) are in it
                    window = _Totals(t, area, R, A, S, sys_area, frag_sum, frag_n, G)
            elif kind == ARRIVE:
                G += 1
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
            elif in_system > A - C + running_before:  # jobs wait
                frag_sum += (size - busy) / size
                frag_n += 1
        log.clear()
        st[:] = C, A, G, rejected, frag_n, R, S, area, sys_area, last, frag_sum, busy, in_system, next_sample, window

    def state() -> dict:
        flush()
        C, A, G, rejected, frag_n, R, S, area, sys_area, last, frag_sum, busy, in_system, next_sample, window = st
        return {"C": C, "A": A, "G": G, "rejected": rejected, "R": R, "S": S, "area": area,
                "sys_area": sys_area, "last": last, "frag_sum": frag_sum, "frag_n": frag_n, "busy": busy,
                "in_system": in_system, "next_sample": next_sample, "window": window}

    return observe, state, ((push, flush) if stop_after == -1 else None)


def _record(t, s, keep_nodes: bool) -> JobRecord:
    sj, a = s.job, s.allocation
    return JobRecord(sj.id, sj.submit, s.time, t, a.asked.processors_needed, a.size, a.folds, sj.runtime,
                     tuple(sorted(a.nodes)) if keep_nodes else ())


def per_size_means(sizes, waits, turnarounds) -> tuple:
    """(turnaround sum, ``per_size``) of the columns of completions (allocated size, wait,
    turnaround): per allocated size the completions, mean wait and mean turnaround. The sums
    run in completion order (:func:`_running_sum`), within each size too."""
    import numpy as np  # here: the live monitor imports these formulas and never calls this

    sizes = np.asarray(sizes, dtype=np.int64)
    waits, turnarounds = np.asarray(waits, dtype=float), np.asarray(turnarounds, dtype=float)
    if not len(sizes):
        return 0.0, {}
    order = np.argsort(sizes, kind="stable")  # by size, in completion order within a size
    by_size = sizes[order]
    cuts = [0, *(np.flatnonzero(by_size[1:] != by_size[:-1]) + 1).tolist(), len(order)]
    per_size = {}
    for a, b in zip(cuts, cuts[1:]):
        rows, n = order[a:b], b - a
        per_size[str(int(by_size[a]))] = {"completed": n, "mean_wait": _running_sum(waits[rows]) / n,
                                          "mean_turnaround": _running_sum(turnarounds[rows]) / n}
    return _running_sum(turnarounds), per_size


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


__all__ = ["JobRecord", "SimMetrics", "busy_node_time", "comm_metrics", "gang_metrics", "ls_ratio", "ls_ratio_of", "mean",
           "mean_queueing_delay", "measured_load", "per_size_means", "power", "throughput", "time_average",
           "turnaround_by_asked", "utilization"]
