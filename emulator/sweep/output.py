"""Run a :class:`~emulator.sweep.grid.Sweep` through the replication runner and write its outputs
in ``DIR/NAME/``: ``results.csv`` (the reproductions' CSV: one row per point and metric with
mean, 95% half-width, replications, capped), ``results.json``, ``figure.png`` (the metric
against the swept axis, one series per policy, error bars; one panel per value of any other
swept axis), ``REPORT.md`` (settings, tables, replications) and ``sweep.toml`` (the settings,
to run the sweep again); ``runs.jsonl`` is the runner's, for resuming."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from emulator.experiments.experiment import Check, Experiment, Panel, Results, _hashable, _sort_key, fmt
from emulator.experiments.plot import plot
from emulator.experiments.report import panel_table, write_csv
from emulator.experiments.runner import replicate
from emulator.jsonable import jsonable
from emulator.sweep.grid import AXES, NUMERIC_AXES, POLICY_AXES, Sweep
from emulator.sweep.point import check, sweep_point
from scheduler.stack import parse_params


@dataclass
class SweepExperiment(Experiment):
    """An experiment made from a user's sweep; ``seed_for`` gives its replication seeds."""

    sweep: Sweep | None = None

    def seed_for(self, rep: int) -> int:
        return self.sweep.seed_for(rep)


def _varying(points: list, key: str) -> bool:
    return len({_hashable(p.get(key)) for p in points}) > 1


def policy_label(params: dict, keys: list) -> str:
    vals = [str(params[k]) for k in keys if params.get(k) not in (None, "", "none")]
    return " / ".join(vals) or str(params.get("gang") or params.get("scheduler"))


def panels(sweep: Sweep, points: list) -> list[Panel]:
    """One panel per combination of the swept axes that are neither the x axis nor a policy
    axis; in each, one series per policy (the policy axes that vary)."""
    x, metric = sweep.x, sweep.metric
    pol = [k for k in POLICY_AXES if k != x and _varying(points, k)]
    if pol:
        label = lambda p: policy_label(p, pol)  # noqa: E731
    elif x in POLICY_AXES:
        label = lambda p: metric  # noqa: E731 - the policies are the x axis: one series
    else:
        label = lambda p: policy_label(p, ["scheduler", "gang"])  # noqa: E731
    other = [k for k in AXES if k not in POLICY_AXES and k != x and _varying(points, k)]
    combos = sorted({tuple(_hashable(p.get(k)) for k in other) for p in points},
                    key=lambda t: [_sort_key(v) for v in t])
    xs = {_hashable(p.get(x)) for p in points}
    kind = "line" if x in NUMERIC_AXES and all(isinstance(v, (int, float)) for v in xs) else "bar"
    out = []
    for combo in combos:
        where = dict(zip(other, combo))
        title = ", ".join(f"{k}={v}" for k, v in where.items()) or sweep.name
        out.append(Panel(title, metric, x=x, where=where, series=label,
                         xlabel=x, ylabel=metric, kind=kind))
    return out


def experiment(sweep: Sweep) -> SweepExperiment:
    points = check(sweep)  # every stack and workload built once: errors before any run
    lo, hi = sweep.reps
    return SweepExperiment(
        name=sweep.name, paper="sweep", figure=sweep.name, title=f"{sweep.metric} against {sweep.x}",
        claim="", point=sweep_point, grid=lambda quick: points, metrics=sweep.metrics,
        panels=panels(sweep, points), check=lambda res: Check(), settings=to_toml(sweep.settings),
        stop_on=sweep.stop_on, min_reps=lo, max_reps=hi, quick_reps=lo, precision=sweep.precision,
        deterministic=bool(sweep.trace), sweep=sweep)


