"""Reports from committed runs, without a simulation: ``python -m emulator.experiments.rerender
[NAME ...] --out docs/results`` writes every output of ``mcemu reproduce`` (REPORT.md, CSV, JSON,
figure, index) from ``DIR/NAME/runs.jsonl``, and fails rather than start a run if a replication is
missing (a check rewritten, a report re-rendered: the numbers do not move). :func:`load_results`
rebuilds an experiment's :class:`Results` from its ``results.csv`` and, for the paired intervals of
differences, the replications of ``runs.jsonl`` beside it (the committed files a reader has, and
what the tests pin the verdicts on)."""
from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from pathlib import Path

from emulator import experiments
from emulator.experiments.experiment import Experiment, PointResult, ReproduceError, Results
from emulator.experiments.report import CSV_TAIL
from emulator.experiments.stats import point_key


class NoRuns:
    """An executor that refuses every run: resuming with it proves nothing was left to compute."""

    workers = 1  # what the runner's batching reads of an executor
    batch_s = 0.0

    def submit(self, fn, *args):
        raise ReproduceError(f"a replication is missing from runs.jsonl (point {args[1]}); "
                             "rerender computes nothing: run `mcemu reproduce` for it")

    def wait(self, handles):  # pragma: no cover - submit never returns
        return []

    def outcome(self, h):  # pragma: no cover
        raise ReproduceError("no runs")

    def lost(self, exc) -> bool:
        return False

    def close(self, cancel: bool = False) -> None:
        pass

    def describe(self) -> str:
        return "the committed runs.jsonl (no run computed)"


def _cell(v) -> str:
    """A parameter as :func:`report.write_csv` writes it (csv writes None as empty)."""
    if v is None:
        return ""
    return json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else str(v)


def load_results(exp: Experiment, folder: Path, quick: bool = False) -> Results:
    """The :class:`Results` of ``exp`` from ``folder/results.csv``: each grid point's row found by
    its parameters written as the CSV writes them."""
    grid = exp.grid(quick)  # also sets a figure's metric names that follow the form (lazy-fig8)
    with (Path(folder) / "results.csv").open(newline="") as f:
        rows = list(csv.reader(f))
    head, body = rows[0], rows[1:]
    cols = head[:-len(CSV_TAIL)]
    by_key: dict[tuple, dict] = {}
    for r in body:
        key = tuple(r[:len(cols)])
        metric, mu, hw, reps, capped = r[len(cols):]
        d = by_key.setdefault(key, {"stats": {}, "reps": int(reps), "capped": bool(int(capped))})
        d["stats"][metric] = (float(mu), float(hw) if hw else math.nan)
    for params in grid:
        if tuple(_cell(params.get(c)) for c in cols) not in by_key:
            raise ReproduceError(f"{exp.name}: no row in results.csv for {params}")
    runs = _samples(folder, {point_key(p): by_key[tuple(_cell(p.get(c)) for c in cols)]["reps"] for p in grid})
    points = []
    for params in grid:
        key = tuple(_cell(params.get(c)) for c in cols)
        d = by_key[key]
        points.append(PointResult(params, d["reps"], d["capped"], d["stats"], runs.get(point_key(params))))
    return Results(exp, points, quick)


def _samples(folder: Path, reps_of: dict) -> dict:
    """{point key: {metric: [value of replication 0, 1, ..]}} from ``folder/runs.jsonl`` (committed
    beside results.csv), the replications 0..n-1 that the point's n in results.csv counts; a point
    missing one of them gets none (its differences are then judged unpaired)."""
    path = Path(folder) / "runs.jsonl"
    if not path.exists():
        return {}
    done: dict = {}
    with path.open() as f:
        for line in f:
            try:
                rec = json.loads(line)
                done.setdefault(rec["key"], {}).setdefault(int(rec["rep"]), rec["metrics"])
            except (ValueError, KeyError, TypeError):
                continue
    out = {}
    for key, n in reps_of.items():
        reps = done.get(key, {})
        if n and all(r in reps for r in range(n)):
            used = [reps[r] for r in range(n)]
            out[key] = {m: [v.get(m) for v in used] for m in {m for v in used for m in v}}
    return out


def rerender(name: str, out_dir: Path) -> dict:
    """Every output of ``name`` from ``out_dir/name/runs.jsonl``; raises if a run is missing."""
    from emulator.experiments.runner import run_experiment  # the runner imports the reports

    return run_experiment(experiments.get(name), out_dir, executor=NoRuns(), progress=False)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m emulator.experiments.rerender", description=__doc__)
    ap.add_argument("names", nargs="*", help="experiments (default: every one with a runs.jsonl)")
    ap.add_argument("--out", default="docs/results", type=Path)
    args = ap.parse_args(argv)
    names = args.names or [e.name for e in experiments.all_experiments()
                           if (args.out / e.name / "runs.jsonl").exists()]
    failed = []
    for n in names:
        try:
            s = rerender(n, args.out)
        except ReproduceError as e:
            failed.append(n)
            print(f"{n}: not re-rendered: {e}")
            continue
        print(f"{n}: {s['verdict']} {s['counts']} ({s['replications_computed']} runs computed)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
