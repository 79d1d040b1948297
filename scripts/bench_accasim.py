#!/usr/bin/env python3
"""mcemu against AccaSim 1.1.3 on the NASA iPSC/860 log, FCFS on 128 flat processors (issue 3).

Both simulators replay the same jobs in one run of this script:

* mcemu: ``hypercube:7`` (128 nodes), allocator ``naive`` (the lowest free node ids, no
  shape: a flat machine), discipline ``fcfs`` (blocking), ``emulator.sim.swf.read_jobs`` +
  ``emulator.sim.simulator.Simulation``;
* AccaSim 1.1.3 (PyPI): ``Simulator`` with ``FirstInFirstOut(FirstFit())`` (FIFO by submit
  time; FirstFit without ``skip`` stops at the first job that does not fit: blocking FCFS) on
  a system of 128 nodes with one core each.

AccaSim is not a dependency of this project. The script keeps it in a private virtual
environment under the cache directory (``$MCEMU_CACHE``, else ``$XDG_CACHE_HOME/mcemu``, else
``~/.cache/mcemu``; ``accasim-venv``), creating it and ``pip install accasim==1.1.3`` on first
use, and runs AccaSim in a subprocess with that interpreter (``--venv DIR`` uses an existing
environment instead). AccaSim predates Python 3.10: its imports of ``collections.Mapping``
and friends are satisfied by aliasing every ``collections.abc`` name into ``collections``
before it is imported.

The same jobs (what each simulator is fed; nothing is copied into the repository):

* the log is read once by ``emulator.sim.swf.read_jobs`` (submit = field 2, processors = field 5,
  or field 8 when 5 is unknown; run time = field 4), which mcemu replays directly;
* AccaSim reads plain-text SWF only (``open()``, no gzip) and takes its processors from field
  8 (requested) before field 5 (allocated); so a plain SWF is written to a temporary
  directory with those very jobs, the processors in both fields 5 and 8;
* run time 0 (173 jobs of the NASA log: under a second at the log's one-second resolution):
  AccaSim starts and finishes such a job at the same instant, in the same scheduling pass, so
  its processors are counted as taken in that pass and the jobs queued behind it wait for the
  next event; mcemu refuses a zero run time and ``read_jobs`` uses ``min_runtime``. Both are
  given 1 second (``read_jobs(..., min_runtime=1)`` and ``run = 1`` in AccaSim's file), so
  both see identical integer jobs;
* time resolution: AccaSim's SWF parser reads integer seconds and its clock is integral;
  the NASA log is integral, so nothing is rounded.

Timing (each simulator in a fresh subprocess, best of k, default 5, ``--quick`` 1; one core:
this script pins itself to one CPU before it starts them, so both run on that CPU, with
numpy's thread pools at one thread, ``scripts/onecore.py``):
``simulation call`` is AccaSim's ``Simulator.start_simulation()`` (which also reads and
parses the SWF incrementally) against mcemu's ``read_jobs`` + ``Simulation.run()``, the like
for like comparison (the headline ratio); ``simulate only`` is mcemu's ``Simulation.run()``
alone; ``process`` is the whole subprocess as seen from this script (interpreter start,
imports, setup, run). Wall times and the CPU time of the calls are reported: other
processes on the machine inflate wall time more than CPU time. AccaSim's result files are
turned off (no scheduling, statistics or benchmark output), so neither side writes files.

Mean waits: AccaSim's is the mean of ``EventManager.wtimes`` (start - submit of every
completed job), mcemu's ``mean_queueing_delay`` (R/A over all jobs). Per-job waits are
compared too (AccaSim's through an ``AdditionalData`` hook that records each completed job,
in extra untimed runs of both, ``--no-per-job`` skips them); any job whose waits differ is
reported.

    python scripts/bench_accasim.py [--quick] [--json] [--repeat K] [--venv DIR] [--trace FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from emulator.sim import swf  # noqa: E402
from onecore import limit_threads, pin_one_core  # noqa: E402  (scripts/onecore.py)

ACCASIM = "accasim==1.1.3"
TRACE = ROOT.parent / "shared" / "traces" / "NASA-iPSC-1993-3.1-cln.swf.gz"
NODES = 128
TOPOLOGY = "hypercube:7"
TARGET_RATIO = 30.0
ZERO_RUNTIME = 1  # seconds given to run-time-0 jobs, in both simulators

# ----------------------------------------------------------------------------- runners

# Runs in AccaSim's venv. argv: swf, system config, results dir. Prints one JSON object.
ACCASIM_RUNNER = r'''
import collections, collections.abc, json, resource, sys, time
for _n in collections.abc.__all__:  # AccaSim 1.1.3 imports collections.Mapping & co.
    if not hasattr(collections, _n):
        setattr(collections, _n, getattr(collections.abc, _n))
t0 = time.perf_counter()
from accasim.base.simulator_class import Simulator
from accasim.base.scheduler_class import FirstInFirstOut
from accasim.base.allocator_class import FirstFit
from accasim.base.additional_data import AdditionalData
import accasim
t_import = time.perf_counter() - t0
swf, cfg, out, record = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"

class Recorder(AdditionalData):
    """Records (id, submit, start) of every completed job; does nothing else."""
    def __init__(self, event_manager=None):
        super().__init__(event_manager)
        self.rows = []
    def exec_before_dispatching(self, job_dict, queued_jobs): pass
    def exec_after_dispatching(self, job_dict, to_dispatch_jobs, rejected_jobs): pass
    def exec_before_submission(self, *a, **k): pass
    def exec_after_submission(self, *a, **k): pass
    def exec_before_completion(self, *a, **k): pass
    def exec_after_completion(self, removed_jobs):
        self.rows.extend((j.id, j.queued_time, j.start_time) for j in removed_jobs)
    def stop(self): pass

t0 = time.perf_counter()
# The class, not an instance: AccaSim hands instances the event manager before it exists.
sim = Simulator(swf, cfg, FirstInFirstOut(FirstFit()), additional_data=[Recorder] if record else [],
                RESULTS_FOLDER_PATH=out, scheduling_output=False, statistics_output=False,
                benchmark_output=False, pprint_output=False, show_statistics=False,
                LOG_LEVEL="WARNING")
t_setup = time.perf_counter() - t0
c0, t0 = time.process_time(), time.perf_counter()
sim.start_simulation()
t_sim, c_sim = time.perf_counter() - t0, time.process_time() - c0
w = sim.mapper.wtimes
rows = sim.mapper.additional_data[0].rows if record else []
print(json.dumps({
    "version": getattr(accasim, "__version__", None), "python": sys.version.split()[0],
    "import_seconds": t_import, "setup_seconds": t_setup,
    "call_seconds": t_sim, "call_cpu_seconds": c_sim,
    "process_cpu_seconds": resource.getrusage(resource.RUSAGE_SELF).ru_utime
                           + resource.getrusage(resource.RUSAGE_SELF).ru_stime,
    "loaded": sim.loaded_jobs, "dispatched": sim.dispatched_jobs, "rejected": sim.rejected_jobs,
    "completed": len(w), "mean_wait": sum(w) / len(w) if w else None,
    "waits": {str(i): s - q for i, q, s in rows},
}))
'''

# Runs with this interpreter. argv: repo root, trace, topology, zero runtime. One JSON object.
MCEMU_RUNNER = r'''
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
t0 = time.perf_counter()
from emulator.sim import swf
from emulator.sim.simulator import Simulation
from scheduler.stack import StackConfig, build
t_import = time.perf_counter() - t0
trace, topology, zero, record = sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5] == "1"
t0 = time.perf_counter()
d = build(StackConfig(topology, "naive", "fcfs")).policy
t_setup = time.perf_counter() - t0
starts = {}
c0, t0 = time.process_time(), time.perf_counter()
jobs = swf.read_jobs(trace, topology, min_runtime=zero)
t_read, c_read = time.perf_counter() - t0, time.process_time() - c0
c1, t1 = time.process_time(), time.perf_counter()
res = Simulation(d, jobs).run()
t_sim, c_sim = time.perf_counter() - t1, time.process_time() - c1
m = res.metrics
waits = {}
if record:  # per-job waits from a second, identical run with a start trace (not timed)
    Simulation(build(StackConfig(topology, "naive", "fcfs")).policy, jobs,
               trace=lambda k, t, s: waits.__setitem__(str(s.job.id), t - s.job.submit)
               if k == "start" else None).run()
print(json.dumps({
    "python": sys.version.split()[0], "import_seconds": t_import, "setup_seconds": t_setup,
    "read_seconds": t_read, "read_cpu_seconds": c_read,
    "simulate_seconds": t_sim, "simulate_cpu_seconds": c_sim,
    "call_seconds": t_read + t_sim, "call_cpu_seconds": c_read + c_sim,
    "process_cpu_seconds": resource.getrusage(resource.RUSAGE_SELF).ru_utime
                           + resource.getrusage(resource.RUSAGE_SELF).ru_stime,
    "jobs": len(jobs), "clamped_zero_runtime": len(jobs.clamped), "skipped": jobs.skipped_count,
    "completed": m["completed"], "events": m["events"],
    "mean_wait": m["mean_queueing_delay"], "waits": waits,
}))
'''

# ----------------------------------------------------------------------------- AccaSim venv


def cache_dir() -> Path:
    if os.environ.get("MCEMU_CACHE"):
        return Path(os.environ["MCEMU_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mcemu"


def venv_python(env: Path) -> Path:
    return env / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


CHECK = ("import collections, collections.abc\n"
         "[setattr(collections, n, getattr(collections.abc, n)) for n in collections.abc.__all__ "
         "if not hasattr(collections, n)]\n"
         "import accasim.base.simulator_class, importlib.metadata as m; print(m.version('accasim'))")


def accasim_version(py: Path) -> str | None:
    if not py.exists():
        return None
    r = subprocess.run([str(py), "-c", CHECK], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


def ensure_accasim(env: Path | None, log) -> tuple[Path, str, bool]:
    """(interpreter, version, installed now) of a venv holding AccaSim 1.1.3."""
    explicit = env is not None
    env = env or cache_dir() / "accasim-venv"
    py = venv_python(env)
    v = accasim_version(py)
    if v:
        return py, v, False
    if explicit and py.exists():
        raise SystemExit(f"{env} has no working AccaSim; drop --venv to use the cache, or install "
                         f"{ACCASIM} there")
    log(f"installing {ACCASIM} into a private venv at {env} (one time; not a project dependency)")
    if env.exists():
        shutil.rmtree(env)
    env.parent.mkdir(parents=True, exist_ok=True)
    venv.EnvBuilder(with_pip=True, clear=True).create(env)
    r = subprocess.run([str(py), "-m", "pip", "install", "--disable-pip-version-check", "-q", ACCASIM],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"pip could not install {ACCASIM} into {env}:\n{r.stderr[-2000:]}")
    v = accasim_version(py)
    if not v:
        raise SystemExit(f"{ACCASIM} installed into {env} but does not import")
    return py, v, True


# ----------------------------------------------------------------------------- inputs


def write_inputs(jobs, work: Path) -> tuple[Path, Path]:
    """AccaSim's plain SWF of exactly ``jobs`` and its system config (128 x 1 core)."""
    log = work / "nasa-accasim.swf"
    with open(log, "w") as f:
        f.write(f"; mcemu bench_accasim: {len(jobs)} jobs, run time 0 given {ZERO_RUNTIME} s\n")
        for j in jobs:
            sub, run, p = j.submit, j.runtime, j.request.processors_needed
            if sub != int(sub) or run != int(run):
                raise SystemExit(f"job {j.id}: AccaSim reads integer seconds, got submit {sub}, run {run}")
            user = j.meta.get("user", -1)
            f.write(f"{j.id} {int(sub)} -1 {int(run)} {p} -1 -1 {p} -1 -1 -1 {user} -1 -1 -1 -1 -1 -1\n")
    cfg = work / "system.json"
    cfg.write_text(json.dumps({"groups": {"node": {"core": 1}}, "resources": {"node": NODES}}))
    return log, cfg


