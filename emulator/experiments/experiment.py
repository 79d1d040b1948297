"""What an experiment is: an :class:`Experiment` (a named grid of points, its metrics, panels and
check), the :class:`Results` of its points, the :class:`Check` that turns a paper's claim into
a computed verdict, and the number format the reports share. Nothing here runs anything."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Callable


class ReproduceError(ValueError):
    """A bad experiment definition or request (unknown name, malformed grid)."""


@dataclass
class Panel:
    """One subplot, and one table in the report: ``metric`` against parameter ``x`` for the
    points matching ``where``, one series per ``series(params)`` label. ``xmetrics`` instead
    takes x from a list of (x value, metric name) pairs (a curve inside each point: lazy
    Figure 8). ``kind`` "line" or "bar" (x categorical)."""

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

    def mean(self, metric: str) -> float:
        return self.stats.get(metric, (math.nan, math.nan))[0]

    def ci(self, metric: str) -> float:
        return self.stats.get(metric, (math.nan, math.nan))[1]


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
    """The sub-claims of a paper's statement, each tested on our numbers. The verdict is
    computed: agree (all hold), disagree (none), partly agree (some)."""

    def __init__(self):
        self.items: list[tuple[bool, str]] = []

    def __call__(self, ok, text: str) -> bool:
        ok = bool(ok)
        self.items.append((ok, text))
        return ok

    @property
    def verdict(self) -> str:
        if not self.items:
            return "inconclusive"
        held = sum(ok for ok, _ in self.items)
        if held == len(self.items):
            return "agree"
        return "disagree" if held == 0 else "partly agree"


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
