"""``mcemu reproduce``: re-run a figure or table of the papers and say whether we agree.

An :class:`Experiment` is a named grid of points (policy x load x ...). Each point is a pure
function ``point(params, seed) -> {metric: float}`` (top level, so a process pool can pickle
it by reference). The runner:

* runs independent replications of every point until the 95% confidence half-width of each
  metric in ``stop_on`` is within ``precision`` (5%) of its mean -- the lazy paper's own
  criterion (section 4) -- with at least ``min_reps`` and at most ``max_reps`` replications; a
  point that reaches the cap without meeting the target is marked ``capped`` (typically a
  saturated system whose delay grows with the length of the run); the checkpoints at which a
  point is judged depend only on its own numbers (:mod:`.plan`), so how many replications it
  gets never depends on where they ran;
* gives replication r of every point the same seed (a hash of the experiment name and r):
  replications of one point are independent, and the policies of one figure are compared
  on identical job streams (common random numbers), which sharpens every comparison;
* spreads the runs over an executor (:mod:`.executors`: a local process pool of ``jobs``
  workers, default every core, or a Dask cluster with ``dask``), short runs several to a task
  so that a task's own cost stays small next to its runs (:class:`.executors.Batcher`), shows
  a Rich progress bar that follows the finished runs on a terminal, submits again a run lost
  with a dead worker, and appends each finished replication to ``DIR/NAME/runs.jsonl`` as its
  batch ends, so an interrupted run resumes where it stopped (losing at most the batches in
  flight): a replication is identified by the point's parameters and its index and is never
  recomputed;
* writes ``results.csv`` (one row per point and metric: parameters, mean, CI half-width,
  replications, capped), ``results.json``, ``figure.png`` and ``REPORT.md`` (the paper's claim,
  our numbers, a verdict computed by the experiment's own check, the settings used).

Nothing here knows a paper: the experiments live in :mod:`emulator.experiments`. The parts
live beside this module: :mod:`.stats` (intervals, stopping rule, seeds), :mod:`.plan` (which
replications remain), :mod:`.executors` (where they run), :mod:`.experiment`
(what an experiment and its results are), :mod:`.report` and :mod:`.plot` (the outputs); their
names stay importable from here.
"""
from __future__ import annotations

import json
import time
from collections import defaultdict, deque
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from emulator.experiments.experiment import (  # noqa: F401 - importable from the runner, as before the split
    Check, Experiment, Panel, PointResult, ReproduceError, Results, _hashable, _match, _sort_key, fmt,
)
from emulator.experiments.executors import RESUBMITS, Batcher, make_executor
from emulator.experiments.plan import Plan
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


def _call_batch(point, runs, limit=None):
    """Run ``runs`` ([(params, seed)]) one after the other where the executor put them: one task
    for many short runs; past ``limit`` seconds no further run starts (the runner queues those
    again). Returns [(metrics, seconds)] of the runs done. A run that raises ends the batch; its
    exception carries the runs done before it (``runs_done``), so they are logged all the same."""
    out = []
    start = time.perf_counter()
    for params, seed in runs:
        t0 = time.perf_counter()
        if out and limit is not None and t0 - start >= limit:
            break
        try:
            metrics = point(params, seed)
        except Exception as e:
            try:
                e.runs_done = out  # pickled with the exception (its __dict__) from a worker
            except AttributeError:
                pass
            raise
        out.append((metrics, time.perf_counter() - t0))
    return out


def _submit_all(ex, fn, arglists: list) -> list:
    """``ex.submit(fn, *args)`` for each of ``arglists``, in one message where the executor can
    (Dask: one graph update, so that the tasks of a round reach their workers together)."""
    if not arglists:
        return []
    many = getattr(ex, "submit_all", None)
    return many(fn, arglists) if many is not None else [ex.submit(fn, *a) for a in arglists]


def _outcome(ex, handle) -> tuple[list, Exception | None]:
    """(the runs a task finished, the error that ended it or None)."""
    try:
        return ex.outcome(handle), None
    except Exception as e:  # noqa: BLE001 - the caller decides: resubmit (lost) or raise
        return list(getattr(e, "runs_done", ())), e


def seed_of(exp: Experiment, rep: int) -> int:
    """The seed of replication ``rep`` of every point of ``exp``: the experiment's own
    ``seed_for(rep)`` when it has one (a sweep's explicit seeds), else a hash of its name."""
    own = getattr(exp, "seed_for", None)
    return int(own(rep)) if own is not None else rep_seed(exp.name, rep)