def run_json(cmd, cwd) -> tuple[dict, float]:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd[:2]))} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1]), wall


def best_of(runs: list[dict], keys) -> dict:
    out = dict(runs[0])
    for k in keys:
        out[k] = min(r[k] for r in runs)
    return out


# ----------------------------------------------------------------------------- main


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="one repeat instead of 5")
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    ap.add_argument("--repeat", type=int, default=None, help="k of best-of-k")
    ap.add_argument("--venv", type=Path, default=None, help="an existing venv with AccaSim 1.1.3")
    ap.add_argument("--no-per-job", dest="per_job", action="store_false",
                    help="skip the extra untimed runs that compare every job's wait")
    ap.add_argument("--trace", type=Path, default=TRACE, help="the SWF log (default: the NASA iPSC/860 log)")
    args = ap.parse_args(argv)
    repeat = args.repeat or (1 if args.quick else 5)
    log = (lambda msg: print(msg, file=sys.stderr)) if args.json else (lambda msg: print(msg))
    if not args.trace.exists():
        raise SystemExit(f"trace not found: {args.trace} (expected ../shared/traces next to the repo)")

    py, version, installed = ensure_accasim(args.venv, log)
    limit_threads()  # the subprocesses import numpy (mcemu) with one thread for its pools
    pinning = pin_one_core()  # both simulators on the same one CPU (the subprocesses inherit it)
    jobs = swf.read_jobs(args.trace, TOPOLOGY, min_runtime=ZERO_RUNTIME)
    with tempfile.TemporaryDirectory(prefix="mcemu-accasim-") as tmp:
        work = Path(tmp)
        acc_swf, cfg = write_inputs(jobs, work)
        (work / "results").mkdir()
        (work / "acc_runner.py").write_text(ACCASIM_RUNNER)
        (work / "mc_runner.py").write_text(MCEMU_RUNNER)
        mc_cmd = [sys.executable, str(work / "mc_runner.py"), str(ROOT), str(args.trace), TOPOLOGY,
                  str(ZERO_RUNTIME)]
        acc_cmd = [str(py), str(work / "acc_runner.py"), str(acc_swf), str(cfg), str(work / "results")]
        mc_runs, acc_runs = [], []
        for i in range(repeat):
            log(f"timed run {i + 1}/{repeat}: mcemu, then AccaSim")
            r, wall = run_json(mc_cmd + ["0"], work)
            mc_runs.append({**r, "process_seconds": wall})
            r, wall = run_json(acc_cmd + ["0"], work)
            acc_runs.append({**r, "process_seconds": wall})
        if args.per_job:
            log("untimed runs recording every job's wait")
            mw = run_json(mc_cmd + ["1"], work)[0]["waits"]
            aw = run_json(acc_cmd + ["1"], work)[0]["waits"]
    timing = ("call_seconds", "call_cpu_seconds", "process_seconds", "process_cpu_seconds")
    mc = best_of(mc_runs, timing + ("read_seconds", "simulate_seconds", "simulate_cpu_seconds"))
    acc = best_of(acc_runs, timing)
    for r in (mc, acc):
        r.pop("waits", None)
    if args.per_job:
        differ = sorted((k for k in mw if k in aw and mw[k] != aw[k]), key=int)
        missing = sorted(set(mw) ^ set(aw), key=int)
    else:
        mw = aw = {}
        differ, missing = [], []
    out = {
        "benchmark": "NASA iPSC/860 log, FCFS on 128 flat processors: mcemu vs AccaSim",
        "trace": str(args.trace), "jobs": len(jobs), "zero_runtime_jobs": len(jobs.clamped),
        "zero_runtime_given_seconds": ZERO_RUNTIME, "repeat": repeat,
        "mcemu": {"topology": TOPOLOGY, "allocator": "naive", "scheduler": "fcfs", **mc},
        "accasim": {"package": ACCASIM, "installed_version": version, "venv": str(py.parent.parent),
                    "installed_now": installed, "scheduler": "FirstInFirstOut(FirstFit())",
                    "system": f"{NODES} nodes x 1 core", **acc},
        "ratio_call": acc["call_seconds"] / mc["call_seconds"],
        "ratio_call_cpu": acc["call_cpu_seconds"] / mc["call_cpu_seconds"],
        "ratio_simulate_only": acc["call_seconds"] / mc["simulate_seconds"],
        "ratio_process": acc["process_seconds"] / mc["process_seconds"],
        "target_ratio": TARGET_RATIO,
        "mean_wait_difference": mc["mean_wait"] - acc["mean_wait"],
        "jobs_with_different_wait": len(differ),
        "first_different": [{"job": k, "mcemu": mw[k], "accasim": aw[k]} for k in differ[:10]],
        "jobs_missing_in_one": len(missing),
        "per_job_compared": bool(args.per_job),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "cpu_pinning": pinning,
    }
    out["meets_target"] = out["ratio_call"] >= TARGET_RATIO
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        report(out)
    return 0


