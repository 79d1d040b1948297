#!/usr/bin/env python3
"""Simulation runs per second of one reproduction: one process, the local process pool, and a real
Dask cluster of 1 and 2 workers, with the overhead per run each adds. Prints the method with the
figures; ``--repo`` measures other checkouts in the same run, side by side.

    python scripts/bench_sweep.py                                  # lazy-fig4 --quick, 30 reps/point
    python scripts/bench_sweep.py --repo /tmp/sweep-old --repo .   # an older tree against this one
    python scripts/bench_sweep.py --full --reps 1 --rounds 1       # the full grid, one run per point

Method: every configuration runs the same replications (the runner's checkpoints depend only on
the numbers, never on where runs ran) into a fresh folder, so nothing is resumed. Each
measurement is a child process that imports the checkout measured (PYTHONPATH=REPO). For Dask it
starts a ``dask scheduler`` and N one-thread ``dask worker`` processes on 127.0.0.1 (as
tests/test_dask.py does) and stops them by PID. start-up s = what a cluster costs once, whatever
the sweep: starting the scheduler and the workers, connecting the client (the pool: its
processes), importing the runner, the simulator and the experiment's module on every worker (the
pool's forked processes inherit them; ``--cold``: left to the first tasks, inside the clock,
unless the measured tree's DaskPool does it when it connects); it is not counted per run. The
clock then times the sweep itself: planning, submitting, running, collecting, logging each run
to runs.jsonl, the workers left idle at the end of the queue. runs/s = replications / wall
seconds (best of the rounds; the rounds, configurations and checkouts are interleaved so that a
noisy neighbour hits them alike). run ms = mean seconds inside a run (the runs' own timing, in
runs.jsonl). overhead per run = wall x workers / runs - run ms: a worker's time per run beyond the
simulation itself, all of the sweep's costs after start-up spread over its runs (so a short
sweep's first round trip and last idle worker weigh more per run than a long one's). tasks =
what the runner submitted to the executor (runs / tasks = runs per task). ``--reps 0`` is the
experiment's own stopping rule: lazy-fig4 --quick is then 32 runs (the issue's figure).
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
CONFIGS = {"inline": ("one process", 1), "pool": ("local pool, 2 processes", 2),
           "dask1": ("Dask, 1 worker", 1), "dask2": ("Dask, 2 workers", 2)}


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _stop(p: subprocess.Popen) -> None:
    """Stop a process this script started (its own session: it and its children), by its PID."""
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        if p.poll() is not None:
            return
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            return
        try:
            p.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


class LocalDask:
    """A ``dask scheduler`` and ``n`` one-thread ``dask worker`` processes on 127.0.0.1."""

    def __init__(self, n: int, folder: Path, env: dict):
        self.procs: list[subprocess.Popen] = []
        try:
            self._up(n, folder, env)
        except BaseException:
            self.stop()  # a cluster that never came up whole is stopped all the same
            raise

    def _up(self, n: int, folder: Path, env: dict) -> None:
        sched = folder / "scheduler.json"
        t0 = time.perf_counter()
        self._start(folder, env, "scheduler", "scheduler", "--host", "127.0.0.1", "--port", "0",
                    "--no-dashboard", "--scheduler-file", str(sched))
        self.address = self._address(sched, time.monotonic() + 60)
        for i in range(n):
            self._start(folder, env, f"worker{i}", "worker", self.address, "--nthreads", "1", "--nworkers", "1",
                        "--no-dashboard", "--host", "127.0.0.1", "--name", f"w{i}")
        import distributed
        client = distributed.Client(self.address, timeout=60)
        try:
            client.wait_for_workers(n, timeout=120)
        finally:
            client.close()
        self.startup = time.perf_counter() - t0

    def _address(self, sched: Path, deadline: float) -> str:
        """The scheduler's address, once its file is written whole."""
        while True:
            try:
                return json.loads(sched.read_text())["address"]
            except (OSError, ValueError, KeyError):
                if time.monotonic() > deadline or self.procs[0].poll() is not None:
                    raise RuntimeError(f"the Dask scheduler did not start (see {sched.parent})") from None
                time.sleep(0.05)

    def _start(self, folder, env, name, *args):
        out = open(folder / f"{name}.log", "w")
        self.procs.append(subprocess.Popen([sys.executable, "-m", "dask", *args], stdout=out, stderr=subprocess.STDOUT,
                                           env=env, cwd=folder, start_new_session=True))

    def stop(self) -> None:
        for p in reversed(self.procs):
            _stop(p)


def measure(config: str, args) -> dict:
    """One measurement of ``config`` on the checkout imported (the child's side)."""
    import dataclasses

    from emulator import experiments

    exp = experiments.get(args.experiment)
    if args.reps:
        exp = dataclasses.replace(exp, min_reps=args.reps, max_reps=args.reps, quick_reps=args.reps)
    folder = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    cluster = None
    try:
        if config.startswith("dask"):
            cluster = LocalDask(CONFIGS[config][1], folder, dict(os.environ))
        return _timed(exp, config, cluster, folder, args)
    finally:
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(folder, ignore_errors=True)


