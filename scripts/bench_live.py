#!/usr/bin/env python
"""Benchmark the live cluster: start-up time and memory, submissions per second, and the
latency from submit to every task running.

Method
  start-up: ``start_cluster`` (daemon + launcher forking one agent per node) until the daemon
    reports every node registered; memory = sum of USS (unique set size, psutil) over the
    daemon, the launcher, every node agent and every node's pre-started task process, read
    once the cluster is up, idle and warm (the nodes pre-start their task processes 3-5 s
    after registering).
  submissions/s: on an idle cluster, one client pipelines N submissions (window 1024) of a
    whole-machine job with a long run time, so one runs and the rest queue: the daemon does
    arrive + journal (one transaction per poll-loop batch) + reply for each. Rate = N / wall
    time from the first send to the last acknowledgement.
  latency: on a warm 256-node cluster, submit one k-cube job at a time; latency = from just
    before the submit is sent to the client's receipt of the daemon's PUB event ``started``
    (every task of the job reported task_started: its process is the job's task on every
    node). The job runs for ``--job-runtime`` seconds (default 0.5), longer than its start,
    so that there is a moment when every task is running: with 20 ms, the first nodes' tasks
    end (SIGKILL, reap, report, ack: two more wake-ups per node) while the last nodes are
    still starting theirs, and a slow start slows itself. "idle": the next job is submitted
    ``--gap`` seconds after the previous one's ``completed`` event, when the cluster is idle
    again; "back to back": at once, while the previous job's nodes are still reporting its
    end. The first few jobs of each series are warm-up and not counted.
  host noise: where the kernel runs DAMON (a ``kdamond`` thread, e.g. a paddr ``pageout``
    scheme on a cloud VM), its CPU time during each job's start is read from
    /proc/<kdamond>/schedstat: the rmap walks it makes grow with the number of processes
    mapping the same pages (a 256-node cluster), and a burst of it on one of the two cores
    delays the start. Reported beside the headline figures (which include every job): how
    many starts it ran more than 1 ms in, and the p99 of the others.

    python scripts/bench_live.py [--sizes 64,256,1024] [--submits 20000] [--latency-runs 200]
                                 [--gap 0.5] [--job-runtime 0.5] [--latency-cubes 4,6]
                                 [--skip startup,submits,latency,back-to-back] [--out DIR]

  --out DIR also writes the latency of every job (latency.csv: series, job size, run, ms,
  kdamond ms) and its distribution per series (latency.png, when matplotlib is installed).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psutil  # noqa: E402

from emulator.cli import exit_on_termination  # noqa: E402
from emulator.cli.cluster import cluster_processes, start_cluster, stop_cluster  # noqa: E402
from emulator.live.client import Client, Events  # noqa: E402
from nodes.agent import WARM_FIRST  # noqa: E402


def uss_sum(home: Path) -> tuple[float, int]:
    ps = cluster_processes(home)
    procs = [p for p in [ps["daemon"], ps["launcher"], *ps["tree"]] if p is not None]
    total = 0
    for p in procs:
        try:
            total += p.memory_full_info().uss
        except psutil.Error:
            pass
    return total / 2**20, len(procs)


def kdamond_threads() -> list[Path]:
    """schedstat files of the kernel's DAMON threads (none where DAMON is not running)."""
    out = []
    for p in psutil.process_iter(["name"]):
        if (p.info["name"] or "").startswith("kdamond"):
            f = Path(f"/proc/{p.pid}/schedstat")
            if f.exists():
                out.append(f)
    return out


def cpu_ns(files: list[Path]) -> int:
    total = 0
    for f in files:
        try:
            total += int(f.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, math.ceil(q / 100 * len(xs)) - 1))]


def with_cluster(n_nodes: int, fn, **kw):
    home = Path(tempfile.mkdtemp(prefix="mcemu-bench-"))
    os.environ["MCEMU_HOME"] = str(home)
    dim = int(math.log2(n_nodes))
    try:
        st = start_cluster(home, topology=f"hypercube:{dim}", allocator=kw.get("allocator", "buddy"),
                           scheduler=kw.get("scheduler", "fcfs"), time_unit=kw.get("time_unit", 0.01),
                           heartbeat=kw.get("heartbeat"), timeout=120)
        return fn(home, st)
    finally:
        stop_cluster(home)
        shutil.rmtree(home, ignore_errors=True)


def bench_startup(n):
    def fn(home, st):
        time.sleep(sum(WARM_FIRST) + 1.0)  # every node has pre-started its task process
        mb, count = uss_sum(home)
        return {"nodes": n, "startup_s": round(st["startup_s"], 2), "uss_total_mib": round(mb, 1),
                "uss_per_node_mib": round(mb / n, 2), "processes": count}
    return with_cluster(n, fn)


def bench_submits(n_nodes, n_submits):
    def fn(home, st):
        dim = int(math.log2(n_nodes))
        jobs = [{"request": {"cube": dim}, "runtime": 1e6}] * n_submits
        with Client(home=home, timeout=30) as c:
            c.submit_many(jobs[:500])  # warm-up
            t = time.perf_counter()
            ids = c.submit_many(jobs[500:], window=1024)
            dt = time.perf_counter() - t
        assert all(isinstance(i, int) for i in ids)
        return {"nodes": n_nodes, "submits": len(ids), "seconds": round(dt, 3), "per_second": round(len(ids) / dt)}
    return with_cluster(n_nodes, fn)


