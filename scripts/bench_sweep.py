#!/usr/bin/env python3
"""Simulation runs per second of one reproduction: the local process pool against 1 and 2 local
Dask workers, and the overhead per run that Dask adds. Prints the method with the figures.

    python scripts/bench_sweep.py                      # lazy-fig4 --quick, 3 rounds
    python scripts/bench_sweep.py --full --reps 1 --rounds 1   # the full grid, one run per point

Method: every configuration runs the same replications (the runner's checkpoints depend only on
the numbers, never on where runs ran) into a fresh folder, so nothing is resumed. The executor
is started before the clock and passed to the runner, so the figures are the sweep itself:
submitting, running, collecting, logging each run to runs.jsonl; the cluster's start-up is
timed apart. runs/s = replications / wall seconds (best of the rounds). The overhead per run of
an executor is wall x workers / runs - mean seconds inside a run (the runs' own timing, in
runs.jsonl): the time a worker spends on a run beyond the simulation itself.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from emulator import experiments  # noqa: E402
from emulator.experiments.executors import DaskPool, Inline, LocalPool  # noqa: E402
from emulator.experiments.runner import replicate  # noqa: E402


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def one(exp, quick: bool, make, rounds: int) -> dict:
    best = None
    for _ in range(rounds):
        t0 = time.perf_counter()
        ex = make()
        startup = time.perf_counter() - t0
        out = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
        try:
            t1 = time.perf_counter()
            res, computed, _, where = replicate(exp, out, quick=quick, progress=False, executor=ex)
            wall = time.perf_counter() - t1
            secs = [json.loads(ln)["seconds"] for ln in (out / "runs.jsonl").read_text().splitlines()]
        finally:
            ex.close()
            shutil.rmtree(out, ignore_errors=True)
        r = {"where": where, "workers": ex.workers, "runs": computed, "wall": wall, "startup": startup,
             "runs_per_s": computed / wall, "mean_run": sum(secs) / len(secs),
             "overhead_ms": 1000 * (wall * ex.workers / computed - sum(secs) / len(secs))}
        if best is None or r["wall"] < best["wall"]:
            best = r
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--experiment", default="lazy-fig4")
    ap.add_argument("--full", action="store_true", help="the full reproduction (default: its --quick form)")
    ap.add_argument("--reps", type=int, default=None, metavar="K",
                    help="exactly K replications per point instead of the stopping rule (with --full: the "
                         "full grid's runs, minutes rather than the hour of the full reproduction)")
    ap.add_argument("--rounds", type=int, default=3, help="best of this many (default 3)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    try:
        import dask
        import distributed
    except ImportError:
        print("bench_sweep: needs Dask: pip install 'mcemu[dask]'", file=sys.stderr)
        return 2
    exp = experiments.get(args.experiment)
    quick = not args.full
    if args.reps is not None:
        if args.reps < 1:
            ap.error("--reps must be >= 1")
        exp = dataclasses.replace(exp, min_reps=args.reps, max_reps=args.reps, quick_reps=args.reps)
    configs = [("local, 1 process", lambda: Inline()), ("local pool, 2 processes", lambda: LocalPool(2)),
               ("Dask, 1 local worker", lambda: DaskPool("local:1")),
               ("Dask, 2 local workers", lambda: DaskPool("local:2"))]
    rows = [(name, one(exp, quick, make, args.rounds)) for name, make in configs]
    if args.json:
        print(json.dumps({name: r for name, r in rows}, indent=1))
        return 0
    reps = f", {args.reps} replication(s) per point" if args.reps else ""
    print(f"mcemu bench_sweep: {exp.name}{'' if args.full else ' --quick'}{reps}, {rows[0][1]['runs']} simulation "
          f"runs, best of {args.rounds}")
    print(f"machine: {_cpu()}, {os.cpu_count()} cores; Python {platform.python_version()}, dask {dask.__version__}, "
          f"distributed {distributed.__version__}")
    print(f"{'executor':<26}{'runs/s':>9}{'wall s':>9}{'start-up s':>12}{'run s (mean)':>14}{'overhead/run ms':>17}")
    for name, r in rows:
        print(f"{name:<26}{r['runs_per_s']:>9.1f}{r['wall']:>9.2f}{r['startup']:>12.2f}{r['mean_run']:>14.4f}"
              f"{r['overhead_ms']:>17.2f}")
    base = dict(rows)
    for k, ref in (("Dask, 1 local worker", "local, 1 process"), ("Dask, 2 local workers", "local pool, 2 processes")):
        extra = (base[k]["wall"] - base[ref]["wall"]) / base[k]["runs"] * 1000
        print(f"Dask over {ref}: {extra:+.2f} ms per run of wall time "
              f"({base[k]['runs_per_s'] / base[ref]['runs_per_s']:.2f}x the runs/s)")
    print("\n" + __doc__.split("\n\n", 2)[2].strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