def _timed(exp, config: str, cluster, folder: Path, args) -> dict:
    from emulator.experiments.executors import DaskPool, Inline, LocalPool
    from emulator.experiments.runner import replicate

    t0 = time.perf_counter()
    if cluster is None:
        ex = Inline() if config == "inline" else LocalPool(2)
    else:
        ex = DaskPool(cluster.address, timeout=60)
    tasks, submit, submit_all = [0], ex.submit, getattr(ex, "submit_all", None)

    def counted(*a):
        tasks[0] += 1
        return submit(*a)

    def counted_all(fn, arglists):
        tasks[0] += len(arglists)
        return submit_all(fn, arglists)
    ex.submit = counted
    if submit_all is not None:
        ex.submit_all = counted_all
    try:
        if cluster is not None and not args.cold:
            # once per connection, not per run: a fresh worker would import at its first task
            # (a forked pool inherits the imports); an older tree's DaskPool has no prepare
            if hasattr(ex, "prepare"):
                from emulator.experiments.runner import _call_batch
                ex.prepare(_call_batch, exp.point, [])  # as the runner does
            else:
                ex.client.run(importlib.import_module, exp.point.__module__)
        startup = (cluster.startup if cluster is not None else 0.0) + time.perf_counter() - t0
        t1 = time.perf_counter()
        _, computed, _, where = replicate(exp, folder / "out", quick=not args.full, progress=False, executor=ex)
        wall = time.perf_counter() - t1
    finally:
        ex.close()
    secs = [json.loads(ln)["seconds"] for ln in (folder / "out" / "runs.jsonl").read_text().splitlines()]
    mean = sum(secs) / len(secs)
    return {"where": where, "workers": ex.workers, "runs": computed, "tasks": tasks[0], "wall": wall,
            "startup": startup, "runs_per_s": computed / wall, "mean_run": mean,
            "overhead_ms": 1000 * (wall * ex.workers / computed - mean)}


def _child(repo: Path, config: str, args) -> dict:
    """``measure`` in a child process that imports ``repo``; stopped by PID if it outlives its limit."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    cmd = [sys.executable, str(HERE), "--child", config, "--experiment", args.experiment, "--reps", str(args.reps or 0)]
    cmd += [f for f, on in (("--full", args.full), ("--cold", args.cold)) if on]
    p = subprocess.Popen(cmd, cwd=repo, env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = p.communicate(timeout=args.limit)
    except subprocess.TimeoutExpired:
        _stop(p)  # SIGTERM first: the child stops its Dask processes on the way out
        raise SystemExit(f"bench_sweep: {config} on {repo} ran past {args.limit} s")
    if p.returncode != 0:
        raise SystemExit(f"bench_sweep: {config} on {repo} failed:\n{err[-3000:]}")
    return json.loads(out.strip().splitlines()[-1])


def _table(repos: list, best: dict, args) -> None:
    import dask
    import distributed
    first = best[(repos[0], "inline")]
    reps = f", {args.reps} replications per point" if args.reps else ""
    print(f"mcemu bench_sweep: {args.experiment}{'' if args.full else ' --quick'}{reps}, {first['runs']} simulation "
          f"runs, best of {args.rounds}{'; Dask workers cold (importing inside the clock)' if args.cold else ''}")
    print(f"machine: {_cpu()}, {os.cpu_count()} cores; Python {platform.python_version()}, dask {dask.__version__}, "
          f"distributed {distributed.__version__}")
    for i, r in enumerate(repos):
        print(f"[{i}] {r}")
    cols = "".join(f"{f'[{i}] start-up s':>16}{'runs/s':>8}{'tasks':>7}{'run ms':>8}{'ovh/run ms':>12}"
                   for i in range(len(repos)))
    print(f"{'executor':<26}{cols}")
    for cfg, (name, _) in CONFIGS.items():
        row = "".join(f"{best[(r, cfg)]['startup']:>16.2f}{best[(r, cfg)]['runs_per_s']:>8.1f}{best[(r, cfg)]['tasks']:>7}"
                      f"{1000 * best[(r, cfg)]['mean_run']:>8.2f}{best[(r, cfg)]['overhead_ms']:>12.2f}" for r in repos)
        print(f"{name:<26}{row}")
    print("\n" + __doc__.split("\n\n", 2)[2].strip())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--experiment", default="lazy-fig4")
    ap.add_argument("--full", action="store_true", help="the full reproduction (default: its --quick form)")
    ap.add_argument("--reps", type=int, default=30, metavar="K",
                    help="exactly K replications per point (default 30: the quick grid's short runs, 480 of "
                         "them; 0: the experiment's own stopping rule)")
    ap.add_argument("--rounds", type=int, default=3, help="best of this many (default 3)")
    ap.add_argument("--repo", action="append", type=Path, metavar="DIR",
                    help="a checkout to measure (repeat for several, side by side; default this one)")
    ap.add_argument("--limit", type=float, default=600, help="seconds one measurement may take (default 600)")
    ap.add_argument("--cold", action="store_true",
                    help="Dask workers import the simulator at their first task, inside the clock")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", choices=sorted(CONFIGS), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.reps < 0:
        ap.error("--reps must be >= 0")
    if args.child:
        print(json.dumps(measure(args.child, args)))
        return 0
    try:
        import distributed  # noqa: F401
    except ImportError:
        print("bench_sweep: needs Dask: pip install 'mcemu[dask]'", file=sys.stderr)
        return 2
    repos = [r.resolve() for r in (args.repo or [HERE.parents[1]])]
    for r in repos:
        if not (r / "emulator" / "experiments" / "runner.py").is_file():
            ap.error(f"--repo {r}: not an mcemu checkout")
    best: dict = {}
    for _ in range(args.rounds):
        for cfg in CONFIGS:
            for r in repos:
                m = _child(r, cfg, args)
                if (r, cfg) not in best or m["wall"] < best[(r, cfg)]["wall"]:
                    best[(r, cfg)] = m
    if args.json:
        print(json.dumps({str(r): {cfg: best[(r, cfg)] for cfg in CONFIGS} for r in repos}, indent=1))
    else:
        _table(repos, best, args)
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a child stopped by the parent stops its cluster
    sys.exit(main())
