"""The simulator's metrics observer (:class:`SimMetrics`): the counters of a run, kept event by
event over the one observation window of the package docstring, and the metrics dict of a run
from them."""
from __future__ import annotations

import math
from array import array
from dataclasses import dataclass

from emulator.sim.engine import ARRIVE, BATCH, DEPART, REJECT
from emulator.sim.metrics.formulas import (JobRecord, ls_ratio_of, mean, mean_queueing_delay, measured_load,
                                           per_size_means, power, throughput, time_average, utilization)


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

    Issue 18: ``observe`` only notes the event and ``flush`` (:func:`_folder`) folds the noted
    events into the counters every ``BATCH`` events (the engine's) and whenever the state is
    read: the same arithmetic on the same values in the same order, so the same numbers, at
    about half the cost of doing it inside the event loop (the counters are locals of
    ``flush`` there, and the loop runs hot). The stop at the N-th completion needs only the
    count of departures, kept by ``observe``."""
    every = m.every
    stop_after = m.completions if m.completions is not None else -1
    # the counters: C, A, G, rejected, frag_n, R, S, area, sys_area, last, frag_sum, busy,
    # in_system, next_sample and the totals where the window starts: 0, or at the W-th
    # completion (None until then)
    st = [0, 0, 0, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, every if every is not None else math.inf,
          _Totals(0.0, 0.0, 0.0, 0, 0.0, 0.0, 0.0, 0, 0) if m.warmup == 0 else None]
    log: list = []  # (t, kind, item, starts) of the events not yet folded in
    push = log.append
    flush = _folder(m, normalize, keep_nodes, st, log)
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

    def state() -> dict:
        flush()
        C, A, G, rejected, frag_n, R, S, area, sys_area, last, frag_sum, busy, in_system, next_sample, window = st
        return {"C": C, "A": A, "G": G, "rejected": rejected, "R": R, "S": S, "area": area,
                "sys_area": sys_area, "last": last, "frag_sum": frag_sum, "frag_n": frag_n, "busy": busy,
                "in_system": in_system, "next_sample": next_sample, "window": window}

    return observe, state, ((push, flush) if stop_after == -1 else None)


def _folder(m: SimMetrics, normalize, keep_nodes: bool, st: list, log: list):
    """``flush()``: fold the events noted in ``log`` into the counters ``st`` (in place) and
    empty the log. The running jobs, which the fragmentation sample compares with the jobs in
    system, are the starts so far less the departures (A - C, plus those running before the
    first event): every start is a decision the observer sees, every departure an event.
    Busy nodes, jobs in system and the size are floats: the same values (small integers are
    exact) on the interpreter's fast path for floats."""
    size, warmup, every = float(m.size), m.warmup, m.every
    running_before = len(m.running)
    records, series, demand = m.records, m.delay_series, {}
    done_size, done_wait, done_tat = m.done.sizes.append, m.done.waits.append, m.done.turnarounds.append

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

    return flush


def _record(t, s, keep_nodes: bool) -> JobRecord:
    sj, a = s.job, s.allocation
    return JobRecord(sj.id, sj.submit, s.time, t, a.asked.processors_needed, a.size, a.folds, sj.runtime,
                     tuple(sorted(a.nodes)) if keep_nodes else ())
