"""``mcemu monitor`` (the live Rich view of a running cluster) and ``mcemu demo`` (cluster up,
a workload that keeps it busy, the monitor, a summary, cluster down; ``--network``: a mesh with
the wormhole interconnect in dilated time, a stream of pattern jobs and mpi4py example programs,
the channel view on: emulator.cli.demo_net).

The demo runs its cluster in a fresh directory under MCEMU_HOME (so it never meets a cluster
the user already runs there) and removes it afterwards. Every process of the cluster is
recorded by pid and create time while it runs; at the end the cluster's own shutdown
(``stop_cluster``) stops it, and whatever recorded process is still alive after that is
killed by pid and reported.
"""
from __future__ import annotations

import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

from emulator.cli import UsageError, print_json
from emulator.cli._client import use_key
from emulator.cli.lifecycle import cluster_processes, start_cluster, stop_cluster
from emulator.live import config as configmod
from emulator.live import home as homemod

# no allocator: the topology's (scheduler.allocators.default)
DEMO_DEFAULTS = {"topology": "hypercube:4", "scheduler": "lazy", "seconds": 60.0,
                 "load": 0.9, "time_unit": 0.2, "service_mean": 5.0}


# ---------------------------------------------------------------------- monitor


def cmd_monitor(args) -> int:
    # lazy: the monitor (Rich, ZeroMQ, the client, the kernel) costs 65 ms at start-up of every
    # mcemu command (this module is imported to build the parser), measured
    from emulator.live.client import ClientError
    from emulator.monitor import app

    use_key(args)
    if not 0 < args.fps <= 60:
        raise UsageError(f"--fps must be within 0-60 (more than 0), got {args.fps:g}")
    if args.width is not None and args.width < 40:
        raise UsageError(f"--width must be at least 40 columns, got {args.width}")
    try:
        if args.once or args.json:
            out = app.once(endpoint=args.connect, width=args.width, as_json=args.json, timeout=args.timeout,
                           events=args.events)
            if out:
                sys.stdout.write(out + "\n")
            return 0
        app.run(endpoint=args.connect, events=args.events, fps=args.fps)
    except ClientError as e:
        raise UsageError(str(e)) from None
    return 0


# ---------------------------------------------------------------------- demo


def _record(seen: dict, home: Path) -> None:
    ps = cluster_processes(home)
    for p in [ps["daemon"], ps["interconnect"], ps["launcher"], *ps["tree"]]:
        if p is None:
            continue
        try:
            seen.setdefault(p.pid, p.create_time())
        except psutil.Error:
            pass


def still_alive(seen: dict) -> list:
    """The processes of ``seen`` (pid -> create time) still running: a pid reused by another
    process since does not count."""
    out = []
    for pid, ct in seen.items():
        try:
            p = psutil.Process(pid)
            if abs(p.create_time() - ct) < 0.05 and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.Error:
            pass
    return out


def demo_jobs(topology: str, load: float, seconds: float, time_unit: float, n_jobs: int | None,
              service_mean: float, seed: int, size_dist: str | None = None) -> list[dict]:
    """The demo's workload (emulator.sim.workloads): Poisson arrivals at ``load``; ``n_jobs`` of
    them, or those arriving within ``seconds``. A mesh gets rectangles of any shape."""
    # lazy: the workloads (numpy, the scheduler package) cost 74 ms at start-up of every mcemu command
    from emulator.sim import workloads
    from scheduler.topology import parse_topology

    topo = parse_topology(topology)
    dist = size_dist or ("uniform" if topo.kind == "hypercube" else "rect-unrestricted")
    w = workloads.make_workload(topo, load, dist, "uniform", service_mean=service_mean, seed=seed)
    stream = w.jobs(n_jobs) if n_jobs else w.jobs(None, until=seconds / time_unit)
    return [{"at": j.submit, "request": j.request.to_dict(), "runtime": j.runtime, "name": f"w{i}"}
            for i, j in enumerate(stream, 1)]


class Streamer(threading.Thread):
    """Submits the jobs at their arrival times (model time x time unit after start);
    ``prepare(client, job)``, when given, makes a job's (request, runtime, name, command) on the
    running cluster (demo --network: emulator.cli.demo_net.prepare)."""

    def __init__(self, home: Path, jobs: list[dict], time_unit: float, prepare=None):
        super().__init__(daemon=True, name="demo-workload")
        self.home, self.jobs, self.unit, self.prepare = home, jobs, time_unit, prepare
        self.halt = threading.Event()
        self.submitted = 0
        self.refused = 0
        self.error: Exception | None = None

    def run(self):
        from emulator.live.client import Client, DaemonError  # lazy: see cmd_demo

        try:
            with Client(home=self.home, timeout=5.0) as c:
                t0 = time.monotonic()
                for j in self.jobs:
                    delay = t0 + j["at"] * self.unit - time.monotonic()
                    if delay > 0 and self.halt.wait(delay):
                        return
                    if self.halt.is_set():
                        return
                    try:
                        job = (j["request"], j["runtime"], j["name"], None)
                        if self.prepare is not None:
                            job = self.prepare(c, j)
                        c.submit(*job)
                        self.submitted += 1
                    except (DaemonError, UsageError):
                        self.refused += 1
        except Exception as e:  # reported in the summary; the demo still shuts down cleanly
            self.error = e