def _replicate(plan: Plan, log, ex, bar, task) -> int:
    """Run replications on executor ``ex`` until every point meets its stopping rule, in
    batches (executors.Batcher), appending each to ``log`` as its batch finishes; returns how
    many were computed."""
    exp = plan.exp
    batcher = Batcher(getattr(ex, "batch_s", 0.0), ex.workers)
    queue: deque = deque((k, r) for k in plan.keys for r in plan.claim(k))
    submitted, computed = len(queue), 0
    bar.update(task, total=submitted)
    pending: dict = {}
    lost: dict = defaultdict(int)

    while queue or pending:
        batches = []
        while queue and len(pending) + len(batches) < batcher.in_flight:
            batches.append(batcher.take(queue))
        args = [(exp.point, [(plan.by_key[k], seed_of(exp, r)) for k, r in runs], batcher.limit) for runs in batches]
        pending.update(zip(_submit_all(ex, _call_batch, args), batches))
        for f in ex.wait(pending):
            runs = pending.pop(f)
            done, error = _outcome(ex, f)
            for (k, r), (metrics, secs) in zip(runs, done):
                plan.record(k, r, metrics)
                batcher.observe(k, secs)
                log.write(json.dumps({"key": k, "rep": r, "seed": seed_of(exp, r),
                                      "seconds": round(secs, 4), "metrics": metrics}) + "\n")
                more = plan.claim(k)
                queue.extend((k, m) for m in more)
                submitted += len(more)
            log.flush()
            computed += len(done)
            rest = runs[len(done):]
            if error is None:
                queue.extendleft(reversed(rest))  # not started before the task's time limit
            else:
                if not ex.lost(error) or any(lost[x] >= RESUBMITS for x in rest):
                    raise error
                for x in rest:  # lost with its worker: the same replications (same seeds) again
                    lost[x] += 1
                    queue.append(x)
        bar.update(task, total=submitted, completed=computed,
                   points=f"{plan.finished_points()}/{len(plan.keys)}")
    return computed


def _run_with_progress(plan: Plan, runs_path: Path, progress: bool | None, ex) -> int:
    """:func:`_replicate` on executor ``ex`` under a Rich progress bar that follows the
    finished runs (shown on a terminal unless ``progress`` says otherwise)."""
    console = Console(stderr=True)
    show = console.is_terminal if progress is None else progress
    with Progress(TextColumn(f"[bold]{plan.exp.name}[/]"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("runs  {task.fields[points]} points done"), TimeElapsedColumn(),
                  console=console, disable=not show, transient=False) as bar:
        task = bar.add_task("runs", total=0, points=f"0/{len(plan.keys)}")
        with runs_path.open("a+") as log:
            if log.tell() > 0:
                log.seek(log.tell() - 1)
                if log.read(1) != "\n":
                    log.write("\n")  # a line torn by an interruption stays alone, not glued to the next
            return _replicate(plan, log, ex, bar, task)


def replicate(exp: Experiment, out: Path, *, quick: bool = False, jobs: int | None = None,
              dask: str | None = None, dask_timeout: float = 10.0, progress: bool | None = None,
              executor=None) -> tuple[Results, int, float, str]:
    """Run (or resume from ``out/runs.jsonl``) the replications of every point of ``exp``;
    returns (results, replications computed now, wall seconds, where they ran). They run on
    ``executor`` when given, else on the one ``jobs``/``dask`` ask for (executors.make_executor);
    the outputs are the caller's (reproduction: :func:`run_experiment`; a user's sweep:
    emulator.sweep)."""
    points = exp.grid(quick)
    if not points:
        raise ReproduceError(f"{exp.name}: empty grid")
    runs_path = out / "runs.jsonl"
    plan = Plan(exp, points, quick, _load_runs(runs_path))
    t_start = time.perf_counter()
    ex = executor if executor is not None else make_executor(jobs, dask, dask_timeout)
    cancel = True
    try:
        if hasattr(ex, "prepare"):
            ex.prepare(_call_batch, exp.point, [])  # Dask: each worker's first task is an empty batch
        out.mkdir(parents=True, exist_ok=True)  # after the executor: an unreachable cluster leaves nothing
        computed = _run_with_progress(plan, runs_path, progress, ex)
        cancel = False
    finally:
        if executor is None:
            ex.close(cancel=cancel)
    return plan.results(quick), computed, time.perf_counter() - t_start, ex.describe()


def run_experiment(exp: Experiment, out_dir=".", *, quick: bool = False, jobs: int | None = None,
                   progress: bool | None = None, dask: str | None = None, dask_timeout: float = 10.0,
                   executor=None) -> dict:
    """Run (or resume) ``exp`` and write its outputs; returns the JSON summary. The runs go to
    a local process pool of ``jobs`` workers (default every core), or to the Dask cluster at
    ``dask`` (an address, or ``local:N``), or to ``executor``."""
    out = Path(out_dir) / exp.name
    res, computed, secs, where = replicate(exp, out, quick=quick, jobs=jobs, dask=dask, dask_timeout=dask_timeout,
                                           progress=progress, executor=executor)
    check = exp.check(res)
    summary = _summary(exp, res, check, quick, computed, secs)
    summary["executor"] = where
    write_csv(out / "results.csv", exp, res)
    (out / "results.json").write_text(json.dumps(_jsonable(summary), indent=1))
    plot(exp, res, out / "figure.png")
    write_report(out / "REPORT.md", exp, res, check, quick, summary)
    summary["outputs"] = {n: str(out / n) for n in ("results.csv", "figure.png", "REPORT.md", "runs.jsonl")}
    write_index(Path(out_dir))
    return summary


__all__ = ["Experiment", "Panel", "Results", "PointResult", "Check", "run_experiment", "replicate", "mean_ci",
           "precise_enough", "rep_seed", "point_key", "ReproduceError", "fmt"]