def bench_latency(n_nodes, sizes, runs, gap=0.5, warmup=5, job_runtime=0.5, time_unit=0.01, rows=None,
                  label=""):
    """Submit one job at a time; ``gap`` seconds after the previous job's completion (the
    cluster idle again: its nodes have re-armed their task processes and sent their
    results), or at once (``gap`` 0: back to back). Appends (label, nodes, run, ms,
    kdamond ms) to ``rows`` for every counted job."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    kd = kdamond_threads()

    def fn(home, st):
        out = {}
        ev = Events(home=home, topics=(b"job",))
        # the nodes pre-start their first task process 3-5 s after registering (agent.WARM_FIRST);
        # a job submitted before then forks its tasks cold
        time.sleep(sum(WARM_FIRST) + 1.0)
        console = Console(stderr=True)
        # no refresh thread: the bar is redrawn between jobs, never while one starts
        with Client(home=home, timeout=10) as c, \
                Progress(TextColumn(f"[bold]latency {label}[/] {{task.description}}"), BarColumn(),
                         MofNCompleteColumn(), TimeElapsedColumn(), console=console, auto_refresh=False,
                         disable=not console.is_terminal) as bar:
            for k in sizes:
                lat, noise = [], []
                task = bar.add_task(f"{1 << k}-node jobs", total=warmup + runs)
                for i in range(warmup + runs):
                    if gap:
                        time.sleep(gap)
                    k0 = cpu_ns(kd)
                    t = time.perf_counter()
                    jid = c.submit({"cube": k}, runtime=job_runtime / time_unit)
                    started = None
                    while True:
                        r = ev.recv(10)
                        assert r is not None, "no event"
                        m = r[1]
                        if m["job"] != jid:
                            continue
                        if m["state"] == "started" and started is None:
                            started = time.perf_counter() - t
                            k1 = cpu_ns(kd)
                        if m["state"] in ("completed", "failed"):
                            break
                    if i >= warmup:
                        lat.append(started * 1000)
                        noise.append((k1 - k0) / 1e6)
                        if rows is not None:
                            rows.append((label, 1 << k, i - warmup, round(lat[-1], 3), round(noise[-1], 3)))
                    bar.update(task, advance=1, refresh=True)
                r = {"runs": runs, "job_runtime_s": job_runtime, "p50_ms": round(pct(lat, 50), 2),
                     "p90_ms": round(pct(lat, 90), 2), "p99_ms": round(pct(lat, 99), 2),
                     "max_ms": round(max(lat), 2)}
                if kd:
                    quiet = [x for x, n in zip(lat, noise) if n <= 1.0]
                    r["kdamond"] = {"starts_with_over_1ms": len(lat) - len(quiet),
                                    "p99_ms_of_the_others": round(pct(quiet, 99), 2) if quiet else None}
                out[f"{1 << k}-node job"] = r
        ev.close()
        return out
    return with_cluster(n_nodes, fn, time_unit=time_unit)


def write_latency(out: Path, rows):
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "latency.csv", "w") as f:
        f.write("series,nodes,run,ms,kdamond_ms\n")
        for r in rows:
            f.write(",".join(map(str, r)) + "\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return [out / "latency.csv"]
    fig, ax = plt.subplots(figsize=(7, 4))
    for key in sorted({(r[0], r[1]) for r in rows}):
        xs = sorted(r[3] for r in rows if (r[0], r[1]) == key)
        ax.plot(xs, [(i + 1) / len(xs) for i in range(len(xs))], drawstyle="steps-post",
                label=f"{key[1]}-node job, {key[0]}")
    ax.axvline(20, color="grey", linestyle=":", label="target p99 (64 nodes, idle)")
    ax.set_xlabel("submit to every task running (ms)")
    ax.set_ylabel("fraction of jobs")
    ax.set_title("mcemu live: start latency on a 256-node cluster")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "latency.png", dpi=120)
    plt.close(fig)
    return [out / "latency.csv", out / "latency.png"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--sizes", default="64,256,1024")
    ap.add_argument("--submits", type=int, default=20000)
    ap.add_argument("--latency-runs", type=int, default=200)
    ap.add_argument("--gap", type=float, default=0.5,
                    help="latency: seconds from a job's completion to the next submit (idle cluster); "
                         "0 = back to back")
    ap.add_argument("--latency-cubes", default="4,6", help="job sizes as cube dimensions")
    ap.add_argument("--job-runtime", type=float, default=0.5, help="latency: each job's run time in seconds")
    ap.add_argument("--skip", default="", help="comma list of: startup,submits,latency,back-to-back")
    ap.add_argument("--out", type=Path, help="write latency.csv (every job) and latency.png here")
    a = ap.parse_args(argv)
    rows = []
    skip = set(a.skip.split(","))
    res = {"cpu_count": os.cpu_count()}
    if "startup" not in skip:
        res["startup"] = []
        for n in map(int, a.sizes.split(",")):
            r = bench_startup(n)
            print(json.dumps(r), flush=True)
            res["startup"].append(r)
    if "submits" not in skip:
        r = bench_submits(256, a.submits)
        print(json.dumps(r), flush=True)
        res["submits"] = r
    cubes = [int(x) for x in a.latency_cubes.split(",")]
    if "latency" not in skip:
        r = bench_latency(256, cubes, a.latency_runs, a.gap, job_runtime=a.job_runtime, rows=rows, label="idle")
        print(json.dumps({"latency idle": r}), flush=True)
        res["latency_idle"] = r
    if "back-to-back" not in skip:
        r = bench_latency(256, cubes, a.latency_runs, 0.0, job_runtime=a.job_runtime, rows=rows,
                          label="back to back")
        print(json.dumps({"latency back to back": r}), flush=True)
        res["latency_back_to_back"] = r
    if a.out and rows:
        res["files"] = [str(f) for f in write_latency(a.out, rows)]
    print(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    with exit_on_termination():  # SIGTERM still stops the cluster it started
        sys.exit(main())