def summary_rows(cfg: dict, m: dict, unit: float, wall: float, submitted: int) -> list[tuple[str, str]]:
    def f(x, fmt="{:.3g}"):
        return "-" if x is None else fmt.format(x)

    return [
        ("cluster", f"{cfg['topology']} · {cfg['allocator']} · {cfg['scheduler']}"),
        ("time", f"{wall:.1f} s wall = {f(m['time'])} time units of {unit:g} s"),
        ("jobs submitted", str(submitted)),
        ("completed / failed / cancelled", f"{m['completed']} / {m['failed']} / {m['cancelled']}"),
        ("still waiting / running at the end", f"{m['waiting']} / {m['running']}"),
        ("utilization", f(m["utilization"], "{:.1%}")),
        ("mean queueing delay", f"{f(m['mean_queueing_delay'])} u"),
        ("mean turnaround", f"{f(m['mean_turnaround'])} u"),
        ("throughput", f"{f(m['throughput'])} jobs/u"),
        ("power (throughput / delay)", f(m["power"])),
        ("external fragmentation (sampled)", f(m["external_fragmentation"], "{:.1%}")),
    ]


def _demo_settings(args) -> tuple[dict, float, float, float]:
    """The demo's cluster (topology, allocator, scheduler; with ``--network`` the wormhole
    interconnect in dilated time), time unit, run length and load: the command line's, else
    DEMO_DEFAULTS (with ``--network``, demo_net.NET_DEFAULTS)."""
    from emulator.cli.demo_net import NET_DEFAULTS

    d = {**DEMO_DEFAULTS, **NET_DEFAULTS} if args.network else DEMO_DEFAULTS
    from scheduler.allocators import default  # lazy: every allocator, at start-up of every mcemu command

    topology = args.topology or d["topology"]
    cfg = {"topology": topology, "allocator": args.allocator or default(topology),  # a bad topology: ValueError
           "scheduler": args.scheduler or d["scheduler"]}
    # `is None`, not `or`: --load 0 is a mistake to report, not a request for the default
    unit = d["time_unit"] if args.time_unit is None else args.time_unit
    seconds = d["seconds"] if args.seconds is None else args.seconds
    load = d["load"] if args.load is None else args.load
    if seconds <= 0 or unit <= 0 or load <= 0 or (args.jobs is not None and args.jobs <= 0):
        raise UsageError("--seconds, --time-unit, --load and --jobs must be > 0")
    if args.network:
        dilation = d["dilation"] if args.net_dilation is None else args.net_dilation
        if dilation <= 0:
            raise UsageError("--net-dilation must be > 0")
        cfg.update(network="wormhole", net_time="dilated", net_dilation=dilation)
    elif args.net_dilation is not None:
        raise UsageError("--net-dilation needs --network")
    return cfg, unit, seconds, load


def _watch(args, home: Path, cfg: dict, jobs: list[dict], unit: float, seconds: float,
           seen: dict) -> tuple[dict, float, Streamer, list]:
    """Start the demo's cluster in ``home``, stream ``jobs`` into it and watch it (the live
    view, or headless; with a network, the channel view on) until ``seconds`` have passed or a
    fixed job list is done; returns the metrics, the wall seconds, the streamer and every job's
    queue row. The caller stops the cluster."""
    from emulator.live.client import Client  # lazy: see cmd_monitor and cmd_demo
    from emulator.monitor import app
    from emulator.monitor.feed import Feed

    feed = streamer = None
    try:
        start_cluster(home, cfg, time_unit=unit)
        _record(seen, home)
        feed = Feed(home)
        feed.sync()
        prepare = None
        if cfg.get("network"):
            from emulator.cli.demo_net import prepare
        streamer = Streamer(home, jobs, unit, prepare)
        streamer.start()
        t_start = time.monotonic()
        deadline = t_start + seconds

        def finished():  # a fixed number of jobs: stop once all of them ended
            if not args.jobs or streamer.submitted + streamer.refused < len(jobs):
                return False
            s = feed.state
            return sum(1 for j in s.jobs.values() if j.state in ("completed", "failed", "cancelled")) \
                >= streamer.submitted

        if not args.no_monitor and not args.json:
            app.run(feed=feed, until=deadline, stop=finished, channels=bool(cfg.get("network")))
        else:
            app.headless(feed, deadline, stop=finished)
        wall = time.monotonic() - t_start
        streamer.halt.set()
        streamer.join(timeout=10)
        _record(seen, home)
        feed.drain()
        with Client(home=home, timeout=5.0) as c:
            rows = c.queue(all=True)["jobs"]
            feed.state.apply_jobs(rows)
            now = c.status()["now"]
        return feed.state.metrics(now), wall, streamer, rows
    finally:
        if feed is not None:
            feed.close()
        if streamer is not None:
            streamer.halt.set()


