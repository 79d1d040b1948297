"""``mcemu reproduce``: re-run a figure or table of the papers and say whether we agree.

An :class:`Experiment` is a named grid of points (policy x load x ...). Each point is a pure
function ``point(params, seed) -> {metric: float}`` (top level, so a process pool can pickle
it by reference). The runner:

* runs independent replications of every point until the 95% confidence half-width of each
  metric in ``stop_on`` is within ``precision`` (5%) of its mean -- the lazy paper's own
  criterion (section 4) -- with at least ``min_reps`` and at most ``max_reps`` replications; a
  point that reaches the cap without meeting the target is marked ``capped`` (typically a
  saturated system whose delay grows with the length of the run);
* gives replication r of every point the same seed (a hash of the experiment name and r):
  replications of one point are independent, and the policies of one figure are compared
  on identical job streams (common random numbers), which sharpens every comparison;
* spreads the runs over a process pool (``jobs`` workers, default every core), shows a Rich
  progress bar on a terminal, and appends each finished replication to ``DIR/NAME/runs.jsonl``
  at once, so an interrupted run resumes where it stopped: a replication is identified by
  the point's parameters and its index and is never recomputed;
* writes ``results.csv`` (one row per point and metric: parameters, mean, CI half-width,
  replications, capped), ``results.json``, ``figure.png`` and ``REPORT.md`` (the paper's claim,
  our numbers, a verdict computed by the experiment's own check, the settings used).

Nothing here knows a paper: the experiments live in :mod:`emulator.experiments`.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections import defaultdict
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from emulator.jsonable import jsonable as _jsonable

# Two-sided 95% Student t quantiles t_{0.975, df} for df = 1..30; beyond, the normal 1.96
# is within 2% (no scipy dependency for one table).
_T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


class ReproduceError(ValueError):
    """A bad experiment definition or request (unknown name, malformed grid)."""


def t975(df: int) -> float:
    if df < 1:
        return math.inf
    return _T975[df - 1] if df <= len(_T975) else 1.96 + 2.4 / df  # smooth tail toward 1.96


def mean_ci(values: Iterable[float]) -> tuple[float, float, int]:
    """(mean, 95% half-width, count) of the finite values; the half-width is inf with one
    value and nan with none."""
    xs = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    n = len(xs)
    if n == 0:
        return math.nan, math.nan, 0
    m = sum(xs) / n
    if n == 1:
        return m, math.inf, 1
    var = sum((x - m) ** 2 for x in xs) / (n - 1)
    return m, t975(n - 1) * math.sqrt(var / n), n


def precise_enough(values: Iterable[float], precision: float) -> bool:
    """The stopping rule: half-width <= precision x |mean|. A metric with no finite value
    (an L/S ratio with no large job) cannot be improved by more runs and counts as met."""
    m, hw, n = mean_ci(values)
    if n == 0:
        return True
    if n == 1:
        return False
    return hw <= precision * abs(m) or hw == 0.0


def reps_needed(values: Iterable[float], precision: float) -> int:
    """Rough total count for the target, from the current spread (normal approximation)."""
    m, hw, n = mean_ci(values)
    if n < 2 or not math.isfinite(hw) or m == 0:
        return n + 1
    return max(n + 1, math.ceil(n * (hw / (precision * abs(m))) ** 2))


def rep_seed(name: str, rep: int) -> int:
    h = hashlib.sha256(f"{name}:{rep}".encode()).digest()
    return int.from_bytes(h[:4], "big")


def point_key(params: dict) -> str:
    return json.dumps(params, sort_keys=True, separators=(",", ":"), default=str)


# =========================================================================== experiments


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


# =========================================================================== runner


def _load_runs(path: Path) -> dict:
    done: dict[str, dict[int, dict]] = defaultdict(dict)
    if not path.exists():
        return done
    with path.open() as f:
        for line in f:
            try:
                rec = json.loads(line)
                done[rec["key"]].setdefault(int(rec["rep"]), rec["metrics"])
            except (ValueError, KeyError, TypeError):
                continue  # a line cut short by an interruption: that replication reruns
    return done


def _call(point, params, seed):
    t0 = time.perf_counter()
    return point(params, seed), time.perf_counter() - t0


def run_experiment(exp: Experiment, out_dir=".", *, quick: bool = False, jobs: int | None = None,
                   progress: bool | None = None) -> dict:
    """Run (or resume) ``exp`` and write its outputs; returns the JSON summary."""
    out = Path(out_dir) / exp.name
    out.mkdir(parents=True, exist_ok=True)
    points = exp.grid(quick)
    if not points:
        raise ReproduceError(f"{exp.name}: empty grid")
    keys = [point_key(p) for p in points]
    if len(set(keys)) != len(keys):
        raise ReproduceError(f"{exp.name}: the grid repeats a point")
    by_key = dict(zip(keys, points))
    stop_on = tuple(exp.stop_on or exp.metrics[:1])
    min_r, cap = exp.caps(quick)
    runs_path = out / "runs.jsonl"
    done = _load_runs(runs_path)
    jobs = max(1, int(jobs or os.cpu_count() or 1))
    t_start = time.perf_counter()

    def reps_of(key):
        return done.get(key, {})

    def satisfied(key) -> bool:
        r = reps_of(key)
        return all(precise_enough([m.get(s) for m in r.values()], exp.precision) for s in stop_on)

    inflight: dict[str, set] = defaultdict(set)

    def next_reps(key) -> list[int]:
        have = set(reps_of(key))
        busy = inflight[key]
        n = len(have)
        if n + len(busy) >= cap:
            want = 0
        elif n + len(busy) < min_r:
            want = min_r - n - len(busy)
        elif busy or satisfied(key):
            want = 0
        else:
            r = reps_of(key)
            need = max(reps_needed([m.get(s) for m in r.values()], exp.precision) for s in stop_on)
            want = max(1, min(need - n, jobs, cap - n))
        out_reps, r = [], 0
        while len(out_reps) < want:
            if r not in have and r not in busy:
                out_reps.append(r)
            r += 1
        return out_reps

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    show = console.is_terminal if progress is None else progress
    pool = ProcessPoolExecutor(max_workers=jobs) if jobs > 1 else None
    computed = 0
    with Progress(TextColumn(f"[bold]{exp.name}[/]"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("runs  {task.fields[points]} points done"), TimeElapsedColumn(),
                  console=console, disable=not show, transient=False) as bar:
        task = bar.add_task("runs", total=0, points=f"0/{len(keys)}")
        log = runs_path.open("a")
        try:
            queue: list[tuple[str, int]] = []
            for k in keys:
                first = next_reps(k)
                inflight[k].update(first)
                queue.extend((k, r) for r in first)
            submitted = len(queue)
            bar.update(task, total=submitted)
            pending = {}

            def launch(k, r):
                p, s = by_key[k], rep_seed(exp.name, r)
                if pool is None:
                    return _call(exp.point, p, s)
                return pool.submit(_call, exp.point, p, s)

            def record(k, r, res):
                nonlocal computed
                metrics, secs = res
                inflight[k].discard(r)
                done[k][r] = metrics
                log.write(json.dumps({"key": k, "rep": r, "seed": rep_seed(exp.name, r),
                                      "seconds": round(secs, 4), "metrics": metrics}) + "\n")
                log.flush()
                computed += 1
                more = next_reps(k)
                inflight[k].update(more)
                return more

            def finished_points():
                return sum(1 for k in keys if not inflight[k] and not next_reps_peek(k))

            def next_reps_peek(k):
                n = len(reps_of(k))
                return n < min_r or (n < cap and not satisfied(k))

            while queue or pending:
                if pool is None:
                    k, r = queue.pop(0)
                    more = record(k, r, launch(k, r))
                    queue.extend((k, m) for m in more)
                    submitted += len(more)
                else:
                    while queue:
                        k, r = queue.pop(0)
                        pending[launch(k, r)] = (k, r)
                    fin, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for f in fin:
                        k, r = pending.pop(f)
                        more = record(k, r, f.result())
                        queue.extend((k, m) for m in more)
                        submitted += len(more)
                bar.update(task, total=submitted, completed=submitted - len(queue) - len(pending),
                           points=f"{finished_points()}/{len(keys)}")
        except BaseException:
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)
                pool = None
            raise
        finally:
            log.close()
            if pool is not None:
                pool.shutdown()

    results = []
    for k in keys:
        reps = reps_of(k)
        stats = {}
        names = list(exp.metrics) + sorted({m for v in reps.values() for m in v} - set(exp.metrics))
        for m in names:
            mu, hw, _ = mean_ci([v.get(m) for v in reps.values()])
            stats[m] = (mu, 0.0 if exp.deterministic else hw)
        capped = (not exp.deterministic) and len(reps) >= cap and not satisfied(k)
        results.append(PointResult(by_key[k], len(reps), capped, stats))
    res = Results(exp, results, quick)
    check = exp.check(res)
    summary = _summary(exp, res, check, quick, computed, time.perf_counter() - t_start)
    write_csv(out / "results.csv", exp, res)
    (out / "results.json").write_text(json.dumps(_jsonable(summary), indent=1))
    plot(exp, res, out / "figure.png")
    write_report(out / "REPORT.md", exp, res, check, quick, summary)
    summary["outputs"] = {n: str(out / n) for n in ("results.csv", "figure.png", "REPORT.md", "runs.jsonl")}
    write_index(Path(out_dir))
    return summary


def write_index(out_dir: Path) -> Path:
    """``DIR/README.md``: every experiment of the registry with its figure and the verdict
    line of its REPORT.md, so a reader sees the results without running anything."""
    from emulator import experiments

    out_dir = Path(out_dir)
    rows, sections = [], []
    for exp in experiments.all_experiments():
        report = out_dir / exp.name / "REPORT.md"
        if not report.exists():
            rows.append(f"| {exp.name} | {exp.paper}, {exp.figure} | not run yet |")
            continue
        text = report.read_text()
        verdict = next((ln for ln in text.splitlines() if ln.startswith("**Verdict:")), "no verdict")
        quick = " (quick form)" if "**Quick form**" in text else ""
        rows.append(f"| [{exp.name}]({exp.name}/REPORT.md) | {exp.paper}, {exp.figure} | {verdict}{quick} |")
        sections += [f"## {exp.name}: {exp.title}", "", f"*{exp.paper}, {exp.figure}.* {verdict}{quick} "
                     f"[report]({exp.name}/REPORT.md), [data]({exp.name}/results.csv)", "",
                     f"![{exp.name}]({exp.name}/figure.png)", ""]
    lines = ["# Reproduced results", "",
             "Each experiment re-runs one figure or table of the papers with `mcemu reproduce NAME`; "
             "its REPORT.md states the paper's claim, our numbers and a verdict computed from them.",
             "", "| experiment | paper, figure | verdict |", "|---|---|---|", *rows, "", *sections]
    path = out_dir / "README.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def _summary(exp, res, check, quick, computed, secs) -> dict:
    return {
        "experiment": exp.name, "paper": exp.paper, "figure": exp.figure, "title": exp.title,
        "quick": quick, "verdict": check.verdict,
        "checks": [{"holds": ok, "claim": t} for ok, t in check.items],
        "replications_computed": computed, "wall_seconds": round(secs, 3),
        "points": [{"params": p.params, "replications": p.reps, "capped": p.capped,
                    "metrics": {m: {"mean": p.stats[m][0], "ci95": p.stats[m][1]}
                                for m in exp.metrics if m in p.stats}}
                   for p in res.points],
    }




# =========================================================================== outputs

CSV_TAIL = ["metric", "mean", "ci95", "replications", "capped"]


def write_csv(path: Path, exp: Experiment, res: Results) -> None:
    import csv

    cols: list[str] = []
    for p in res.points:
        for k in p.params:
            if k not in cols and k not in CSV_TAIL:
                cols.append(k)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols + CSV_TAIL)
        for p in res.points:
            row = [json.dumps(p.params[c], sort_keys=True) if isinstance(p.params.get(c), (dict, list))
                   else p.params.get(c, "") for c in cols]
            for m in exp.metrics:
                mu, hw = p.stats.get(m, (math.nan, math.nan))
                w.writerow(row + [m, repr(mu), repr(hw), p.reps, int(p.capped)])


def _panel_rows(res: Results, panel: Panel):
    """{series label: [(x, mean, ci, capped), ...]} sorted by x."""
    series: dict[str, list] = {}
    for p in res.select(**panel.where):
        lab = panel.label(p.params)
        if panel.xmetrics:
            for xv, m in panel.xmetrics:
                if m in p.stats:
                    series.setdefault(lab, []).append((xv, p.mean(m), p.ci(m), p.capped))
        else:
            series.setdefault(lab, []).append((_hashable(p.params.get(panel.x)), p.mean(panel.metric),
                                               p.ci(panel.metric), p.capped))
    for v in series.values():
        v.sort(key=lambda t: _sort_key(t[0]))
    return series


def plot(exp: Experiment, res: Results, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(exp.panels)
    rows, cols = exp.layout or ((1, n) if n <= 3 else (math.ceil(n / 2), 2))
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 4.0 * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    for ax, panel in zip(axes.flat, exp.panels):
        series = _panel_rows(res, panel)
        if panel.kind == "bar":
            xs = sorted({t[0] for v in series.values() for t in v}, key=_sort_key)
            width = 0.8 / max(1, len(series))
            for i, (lab, pts) in enumerate(series.items()):
                pos = {t[0]: t for t in pts}
                idx = [j for j, x in enumerate(xs) if x in pos]
                ys = [pos[xs[j]][1] for j in idx]
                es = [_finite(pos[xs[j]][2]) for j in idx]
                ax.bar([j - 0.4 + width * (i + 0.5) for j in idx], ys, width, yerr=es, capsize=3, label=lab)
            ax.set_xticks(range(len(xs)))
            ax.set_xticklabels([str(x) for x in xs])
        else:
            for lab, pts in series.items():
                xs = [t[0] for t in pts]
                ys = [t[1] for t in pts]
                es = [_finite(t[2]) for t in pts]
                line = ax.errorbar(xs, ys, yerr=es, marker="o", ms=4, capsize=3, label=lab)
                capx = [t[0] for t in pts if t[3]]
                if capx:
                    capy = [t[1] for t in pts if t[3]]
                    ax.plot(capx, capy, "o", mfc="white", ms=7, color=line[0].get_color())
        if panel.hline:
            vals = [p.mean(panel.hline) for p in res.select(**panel.where)]
            vals = [v for v in vals if math.isfinite(v)]
            if vals and panel.kind != "bar":
                ax.axhline(sum(vals) / len(vals), ls="--", color="k", lw=1, label=panel.hline)
        if panel.hline and panel.kind == "bar":
            xs = sorted({t[0] for v in series.values() for t in v}, key=_sort_key)
            for j, x in enumerate(xs):
                vals = [p.mean(panel.hline) for p in res.select(**panel.where)
                        if _hashable(p.params.get(panel.x)) == x]
                if vals:
                    ax.hlines(sum(vals) / len(vals), j - 0.45, j + 0.45, colors="k", linestyles="--", lw=1.2)
        if panel.logy and any(t[1] > 0 for v in series.values() for t in v if math.isfinite(t[1])):
            ax.set_yscale("log")
        ax.set_title(panel.title, fontsize=10)
        ax.set_xlabel(panel.xlabel or panel.x)
        ax.set_ylabel(panel.ylabel or panel.metric)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    quick = " (quick form)" if res.quick else ""
    fig.suptitle(f"{exp.paper}, {exp.figure}: {exp.title}{quick}\n"
                 "error bars: 95% CI; open marker: replication cap reached", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _finite(v):
    return v if isinstance(v, (int, float)) and math.isfinite(v) else 0.0


def panel_table(res: Results, panel: Panel, exact: bool = False) -> str:
    series = _panel_rows(res, panel)
    xs = sorted({t[0] for v in series.values() for t in v}, key=_sort_key)
    labs = list(series)
    head = f"| {panel.xlabel or panel.x} | " + " | ".join(labs) + " |"
    what = "one deterministic run" if exact else "mean ± 95% CI half-width; * = cap reached"
    lines = [f"**{panel.title}** — {panel.ylabel or panel.metric} ({what})",
             "", head, "|" + "---|" * (len(labs) + 1)]
    for x in xs:
        cells = []
        for lab in labs:
            hit = [t for t in series[lab] if t[0] == x]
            if not hit:
                cells.append("")
                continue
            _, mu, hw, capped = hit[0]
            cells.append(fmt(mu) if exact else f"{fmt(mu)} ± {fmt(hw, 2)}" + ("*" if capped else ""))
        lines.append(f"| {x} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_report(path: Path, exp: Experiment, res: Results, check: Check, quick: bool, summary: dict) -> None:
    capped = [p for p in res.points if p.capped]
    min_r, cap = exp.caps(quick)
    lines = [f"# {exp.name}: {exp.title}", "",
             f"*{exp.paper}, {exp.figure}.*" + (" **Quick form** (reduced grid, short runs: "
                                                 "not for conclusions)." if quick else ""), "",
             "## The paper's claim", "", exp.claim, "",
             "## Settings used", "", exp.settings_text(quick).strip(), "",
             ("Replications: one run per point (deterministic)." if exp.deterministic else
              "Replications: independent seeds per replication (the same seeds across the points "
              "of this experiment: common random numbers), "
                f"at least {min_r}, at most {cap}, until the 95% confidence half-width of "
                f"{', '.join(exp.stop_on or exp.metrics[:1])} is within {exp.precision:.0%} of its mean."),
             "", "## Our numbers", "", "![figure](figure.png)", ""]
    for panel in exp.panels:
        lines += [panel_table(res, panel, exp.deterministic), ""]
    if exp.table:
        lines += [exp.table(res), ""]
    lines += ["## Check", ""]
    for ok, text in check.items:
        lines.append(f"- [{'x' if ok else ' '}] {'holds' if ok else 'does not hold'}: {text}")
    held = sum(ok for ok, _ in check.items)
    lines += ["", f"**Verdict: {check.verdict}** ({held} of {len(check.items)} sub-claims hold on our numbers).", ""]
    if exp.notes:
        lines += ["## Why we think so", "", exp.notes.strip(), ""]
    lines += ["## Replications", "",
              f"{len(res.points)} points, {sum(p.reps for p in res.points)} replications "
              f"({summary['replications_computed']} computed in this invocation, "
              f"{summary['wall_seconds']:.1f} s)."]
    if capped:
        why = ("the quick form's cap: its short runs are not meant to meet the target" if quick else
               "runs disagree too much: past saturation the delay grows with the run, and "
               "heavy-tailed service (hyperexponential, Cx 4) needs far more runs")
        lines.append(f"{len(capped)} point(s) reached the cap of {cap} replications without the "
                     f"target precision ({why}):")
        stop = (exp.stop_on or exp.metrics[:1])[0]
        for p in capped[:40]:
            rel = p.ci(stop) / abs(p.mean(stop)) if p.mean(stop) else math.nan
            lines.append(f"- {_short(p.params)}: {stop} half-width {fmt(rel * 100, 3)}% of the mean")
    path.write_text("\n".join(lines) + "\n")


def _short(params: dict) -> str:
    keep = ("topology", "allocator", "scheduler", "reduction", "size", "service", "load", "iatm", "jobs",
            "dparams", "study")
    return ", ".join(f"{k}={json.dumps(params[k]) if isinstance(params[k], dict) else params[k]}"
                     for k in keep if k in params and params[k] not in (None, {}, ""))


__all__ = ["Experiment", "Panel", "Results", "PointResult", "Check", "run_experiment", "mean_ci",
           "precise_enough", "rep_seed", "point_key", "ReproduceError", "fmt"]