def report(out: dict) -> None:
    c = Console(width=None if sys.stdout.isatty() else 120)
    mc, acc = out["mcemu"], out["accasim"]
    c.print(f"[bold]{out['benchmark']}[/]\n[dim]{out['trace']}: {out['jobs']} jobs "
            f"({out['zero_runtime_jobs']} with run time 0, given {out['zero_runtime_given_seconds']} s in both); "
            f"best of {out['repeat']}; {out['cpu_pinning']}; load average "
            f"{', '.join(f'{x:.2f}' for x in out['load_average']) if out['load_average'] else 'n/a'}[/]")
    t = Table(header_style="bold")
    for col in ("simulator", "policy", "simulation call s", "(cpu s)", "of which simulate s",
                "process s", "completed", "mean wait s"):
        t.add_column(col, justify="left" if col in ("simulator", "policy") else "right")
    t.add_row("mcemu", f"{mc['allocator']}+{mc['scheduler']}, {mc['topology']}",
              f"{mc['call_seconds']:.3f}", f"{mc['call_cpu_seconds']:.3f}", f"{mc['simulate_seconds']:.3f}",
              f"{mc['process_seconds']:.2f}", str(mc["completed"]), f"{mc['mean_wait']:.6f}")
    t.add_row(f"AccaSim {acc['installed_version']}", f"FIFO+FirstFit, {NODES}x1 core",
              f"{acc['call_seconds']:.3f}", f"{acc['call_cpu_seconds']:.3f}", "-",
              f"{acc['process_seconds']:.2f}", str(acc["completed"]), f"{acc['mean_wait']:.6f}")
    c.print(t)
    colour = "green" if out["meets_target"] else "red"
    c.print(f"mcemu is [bold {colour}]{out['ratio_call']:.1f}x[/] faster (simulation call, wall; "
            f"target {out['target_ratio']:g}x); CPU time {out['ratio_call_cpu']:.1f}x; "
            f"against mcemu's simulation alone {out['ratio_simulate_only']:.1f}x; whole process "
            f"{out['ratio_process']:.1f}x")
    c.print(f"[dim]mcemu's call = read_jobs {mc['read_seconds']:.3f} s + Simulation.run "
            f"{mc['simulate_seconds']:.3f} s ({mc['events']} events); AccaSim's = start_simulation() "
            f"(reads the SWF as it goes)[/]")
    if not out["per_job_compared"]:
        c.print(f"mean waits differ by {out['mean_wait_difference']:.6g} s (per-job waits not compared)")
    elif out["jobs_with_different_wait"] == 0 and out["jobs_missing_in_one"] == 0:
        c.print(f"mean waits agree (difference {out['mean_wait_difference']:.3g} s); every job's wait is "
                f"the same in both")
    else:
        c.print(f"[yellow]mean waits differ by {out['mean_wait_difference']:.6g} s; "
                f"{out['jobs_with_different_wait']} jobs wait differently, "
                f"{out['jobs_missing_in_one']} appear in one only; first: {out['first_different'][:3]}[/]")


if __name__ == "__main__":
    raise SystemExit(main())