def cmd_demo(args) -> int:
    # lazy: Rich costs 14 ms and the client (ZeroMQ) 19 ms at start-up of every mcemu command
    from rich.console import Console
    from rich.table import Table

    from emulator.live.client import ClientError

    cfg, unit, seconds, load = _demo_settings(args)
    if cfg.get("network"):
        from emulator.cli.demo_net import network_jobs, network_summary

        jobs = network_jobs(cfg["topology"], load, seconds, unit, args.jobs, args.seed)
    else:
        jobs = demo_jobs(cfg["topology"], load, seconds, unit, args.jobs, DEMO_DEFAULTS["service_mean"], args.seed)
    err = Console(stderr=True)
    home = Path(tempfile.mkdtemp(prefix="demo-", dir=homemod.home_dir()))
    seen: dict[int, float] = {}
    try:
        err.print(f"[bold]mcemu demo[/]: starting {cfg['topology']} ({cfg['allocator']}, {cfg['scheduler']}), "
                  f"time unit {unit:g} s, {len(jobs)} jobs at load {load:g} for up to {seconds:g} s ...")
        m, wall, streamer, final = _watch(args, home, cfg, jobs, unit, seconds, seen)
    except ClientError as e:
        raise UsageError(f"the demo cluster stopped answering: {e}") from None
    finally:
        _record(seen, home)
        res = stop_cluster(home)
        left = still_alive(seen)
        for p in left:
            try:
                p.kill()
            except Exception:
                pass
        shutil.rmtree(home, ignore_errors=True)
    if streamer.error is not None:
        err.print(f"[yellow]workload stream stopped early: {streamer.error}[/]")
    rows = summary_rows(cfg, m, unit, wall, streamer.submitted)
    net = network_summary(final) if cfg.get("network") else None
    if net is not None:
        rows[1:1] = [("network", f"wormhole, dilated time (dilation {cfg['net_dilation']:g})"),
                     *((f"{k[:-1]} jobs completed / failed / submitted",
                        f"{net[k]['completed']} / {net[k]['failed']} / {net[k]['submitted']}")
                       for k in ("patterns", "programs")),
                     ("messages through the interconnect", f"{net['messages']:,}")]
    if args.json:
        print_json({"config": {**cfg, "time_unit": unit, "load": load, "seconds": seconds},
                    "wall_seconds": wall, "submitted": streamer.submitted, "metrics": m, "network": net,
                    "pids": sorted(seen), "processes": sorted([pid, ct] for pid, ct in seen.items()),
                    "stopped": res["stopped"], "killed_after_shutdown": [p.pid for p in left]})
        return 0
    t = Table(title="mcemu demo: summary", title_justify="left", box=None, pad_edge=False,
              header_style="bold", show_header=False)
    t.add_column("metric", style="dim")
    t.add_column("value", style="bold")
    for k, v in rows:
        t.add_row(k, v)
    Console().print(t)
    err.print(f"cluster down: {len(res['stopped'])} processes stopped"
              + (f", {len(left)} killed by pid after the shutdown" if left else "; nothing left running"))
    return 0


def add_commands(sub) -> None:
    p = sub.add_parser("monitor", help="the live Rich view: node grid, queues, running jobs, metrics")
    p.add_argument("--once", action="store_true", help="print one snapshot and exit")
    p.add_argument("--json", action="store_true", help="print the snapshot as one JSON document and exit")
    p.add_argument("--width", type=int, help="columns for --once (default: the terminal's, 120 in a pipe)")
    p.add_argument("--fps", type=float, default=5.0, help="redraws per second (default 5)")
    p.add_argument("--connect", help="daemon endpoint (default: MCEMU_HOME's ipc socket)")
    p.add_argument("--events", help="the daemon's event endpoint (default: beside --connect, the next tcp port)")
    p.add_argument("--key", help="credential file for a tcp daemon (`mcemu keys issue`; default: MCEMU_KEY)")
    p.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for the daemon")
    p.set_defaults(func=cmd_monitor)

    p = sub.add_parser("demo", help="cluster up, a workload, the live monitor, a summary, cluster down")
    # the settings it shares with `mcemu up` (topology, allocator, scheduler, time unit), its own defaults
    configmod.add_arguments(p, "demo", shown=DEMO_DEFAULTS)
    p.add_argument("--seconds", type=float, help=f"how long to run (default {DEMO_DEFAULTS['seconds']:g})")
    p.add_argument("--jobs", type=int, help="submit this many jobs and stop when they are done (or at --seconds)")
    p.add_argument("--load", type=float, help=f"offered load (default {DEMO_DEFAULTS['load']:g})")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--network", action="store_true",
                   help="a mesh (mesh:8x8 by default) with the wormhole interconnect in dilated time, a stream of "
                        "pattern jobs and mpi4py example programs (docs/examples), the channel view on")
    p.add_argument("--net-dilation", type=float, metavar="D",
                   help="--network: one network microsecond lasts D wall microseconds (default 1000)")
    p.add_argument("--no-monitor", action="store_true", help="run headless: only the summary")
    p.add_argument("--json", action="store_true", help="headless; print the summary as one JSON document")
    p.set_defaults(func=cmd_demo)
