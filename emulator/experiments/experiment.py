"""What an experiment is: an :class:`Experiment` (a named grid of points, its metrics, panels and
check), the :class:`Results` of its points, the :class:`Check` that turns a paper's claim into
a computed verdict, and the number format the reports share. Nothing here runs anything."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Callable

from emulator.experiments import verdict


class ReproduceError(ValueError):
    """A bad experiment definition or request (unknown name, malformed grid)."""


@dataclass
class Panel:
    """One subplot, and one table in the report: ``metric`` against parameter ``x`` for the
    points matching ``where``, one series per ``series(params)`` label. ``xmetrics`` instead
    takes x from a list of (x value, metric name) pairs (a curve inside each point: lazy
    Figure 8). ``kind`` "line", "bar" (x categorical) or "contour" (emulator.experiments.plot)."""

    title: str
    metric: str
    x: str = "load"
    where: dict = field(default_factory=dict)
    series: Callable[[dict], str] | str = "scheduler"
    ylabel: str = ""
    xlabel: str = ""
    logy: bool = False
    kind: str = "line"
    xmetrics: list | None = None
    hline: str | None = None  # a metric drawn as a dashed reference (lazy Fig. 9's last arrival)
    linestyle: Callable[[str], str] | None = None  # series label -> matplotlib style ("-", ":")
    # a measured metric drawn on the x axis in place of parameter ``x`` (chapter 7 plots against the
    # utilization the machine reached, not the offered load); the tables keep ``x`` as their rows
    xmetric: str | None = None

    def label(self, params: dict) -> str:
        return self.series(params) if callable(self.series) else str(params.get(self.series))


@dataclass
class Experiment:
    name: str
    paper: str
    figure: str
    title: str
    claim: str
    point: Callable[[dict, int], dict]
    grid: Callable[[bool], list]
    metrics: tuple
    panels: list
    check: Callable[["Results"], "Check"]
    settings: Callable[[bool], str] | str = ""
    notes: str = ""
    stop_on: tuple | None = None
    min_reps: int = 3
    max_reps: int = 30
    quick_reps: int = 2
    precision: float = 0.05
    deterministic: bool = False
    table: Callable[["Results"], str] | None = None
    layout: tuple | None = None  # (rows, cols) of the figure

    def caps(self, quick: bool) -> tuple[int, int]:
        if self.deterministic:
            return 1, 1
        if quick:
            r = max(1, self.quick_reps)
            return min(self.min_reps, r), r
        return self.min_reps, max(self.min_reps, self.max_reps)

    def settings_text(self, quick: bool) -> str:
        return self.settings(quick) if callable(self.settings) else self.settings


@dataclass
class PointResult:
    params: dict
    reps: int
    capped: bool
    stats: dict  # metric -> (mean, half-width)
    # metric -> its values in replications 0, 1, ... (from runs.jsonl), when known: a difference of
    # two points is then judged on its paired interval (verdict.Est)
    samples: dict | None = field(default=None, repr=False, compare=False)

    def mean(self, metric: str) -> float:
        return self.stats.get(metric, (math.nan, math.nan))[0]

    def ci(self, metric: str) -> float:
        return self.stats.get(metric, (math.nan, math.nan))[1]

    def est(self, metric: str) -> verdict.Est:
        mu, hw = self.stats.get(metric, (math.nan, math.nan))
        reps = (self.samples or {}).get(metric)
        return verdict.Est(mu, hw, tuple(reps) if reps is not None and hw != 0 else None)


class Results:
    """The finished points of one experiment, with lookups for checks and plots."""

    def __init__(self, experiment: Experiment, points: list[PointResult], quick: bool):
        self.experiment = experiment
        self.points = points
        self.quick = quick

    def select(self, **where) -> list[PointResult]:
        return [p for p in self.points if all(_match(p.params.get(k), v) for k, v in where.items())]

    def get(self, **where) -> PointResult:
        found = self.select(**where)
        if len(found) != 1:
            raise ReproduceError(f"{self.experiment.name}: {len(found)} points match {where}")
        return found[0]

    def mean(self, metric: str, **where) -> float:
        return self.get(**where).mean(metric)

    def est(self, metric: str, **where) -> verdict.Est:
        """The mean of ``metric`` at the one point matching ``where``, with its 95% half-width."""
        return self.get(**where).est(metric)

    def values(self, key: str, **where) -> list:
        """Sorted distinct values of parameter ``key`` among the matching points."""
        return sorted({_hashable(p.params.get(key)) for p in self.select(**where)}, key=_sort_key)


def _hashable(v):
    return json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v


def _match(value, want) -> bool:
    if callable(want):
        return bool(want(value))
    return _hashable(value) == _hashable(want)


def _sort_key(v):
    return (0, v, "") if isinstance(v, (int, float)) and not isinstance(v, bool) else (1, 0, str(v))


class Check:
    """The sub-claims of a paper's statement, each tested on our numbers under the one verdict
    policy of :mod:`.verdict`: ``c(outcome, text, tol=..., why=...)`` records a sub-claim whose
    outcome is one of verdict.HOLDS / FAILS / INCONCLUSIVE (or a bool for an exact claim on a
    deterministic result); ``sensitivity`` records the other reading of an ambiguous text (not
    scored); ``note`` a row that cannot be judged (not informative, not reproducible in
    saturation) with its evidence. A tolerance must come with its reason."""

    def __init__(self):
        self.subs: list[verdict.Sub] = []

    def __call__(self, outcome, text: str, *, tol: str = "", why: str = "") -> bool:
        return self._add(outcome, text, tol, why, "claim")

    def sensitivity(self, outcome, text: str, *, tol: str = "", why: str = "") -> bool:
        return self._add(outcome, text, tol, why, "sensitivity")

    def note(self, outcome: str, text: str) -> bool:
        if outcome not in (verdict.NOT_INFORMATIVE, verdict.SATURATED):
            raise ReproduceError(f"a note is {verdict.NOT_INFORMATIVE!r} or {verdict.SATURATED!r}, not {outcome!r}")
        return self._add(outcome, text, "", "", "note")

    def _add(self, outcome, text, tol, why, role) -> bool:
        if tol and not why:
            raise ReproduceError(f"a tolerance without its reason: {text}")
        sub = verdict.Sub(verdict.as_outcome(outcome), text, tol, why, role)
        self.subs.append(sub)
        return sub.ok

    @property
    def items(self) -> list[tuple[bool, str]]:
        """(holds, text) of the scored sub-claims (the old form, for callers that want it)."""
        return [(s.ok, s.text) for s in self.subs if s.role == "claim"]

    @property
    def counts(self) -> dict:
        return verdict.counts(self.subs)

    @property
    def verdict(self) -> str:
        return verdict.roll_up(self.subs)


def fmt(v: float, digits: int = 4) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if isinstance(v, float) and math.isinf(v):
        return "inf"
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    return f"{v:.{digits}g}"
