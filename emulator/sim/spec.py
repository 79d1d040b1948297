"""One virtual-time run, specified (issue 29): a :class:`RunSpec` is the stack, the workload,
the stop rule, the work model by name and the observers of a run; :func:`emulator.sim.run.run`
turns it into one :class:`~emulator.sim.run.RunResult` whose metrics follow the one schema of
:mod:`emulator.sim.metrics`. ``mcemu simulate``, ``mcemu sweep`` and the experiments' points
(emulator.experiments._points) all build a RunSpec; nothing else runs the simulators.

**The workload's defaults are here and only here** (:class:`WorkloadSpec`): uniform sizes on a
cube and processor counts on a mesh (``size=None``), uniform residence times of mean 5.0, demand
dependent on size. A front end that shows a default reads it from these fields.

Work models (``work``):

* ``fixed``: a started job runs for its run time (the papers' model; emulator.sim.simulator).
* ``gang``: time sharing by the stack's gang policy (emulator.sim.gang): a finite job list --
  the first ``completions`` jobs of the stream, or those submitted before ``until`` -- each run to
  completion (``cut_at_until``: stop at ``until`` instead and measure the completed ones).
  Options: ``switch_cost``, ``reload_time``, ``reload_rate``, ``short_threshold`` (default the
  median run time), ``closed``, ``cut_at_until``.
* ``comm``: jobs that communicate (emulator.sim.comm_work, NETWORK.md 3.3): every job draws one of
  ``comm`` (``--comm`` specs, or ``(CommProfile, share)`` pairs); options ``net_time_unit``
  (microseconds per time unit, or "auto"), ``flit_time``, ``message_length``.

This module imports nothing heavy: the command line reads its defaults when it builds its parser.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Mapping

WORK_MODELS = ("fixed", "gang", "comm")
WORK_OPTIONS = {
    "fixed": {},
    "gang": {"switch_cost": 0.0, "reload_time": 0.0, "reload_rate": 0.5, "short_threshold": None,
             "closed": None, "cut_at_until": False},
    "comm": {"comm": (), "net_time_unit": "auto", "flit_time": 0.05, "message_length": 500},
}


class RunSpecError(ValueError):
    """A run that cannot be specified: an unknown work model, a negative time, options that do
    not go together. Raised before anything runs."""


def _number(what: str, v, *, low: float = 0.0, strict: bool = True, integer: bool = False, none_ok: bool = True):
    if v is None and none_ok:
        return
    kind = int if integer else (int, float)
    if isinstance(v, bool) or not isinstance(v, kind) or not math.isfinite(v) or (v <= low if strict else v < low):
        what_num = "an integer" if integer else "a finite number"
        raise RunSpecError(f"{what} must be {what_num} {'>' if strict else '>='} {low:g}, got {v!r}")


def default_size(topology) -> str:
    """The size distribution when none is named: uniform cube dimensions on a hypercube,
    uniform processor counts on a mesh (a topology name or a parsed topology)."""
    kind = getattr(topology, "kind", None) or str(topology).split(":", 1)[0]
    return "uniform" if kind == "hypercube" else "processors"


@dataclass(frozen=True)
class WorkloadSpec:
    """The jobs: a synthetic Poisson stream at ``load`` (or mean inter-arrival time ``iatm``,
    dissertation 8.2), or the SWF log ``trace`` (its first ``limit`` jobs; with ``load``, its
    submit times scaled to that offered load). ``count``: the first ``count`` jobs of the stream
    as a fixed list, run to the end (lazy Figure 9)."""

    load: float | None = None
    iatm: float | None = None
    size: str | None = None  # None: default_size(topology)
    service: str = "uniform"
    service_mean: float = 5.0
    demand: str = "dependent"
    size_params: Mapping | None = None
    service_params: Mapping | None = None
    seed: int = 0
    count: int | None = None
    trace: str | None = None
    time_unit: float = 1.0
    limit: int | None = None

    def check(self) -> None:
        _number("load", self.load)
        _number("iatm", self.iatm)
        _number("service_mean", self.service_mean)
        _number("time_unit", self.time_unit)
        _number("seed", self.seed, low=0, strict=False, integer=True, none_ok=False)
        _number("count", self.count, integer=True)
        _number("limit", self.limit, integer=True)
        if self.demand not in ("dependent", "independent"):
            raise RunSpecError(f"demand must be 'dependent' or 'independent', got {self.demand!r}")
        if self.trace is None and self.load is None and self.iatm is None:
            raise RunSpecError("a synthetic workload needs a load (or iatm), else give a trace")
        if self.trace is not None and (self.count is not None or self.iatm is not None):
            raise RunSpecError("count and iatm do not apply to a trace (its jobs are the log's)")
        if self.trace is None and self.limit is not None:
            raise RunSpecError("limit applies to a trace only")


@dataclass(frozen=True)
class StopRule:
    """Observation time ``until`` (lazy 4.2), ``completions`` (RSR 4.1), or neither (a trace or
    a fixed list runs to its end); ``warmup`` completions are not counted (the window starts at
    the W-th completion)."""

    until: float | None = None
    completions: int | None = None
    warmup: int = 0

    def check(self) -> None:
        _number("until (observation time)", self.until)
        _number("completions", self.completions, integer=True)
        _number("warmup", self.warmup, low=0, strict=False, integer=True, none_ok=False)
        if self.completions is not None and self.completions <= self.warmup:
            raise RunSpecError(f"completions ({self.completions}) must exceed the warm-up ({self.warmup})")


@dataclass(frozen=True)
class Observers:
    """What a run keeps or reports besides its metrics: ``records`` (a JobRecord per counted
    completion: SWF, jobs.csv, per-size turnarounds), ``nodes`` (their node sets too),
    ``samples`` (points of ``delay_over_time``), ``progress(now, completed)`` now and then and
    ``trace(kind, t, start)`` at every start and departure."""

    records: bool = False
    nodes: bool = False
    samples: int = 20
    progress: Callable | None = None
    trace: Callable | None = None


@dataclass(frozen=True)
class RunSpec:
    """One run. ``stack``: a scheduler.stack.StackConfig (its ``gang`` goes with the gang work
    model only). Checked when made: a bad spec is a :class:`RunSpecError`."""

    stack: object
    workload: WorkloadSpec = field(default_factory=WorkloadSpec)
    stop: StopRule = field(default_factory=StopRule)
    work: str = "fixed"
    work_options: Mapping = field(default_factory=dict)
    observe: Observers = field(default_factory=Observers)

    def __post_init__(self):
        if self.work not in WORK_MODELS:
            raise RunSpecError(f"unknown work model {self.work!r}; known: {', '.join(WORK_MODELS)}")
        unknown = sorted(set(self.work_options) - set(WORK_OPTIONS[self.work]))
        if unknown:
            known = ", ".join(WORK_OPTIONS[self.work]) or "none"
            raise RunSpecError(f"the {self.work} work model has no option {unknown[0]!r} (its options: {known})")
        self.workload.check()
        self.stop.check()
        _number("samples", self.observe.samples, low=0, strict=False, integer=True, none_ok=False)
        gang = getattr(self.stack, "gang", None)
        if (self.work == "gang") != (gang is not None):
            raise RunSpecError("a gang policy needs the gang work model, and the gang work model a gang policy"
                               f" (work {self.work!r}, gang {gang!r})")
        getattr(self, f"_check_{self.work}")()

    def option(self, name: str):
        return self.work_options.get(name, WORK_OPTIONS[self.work][name])

    def _check_fixed(self) -> None:
        self._needs_an_end()

    def _check_gang(self) -> None:
        for k in ("switch_cost", "reload_time"):
            _number(k, self.option(k), strict=False, none_ok=False)
        _number("short_threshold", self.option("short_threshold"), strict=False)
        _number("closed", self.option("closed"), integer=True)
        r = self.option("reload_rate")
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not 0 < r <= 1:
            raise RunSpecError(f"reload_rate must be in (0, 1], got {r!r}")
        if self.stop.warmup:
            raise RunSpecError("warmup does not apply to the gang work model (every job of its list is counted)")
        if self.observe.records or self.observe.trace is not None:
            raise RunSpecError("job records and start/depart traces are the fixed and comm work models' "
                               "(a gang run reports its jobs in RunResult.jobs)")
        w = self.workload
        if w.trace is None and w.count is None and self.stop.until is None and self.stop.completions is None:
            raise RunSpecError("a gang run needs a finite job list: until, completions, count or a trace")
        if self.option("cut_at_until") and self.stop.until is None:
            raise RunSpecError("cut_at_until needs until")

    def _check_comm(self) -> None:
        if not self.option("comm"):
            raise RunSpecError("the comm work model needs at least one profile (comm)")
        if getattr(self.stack, "reduction", None) is not None:
            raise RunSpecError("the comm work model does not combine with a size reduction "
                               "(one rank per node, no folding)")
        _number("flit_time", self.option("flit_time"), none_ok=False)
        _number("message_length", self.option("message_length"), integer=True, none_ok=False)
        unit = self.option("net_time_unit")
        if not (isinstance(unit, str) and unit.strip().lower() == "auto"):
            _number("net_time_unit (microseconds per time unit, or auto)", unit, none_ok=False)
        self._needs_an_end()

    def _needs_an_end(self) -> None:
        w, s = self.workload, self.stop
        if w.trace is None and w.count is None and s.until is None and s.completions is None:
            raise RunSpecError("a synthetic stream needs until (observation time) or completions")


__all__ = ["Observers", "RunSpec", "RunSpecError", "StopRule", "WORK_MODELS", "WORK_OPTIONS", "WorkloadSpec",
           "default_size"]
