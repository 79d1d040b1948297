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

Nothing here knows a paper: the experiments live in :mod:`emulator.experiments`. The parts
live beside this module: :mod:`.stats` (intervals, stopping rule, seeds), :mod:`.experiment`
(what an experiment and its results are), :mod:`.report` and :mod:`.plot` (the outputs); their
names stay importable from here.
"""
from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from emulator.experiments.experiment import (  # noqa: F401 - importable from the runner, as before the split
    Check, Experiment, Panel, PointResult, ReproduceError, Results, _hashable, _match, _sort_key, fmt,
)
from emulator.experiments.plot import plot
from emulator.experiments.report import (  # noqa: F401
    CSV_TAIL, _summary, panel_table, write_csv, write_index, write_report,
)
from emulator.experiments.stats import (  # noqa: F401
    mean_ci, point_key, precise_enough, rep_seed, reps_needed, t975,
)
from emulator.jsonable import jsonable as _jsonable


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


class _Plan:
    """Which replications of which points remain: the stopping rule of each point, counting the
    replications already done (``done``, from runs.jsonl) and those in flight."""

    def __init__(self, exp: Experiment, points: list, quick: bool, done: dict, jobs: int):
        keys = [point_key(p) for p in points]
        if len(set(keys)) != len(keys):
            raise ReproduceError(f"{exp.name}: the grid repeats a point")
        self.exp, self.keys, self.done, self.jobs = exp, keys, done, jobs
        self.by_key = dict(zip(keys, points))
        self.stop_on = tuple(exp.stop_on or exp.metrics[:1])
        self.min_r, self.cap = exp.caps(quick)
        self.inflight: dict[str, set] = defaultdict(set)

    def reps_of(self, key) -> dict:
        return self.done.get(key, {})

    def satisfied(self, key) -> bool:
        r = self.reps_of(key)
        return all(precise_enough([m.get(s) for m in r.values()], self.exp.precision) for s in self.stop_on)

    def next_reps(self, key) -> list[int]:
        have = set(self.reps_of(key))
        busy = self.inflight[key]
        n, cap = len(have), self.cap
        if n + len(busy) >= cap:
            want = 0
        elif n + len(busy) < self.min_r:
            want = self.min_r - n - len(busy)
        elif busy or self.satisfied(key):
            want = 0
        else:
            r = self.reps_of(key)
            need = max(reps_needed([m.get(s) for m in r.values()], self.exp.precision) for s in self.stop_on)
            want = max(1, min(need - n, self.jobs, cap - n))
        out_reps, r = [], 0
        while len(out_reps) < want:
            if r not in have and r not in busy:
                out_reps.append(r)
            r += 1
        return out_reps

    def claim(self, key) -> list[int]:
        """The next replications of ``key``, now counted as in flight."""
        more = self.next_reps(key)
        self.inflight[key].update(more)
        return more

    def record(self, key, rep, metrics) -> None:
        self.inflight[key].discard(rep)
        self.done[key][rep] = metrics

    def finished_points(self) -> int:
        return sum(1 for k in self.keys if not self.inflight[k] and not self._unfinished(k))

    def _unfinished(self, key) -> bool:
        n = len(self.reps_of(key))
        return n < self.min_r or (n < self.cap and not self.satisfied(key))

    def results(self, quick: bool) -> Results:
        exp, out = self.exp, []
        for k in self.keys:
            reps = self.reps_of(k)
            stats = {}
            names = list(exp.metrics) + sorted({m for v in reps.values() for m in v} - set(exp.metrics))
            for m in names:
                mu, hw, _ = mean_ci([v.get(m) for v in reps.values()])
                stats[m] = (mu, 0.0 if exp.deterministic else hw)
            capped = (not exp.deterministic) and len(reps) >= self.cap and not self.satisfied(k)
            out.append(PointResult(self.by_key[k], len(reps), capped, stats))
        return Results(exp, out, quick)


def _replicate(plan: _Plan, log, pool, bar, task) -> int:
    """Run replications until every point meets its stopping rule, appending each to ``log``
    as it finishes; returns how many were computed."""
    exp = plan.exp
    queue: list[tuple[str, int]] = []
    for k in plan.keys:
        queue.extend((k, r) for r in plan.claim(k))
    submitted, computed = len(queue), 0
    bar.update(task, total=submitted)
    pending = {}

    def finish(k, r, res) -> int:
        nonlocal computed
        metrics, secs = res
        plan.record(k, r, metrics)
        log.write(json.dumps({"key": k, "rep": r, "seed": rep_seed(exp.name, r),
                              "seconds": round(secs, 4), "metrics": metrics}) + "\n")
        log.flush()
        computed += 1
        more = plan.claim(k)
        queue.extend((k, m) for m in more)
        return len(more)

    while queue or pending:
        if pool is None:
            k, r = queue.pop(0)
            submitted += finish(k, r, _call(exp.point, plan.by_key[k], rep_seed(exp.name, r)))
        else:
            while queue:
                k, r = queue.pop(0)
                pending[pool.submit(_call, exp.point, plan.by_key[k], rep_seed(exp.name, r))] = (k, r)
            fin, _ = wait(pending, return_when=FIRST_COMPLETED)
            for f in fin:
                k, r = pending.pop(f)
                submitted += finish(k, r, f.result())
        bar.update(task, total=submitted, completed=submitted - len(queue) - len(pending),
                   points=f"{plan.finished_points()}/{len(plan.keys)}")
    return computed


def _run_with_progress(plan: _Plan, runs_path: Path, progress: bool | None) -> int:
    """:func:`_replicate` on a process pool (``plan.jobs`` > 1) under a Rich progress bar
    (shown on a terminal unless ``progress`` says otherwise)."""
    console = Console(stderr=True)
    show = console.is_terminal if progress is None else progress
    pool = ProcessPoolExecutor(max_workers=plan.jobs) if plan.jobs > 1 else None
    with Progress(TextColumn(f"[bold]{plan.exp.name}[/]"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("runs  {task.fields[points]} points done"), TimeElapsedColumn(),
                  console=console, disable=not show, transient=False) as bar:
        task = bar.add_task("runs", total=0, points=f"0/{len(plan.keys)}")
        log = runs_path.open("a")
        try:
            return _replicate(plan, log, pool, bar, task)
        except BaseException:
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)
                pool = None
            raise
        finally:
            log.close()
            if pool is not None:
                pool.shutdown()


def run_experiment(exp: Experiment, out_dir=".", *, quick: bool = False, jobs: int | None = None,
                   progress: bool | None = None) -> dict:
    """Run (or resume) ``exp`` and write its outputs; returns the JSON summary."""
    out = Path(out_dir) / exp.name
    out.mkdir(parents=True, exist_ok=True)
    points = exp.grid(quick)
    if not points:
        raise ReproduceError(f"{exp.name}: empty grid")
    runs_path = out / "runs.jsonl"
    plan = _Plan(exp, points, quick, _load_runs(runs_path), max(1, int(jobs or os.cpu_count() or 1)))
    t_start = time.perf_counter()
    computed = _run_with_progress(plan, runs_path, progress)
    res = plan.results(quick)
    check = exp.check(res)
    summary = _summary(exp, res, check, quick, computed, time.perf_counter() - t_start)
    write_csv(out / "results.csv", exp, res)
    (out / "results.json").write_text(json.dumps(_jsonable(summary), indent=1))
    plot(exp, res, out / "figure.png")
    write_report(out / "REPORT.md", exp, res, check, quick, summary)
    summary["outputs"] = {n: str(out / n) for n in ("results.csv", "figure.png", "REPORT.md", "runs.jsonl")}
    write_index(Path(out_dir))
    return summary


__all__ = ["Experiment", "Panel", "Results", "PointResult", "Check", "run_experiment", "mean_ci",
           "precise_enough", "rep_seed", "point_key", "ReproduceError", "fmt"]
