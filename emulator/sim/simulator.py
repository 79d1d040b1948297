"""The discrete-event simulator: the policy objects of ``scheduler/`` in virtual time.

The engine (emulator.sim.engine) with the plain work model (a started job departs after
``Start.runtime``) and the metrics observer (emulator.sim.metrics). At equal times
departures come first (so the nodes a job frees are there for a job arriving at the same
instant, as in the lazy paper's event-driven simulator), then the discipline's timer, then
arrivals; the remaining ties go in insertion order, so a run is a pure function of its job
stream. ``events`` = arrivals + departures + timers that fired.

A run ends at an observation time T (lazy paper 4.2: metrics over [0, T]), after N
completions (RSR paper 4.1: 50,500 completions), or, for a trace, when every job has
completed. Given both T and N, whichever comes first ends the run and the metrics are taken
up to that moment. A warm-up of W completions (RSR 4.1: the first 500 not counted) moves the
start of the one observation window to the W-th completion, with T as with N: every metric
(U, X, power, M, the counts) is measured over [W-th completion, end], and the result's
``window`` says so. The metrics are defined in emulator.sim.metrics.

    from scheduler.stack import StackConfig, build
    res = Simulation(build(StackConfig("hypercube:6", "buddy", "lazy")).policy, jobs, until=1e4).run()
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from typing import Callable, Iterable

from emulator.sim.engine import DEPART, Engine, cycle_gc_paused
from emulator.sim.metrics import JobRecord, SimMetrics, ls_ratio
from scheduler.jobs import Job
from scheduler.stack import StackConfig, build


class SimulationError(ValueError):
    pass


@dataclass
class SimResult:
    metrics: dict
    records: list = field(default_factory=list)  # metrics.JobRecord of counted completions
    rejected: list = field(default_factory=list)  # (job id, reason) with on_reject="skip"
    comm: list = field(default_factory=list)  # with a CommWork model: its records of counted jobs


class _Trace:
    """The ``trace`` callback as an observer: ("depart", t, Start) then ("start", t, Start)."""

    def __init__(self, fn):
        self.fn = fn

    def observe(self, t, kind, item, starts):
        if kind == DEPART:
            self.fn("depart", t, item)
        for s in starts:
            self.fn("start", t, s)


class Simulation:
    """Drive one discipline (a built stack's policy) with one job stream.

    ``until``: observation time T. ``completions``: stop after that many completions.
    ``warmup``: the observation window starts at that completion (with ``until`` or
    ``completions``); nothing before it is counted in any metric. Neither: run until every job
    has completed (trace replay). ``on_reject``: "error" (default: a job that can never fit is
    a clear error naming it) or "skip" (count it in ``rejected``). ``trace(kind, t, start)``
    is called for every "start" and "depart"; ``progress(now, completed)`` now and then.
    ``model``: the work model (default: a job runs for its run time); one with ``observe``
    also observes, and one with ``metrics(warmup)`` adds its metrics (emulator.sim.comm_work:
    jobs whose run time comes from their messages).
    """

    def __init__(self, discipline, jobs: Iterable[Job], *, until: float | None = None,
                 completions: int | None = None, warmup: int = 0, keep_records: bool = False,
                 keep_nodes: bool = False, samples: int = 20, on_reject: str = "error",
                 progress: Callable[[float, int], None] | None = None,
                 trace: Callable[[str, float, object], None] | None = None, model=None):
        if until is not None and (not math.isfinite(until) or until <= 0):
            raise SimulationError(f"observation time must be > 0, got {until}")
        if completions is not None and completions <= warmup:
            raise SimulationError("completions must exceed the warm-up count")
        if warmup < 0:
            raise SimulationError("warm-up must be >= 0")
        if on_reject not in ("error", "skip"):
            raise SimulationError(f"on_reject must be 'error' or 'skip', got {on_reject!r}")
        self.d = discipline
        self.jobs = jobs
        self.until = until
        self.completions = completions
        self.warmup = warmup
        self.keep_records = keep_records
        self.keep_nodes = keep_nodes
        self.samples = samples
        self.on_reject = on_reject
        self.progress = progress
        self.trace = trace
        self.model = model
        self.events = 0

    def run(self) -> SimResult:
        metrics = SimMetrics(self.d, until=self.until, completions=self.completions, warmup=self.warmup,
                             samples=self.samples, keep_records=self.keep_records, keep_nodes=self.keep_nodes)
        rejected = []

        def reject(job, error, t):
            if self.on_reject == "error":
                raise SimulationError(f"job {job.id}: {error}") from None
            rejected.append((job.id, str(error)))

        progress = None
        if self.progress is not None:
            progress = lambda now: self.progress(now, metrics.completed)  # noqa: E731
        model = self.model
        observers = ([metrics] + ([model] if hasattr(model, "observe") else [])
                     + ([_Trace(self.trace)] if self.trace else []))
        engine = Engine(self.d, self.jobs, model=model, observers=observers, on_reject=reject, progress=progress)
        # the plain work model: no cycles to collect (cycle_gc_paused); another may make some
        with cycle_gc_paused() if model is None else contextlib.nullcontext():
            engine.run(self.until)
            self.events = engine.events
            m = metrics.result(engine.now, engine.events)
        comm = []
        if hasattr(model, "metrics"):
            m.update(model.metrics(self.warmup))
            comm = model.counted(self.warmup) if hasattr(model, "counted") else []
        return SimResult(m, metrics.records or [], rejected, comm)


def simulate(topology, allocator: str, scheduler: str, jobs: Iterable[Job], *,
             reduction: str | None = None, params: dict | None = None, **kwargs) -> SimResult:
    """One run: build the stack by name (scheduler.stack) and drive it with ``jobs``."""
    stack = build(StackConfig(topology, allocator, scheduler, reduction=reduction, params=dict(params or {})))
    return Simulation(stack.policy, jobs, **kwargs).run()


__all__ = ["JobRecord", "SimResult", "Simulation", "SimulationError", "ls_ratio", "simulate"]
