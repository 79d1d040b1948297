"""CLI start-up: what one ``mcemu`` call costs over a bare interpreter.

    python scripts/bench_cli.py                              # this tree
    python scripts/bench_cli.py --repo /tmp/cli-old --repo .  # two trees side by side

Method: each command is a fresh ``python`` process (``sys.executable``) run in a tree's root,
so ``-m emulator`` imports that tree (the current directory is first on ``sys.path``, before
an editable install); its wall time is from the spawn to its exit (``time.perf_counter``
around ``subprocess.run``), standard output to a pipe that is read (as a script reading
``mcemu queue`` would), ``--runs`` times each. The rounds interleave the trees and the
commands, so a load that comes and goes on the host weighs on all of them alike; the table
gives the median and the minimum of each, and each command's median over ``python -c pass``.

Bytecode: an installed mcemu imports compiled ``.pyc`` files; with PYTHONDONTWRITEBYTECODE set
(as in some development environments) every call compiles every module it imports from
source, which costs more than the imports themselves. ``--bytecode cached`` (the default
measures both) runs with PYTHONPYCACHEPREFIX in a temporary directory (written at the warm-up
run, the trees stay clean); ``source`` with PYTHONDONTWRITEBYTECODE=1.

Measured: ``python -c pass`` (the interpreter alone), ``python -m emulator --help`` (the
parser: every command group imported) and ``python -m emulator queue`` against a running
cluster (a hypercube:2 started here in a temporary MCEMU_HOME with the last tree, a few jobs
queued, stopped by ``mcemu down`` at the end). ``python -X importtime -m emulator queue``
shows where a call's imports go.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = {"python -c pass": ["-c", "pass"], "mcemu --help": ["-m", "emulator", "--help"],
            "mcemu queue": ["-m", "emulator", "queue"]}


def _run(repo: Path, argv: list[str], env: dict) -> float:
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, *argv], cwd=repo, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} in {repo} -> {r.returncode}: {r.stderr.decode()[-500:]}")
    return dt


def _which(repo: Path, env: dict) -> str:
    """The emulator package a tree's ``python -m emulator`` imports (checked, not assumed)."""
    r = subprocess.run([sys.executable, "-c", "import emulator; print(emulator.__file__)"], cwd=repo, env=env,
                       capture_output=True, text=True, check=True)
    return r.stdout.strip()


def _cluster(repo: Path, env: dict, jobs: int) -> None:
    mcemu = [sys.executable, "-m", "emulator"]
    subprocess.run([*mcemu, "up", "--detach", "--topology", "hypercube:2", "--no-restart"], cwd=repo, env=env,
                   check=True, capture_output=True)
    for i in range(jobs):
        subprocess.run([*mcemu, "submit", "--cube", "1", "--runtime", "600", "--name", f"bench{i}"], cwd=repo,
                       env=env, check=True, capture_output=True)


def _envs(home: Path, modes) -> dict:
    base = dict(os.environ, MCEMU_HOME=str(home))
    for k in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX"):
        base.pop(k, None)
    envs = {}
    if "cached" in modes:
        envs["cached"] = dict(base, PYTHONPYCACHEPREFIX=str(home / "pycache"))
    if "source" in modes:
        envs["source"] = dict(base, PYTHONDONTWRITEBYTECODE="1")
    return envs


def measure(repos: list[Path], runs: int, jobs: int, modes) -> dict:
    home = Path(tempfile.mkdtemp(prefix="mcemu-bench-cli-"))
    envs = _envs(home, modes)
    env0 = next(iter(envs.values()))
    keys = [(m, str(r), c) for m in envs for r in repos for c in COMMANDS]
    times: dict = {k: [] for k in keys}
    try:
        _cluster(repos[-1], env0, jobs)
        for mode, env in envs.items():  # one warm-up each (the page cache; the .pyc files of "cached")
            for repo in repos:
                for argv in COMMANDS.values():
                    _run(repo, argv, env)
        for i in range(runs):
            for mode, env in envs.items():
                for repo in (repos if i % 2 == 0 else repos[::-1]):
                    for name, argv in COMMANDS.items():
                        times[(mode, str(repo), name)].append(_run(repo, argv, env))
    finally:
        subprocess.run([sys.executable, "-m", "emulator", "down"], cwd=repos[-1], env=env0, capture_output=True)
        trees = {str(r): _which(r, env0) for r in repos}
        shutil.rmtree(home, ignore_errors=True)
    return {"runs": runs, "python": sys.version.split()[0], "cpus": os.cpu_count(), "trees": trees,
            "ms": {f"{m} :: {r} :: {c}": {"median": 1000 * statistics.median(v), "min": 1000 * min(v)}
                   for (m, r, c), v in times.items()}}


def report(res: dict, repos: list[Path]) -> None:
    print(f"CLI start-up, wall ms from spawn to exit; median (min) of {res['runs']} interleaved runs; "
          f"python {res['python']}, {res['cpus']} CPUs")
    for r in repos:
        print(f"  tree {r}: imports {res['trees'][str(r)]}")
    modes = dict.fromkeys(k.split(" :: ")[0] for k in res["ms"])
    print(f"{'bytecode':<9}{'command':<17}" + "".join(f"{Path(r).name or str(r):>24}" for r in repos))
    for mode in modes:
        for c in COMMANDS:
            cells = []
            for r in repos:
                m = res["ms"][f"{mode} :: {r} :: {c}"]
                base = res["ms"][f"{mode} :: {r} :: python -c pass"]["median"]
                over = "" if c == "python -c pass" else f" +{m['median'] - base:.0f}"
                cells.append(f"{m['median']:.0f} ({m['min']:.0f}){over}")
            print(f"{mode:<9}{c:<17}" + "".join(f"{x:>24}" for x in cells))
    print("(+N: the median over python -c pass's, same tree and bytecode)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", action="append", type=Path,
                    help="a tree to measure (repeatable; default: this one); the last starts the cluster")
    ap.add_argument("--runs", type=int, default=15, help="runs of each command per tree (default 15)")
    ap.add_argument("--jobs", type=int, default=4, help="jobs queued on the cluster (default 4)")
    ap.add_argument("--bytecode", choices=("both", "cached", "source"), default="both",
                    help="cached .pyc files, compiling from source at every call, or both (default)")
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    a = ap.parse_args(argv)
    repos = [p.resolve() for p in (a.repo or [ROOT])]
    if a.runs < 1:
        ap.error("--runs must be >= 1")
    res = measure(repos, a.runs, a.jobs, ("cached", "source") if a.bytecode == "both" else (a.bytecode,))
    if a.json:
        print(json.dumps(res, indent=2))
    else:
        report(res, repos)
    return 0


if __name__ == "__main__":
    sys.exit(main())