def run_sweep(sweep: Sweep, out_dir=".", *, jobs: int | None = None, dask: str | None = None,
              dask_timeout: float = 10.0, progress: bool | None = None, executor=None) -> dict:
    """Check, run (or resume) and write the outputs of ``sweep``; returns the JSON summary."""
    exp = experiment(sweep)
    out = Path(out_dir) / sweep.name
    lo, hi = sweep.reps
    res, computed, secs, where = replicate(exp, out, jobs=jobs, dask=dask, dask_timeout=dask_timeout,
                                           progress=progress, executor=executor)
    if lo == hi:  # a fixed number of replications: no precision was asked, none is missed
        for p in res.points:
            p.capped = False
    summary = {
        "sweep": sweep.name, "points": [{"params": p.params, "replications": p.reps, "capped": p.capped,
                                         "metrics": {m: {"mean": p.stats[m][0], "ci95": p.stats[m][1]}
                                                     for m in exp.metrics if m in p.stats}} for p in res.points],
        "replications_computed": computed, "wall_seconds": round(secs, 3), "executor": where,
    }
    write_csv(out / "results.csv", exp, res)
    (out / "results.json").write_text(json.dumps(jsonable(summary), indent=1))
    (out / "sweep.toml").write_text(to_toml(sweep.settings))
    plot(exp, res, out / "figure.png")
    write_report(out / "REPORT.md", exp, sweep, res, summary)
    summary["outputs"] = {n: str(out / n) for n in ("results.csv", "figure.png", "REPORT.md", "runs.jsonl",
                                                      "sweep.toml")}
    return summary


def write_report(path: Path, exp: SweepExperiment, sweep: Sweep, res: Results, summary: dict) -> None:
    lo, hi = sweep.reps
    if sweep.trace:
        reps = "one run per point: a trace replay is deterministic."
    elif sweep.seeds is not None:
        reps = f"{lo} per point, seeds {', '.join(map(str, sweep.seeds))} (the same for every point)."
    elif lo == hi:
        reps = f"{lo} per point; replication r has the same seed at every point (common random numbers)."
    else:
        reps = (f"at least {lo}, at most {hi} per point, until the 95% confidence half-width of "
                f"{', '.join(sweep.stop_on)} is within {sweep.precision:.0%} of its mean; replication r has "
                "the same seed at every point (common random numbers).")
    lines = [f"# Sweep {sweep.name}: {exp.title}", "",
             "## Settings", "", "Run again with `mcemu sweep sweep.toml` (this folder's copy):", "",
             "```toml", to_toml(sweep.settings).rstrip(), "```", "",
             f"{len(res.points)} points. Replications: {reps}", "",
             f"Ran on {summary['executor']}: {summary['replications_computed']} replications computed in "
             f"{summary['wall_seconds']:.1f} s ({sum(p.reps for p in res.points)} in all, the rest "
             "read from runs.jsonl).", "", "## Results", "", "![figure](figure.png)", ""]
    for panel in exp.panels:
        lines += [panel_table(res, panel, exp.deterministic), ""]
    capped = [p for p in res.points if p.capped]
    if capped:
        stop = sweep.stop_on[0]
        lines += [f"{len(capped)} point(s) reached the cap of {hi} replications without the target precision:"]
        for p in capped[:40]:
            rel = p.ci(stop) / abs(p.mean(stop)) if p.mean(stop) else math.nan
            lines.append(f"- {_short(p.params)}: {stop} half-width {fmt(rel * 100, 3)}% of the mean")
        lines.append("")
    lines += ["All numbers: results.csv (mean, ci95, replications per point and metric); every replication: "
              "runs.jsonl."]
    path.write_text("\n".join(lines) + "\n")


def _short(params: dict) -> str:
    return ", ".join(f"{k}={params[k]}" for k in AXES if params.get(k) not in (None, ""))


def to_toml(settings: dict) -> str:
    """The settings as TOML (scalars, lists, and the params tables)."""
    def val(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(val(x) for x in v) + "]"
        if isinstance(v, float) and math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if isinstance(v, (int, float)):
            return repr(v)
        return json.dumps(str(v))

    flat = [f"{k} = {val(v)}" for k, v in settings.items() if k != "params" and not isinstance(v, dict)]
    out = flat
    params = settings.get("params") or {}
    if isinstance(params, list):  # --param KEY=VALUE strings
        params = parse_params(params)
    plain = {k: v for k, v in params.items() if not isinstance(v, dict)}
    if plain:
        out += ["", "[params]"] + [f"{k} = {val(v)}" for k, v in plain.items()]
    for name, table in params.items():
        if isinstance(table, dict):
            out += ["", f"[params.{json.dumps(name) if not name.isidentifier() else name}]"]
            out += [f"{k} = {val(v)}" for k, v in table.items()]
    return "\n".join(out) + "\n"


__all__ = ["SweepExperiment", "experiment", "panels", "run_sweep", "to_toml"]
