"""``mcemu simulate``: one discrete-event run, synthetic workload or SWF trace.

Every ``mcemu`` command imports this module to build its parser, so what a simulation needs
is imported inside the functions that run one, not here (measured on top of ``mcemu --help``'s
imports: the workload generators 74 ms with numpy, the SWF reader 78 ms, the simulator 49 ms,
the communication model 53 ms, the gang simulator 52 ms, scheduler.stack 43 ms with every
registry built, scheduler.comm_profile 6 ms, rich 14 ms and its progress bar 17 ms).
"""
from __future__ import annotations

import os
import sys
import time

from emulator.cli import UsageError, print_json
from emulator.jsonable import jsonable as _jsonable


def _comm(args, topo):
    """``--comm`` profiles, or None: [(CommProfile, share)]."""
    if not args.comm:
        return None
    from scheduler.comm_profile import parse_comm  # lazy: see the module docstring

    return [parse_comm(spec) for spec in args.comm]


def _size_dist(args, topo, profiles):
    """The size distribution: --size-dist, else uniform on a cube and processors on a mesh;
    with --comm on a mesh, square-var when a profile's pattern needs square jobs."""
    if args.size_dist:
        return args.size_dist
    if topo.kind == "hypercube":
        return "uniform"
    if profiles and not all(c.fits(2, 3) for c, _ in profiles):
        return "square-var"
    return "processors"


def _model(args, topo, profiles):
    """The communicating jobs' work model and the JSON's ``network`` block (time unit rule)."""
    from emulator.sim.comm_work import CommWork, auto_unit  # lazy: see the module docstring

    unit = args.net_time_unit.strip().lower()
    if unit == "auto":
        if args.trace:
            us, rule = args.time_unit * 1e6, "auto: the trace's --time-unit seconds"
        else:
            us = auto_unit(profiles, args.service_mean, length=args.message_length, flit_time=args.flit_time)
            rule = ("auto: the profiles' mean contention-free run time K x (MTBS + L x T_t) is "
                    "--service-mean units")
    else:
        try:
            us = float(unit)
        except ValueError:
            raise UsageError(f"--net-time-unit must be microseconds per time unit or auto, "
                             f"got {args.net_time_unit!r}") from None
        rule = "given (--net-time-unit)"
    model = CommWork(topo, unit_us=us, flit_time=args.flit_time, length=args.message_length, seed=args.seed)
    net = {**model.settings(), "time_unit_rule": rule,
           "profiles": [{"comm": str(c), "share": s} for c, s in profiles]}
    return model, net


def _jobs(args, topo, profiles=None):
    from emulator.sim import workloads  # lazy: see the module docstring

    if args.trace:
        from emulator.sim import swf

        jobs = swf.read_jobs(args.trace, topo, time_unit=args.time_unit)
        return jobs, {"trace": str(args.trace), "jobs": len(jobs)}
    if args.load is None:
        raise UsageError("a synthetic run needs --load (or give --trace FILE)")
    size_dist = _size_dist(args, topo, profiles)
    wl = workloads.make_workload(
        topo, load=args.load, size_dist=size_dist, service=args.service,
        service_mean=args.service_mean, demand=args.demand, seed=args.seed,
    )
    info = {"load": args.load, "arrival_rate": wl.rate, "mean_job_size": wl.mean_size,
            "size_dist": wl.size_dist, "service": wl.service, "service_mean": wl.service_mean,
            "demand": wl.demand, "seed": args.seed}
    return wl.jobs(), info


def run(args) -> int:
    from emulator.sim.simulator import Simulation  # lazy: see the module docstring
    from scheduler.stack import StackConfig, build
    from scheduler.topology import parse_topology

    topo = parse_topology(args.topology)
    if args.time is None and args.jobs is None and not args.trace:
        raise UsageError("give --time T (observation time) or --jobs N (completions)")
    if args.time is not None and args.time <= 0:
        raise UsageError("--time must be > 0")
    if args.jobs is not None and args.jobs <= args.warmup:
        raise UsageError("--jobs must exceed --warmup")
    # --gang none means no time sharing, --reduction none no reduction (StackConfig.from_options)
    config = StackConfig.from_options(topology=topo, allocator=args.allocator, scheduler=args.scheduler,
                                      reduction=args.reduction, gang=args.gang, params=args.param or ())
    params = dict(config.params)
    for flag, path in (("--write-swf", args.write_swf), ("--jobs-out", args.jobs_out)):
        if path:
            _check_output(path, flag)  # before the run, not after it
    profiles = _comm(args, topo)
    if profiles and (config.gang is not None or config.reduction is not None):
        raise UsageError("--comm does not combine with --gang or --reduction (one rank per node, no time sharing)")
    if config.gang is not None:
        return run_gang(args, topo, config)
    args.scheduler = config.discipline
    stack = build(config)
    d, args.allocator = stack.policy, stack.config.allocator  # None given: the topology's (build)
    jobs, info = _jobs(args, topo, profiles)
    model = net = None
    if profiles:
        from emulator.sim.comm_work import comm_jobs

        model, net = _model(args, topo, profiles)
        jobs = comm_jobs(jobs, profiles, topo, seed=args.seed)
    keep = bool(args.write_swf or args.jobs_out)
    sim = Simulation(d, jobs, until=args.time, completions=args.jobs, warmup=args.warmup,
                     keep_records=keep, keep_nodes=bool(args.jobs_out), model=model)
    t0 = time.perf_counter()
    show = sys.stderr.isatty() and not args.json
    if show:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn  # lazy: see the module docstring

        total = args.time or args.jobs or (len(jobs) if isinstance(jobs, list) else None)
        with Progress(TextColumn("simulating"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                      TimeElapsedColumn(), transient=True) as prog:
            task = prog.add_task("sim", total=total)
            by_time = args.time is not None
            sim.progress = lambda now, done: prog.update(task, completed=now if by_time else done)
            res = sim.run()
    else:
        res = sim.run()
    wall = time.perf_counter() - t0
    m = res.metrics
    out = {
        "topology": str(topo), "allocator": args.allocator, "scheduler": args.scheduler,
        "reduction": args.reduction or "none", "params": params, "workload": info,
        "wall_seconds": wall, "events_per_second": m["events"] / wall if wall > 0 else None,
        "metrics": m,
    }
    if net is not None:
        out["network"] = net
    if args.write_swf:
        from emulator.sim import swf

        swf.write_schedule(args.write_swf, res.records, topology=topo,
                           time_unit=args.time_unit if args.trace else 1.0,
                           note=f"mcemu simulate {args.allocator}/{args.scheduler}")
        out["swf_written"] = str(args.write_swf)
    if args.jobs_out:
        from emulator.sim.batsim import write_jobs_csv  # lazy: see the module docstring

        name = os.path.basename(str(args.trace)) if args.trace else f"mcemu-load-{args.load:g}-seed-{args.seed}"
        write_jobs_csv(args.jobs_out, res.records, workload_name=name,
                       time_unit=args.time_unit if args.trace else 1.0)
        out["jobs_written"] = str(args.jobs_out)
    if args.json:
        print_json(_jsonable(out))
    else:
        print_metrics(out)
    return 0


def run_gang(args, topo, config) -> int:
    """Time-shared run (multilevel two-queue paper): a finite job list through the gang
    simulator; ``--param`` goes to the gang policy (e.g. ``mpl=4``, ``N=6``)."""
    from emulator.sim import gang as gang_sim  # lazy: see the module docstring
    from emulator.sim import workloads
    from scheduler.stack import build

    # what a gang run does not use is refused, not silently dropped (the daemon refuses
    # --gang with --reduction the same way)
    for flag, value in (("--reduction", config.reduction), ("--scheduler", args.scheduler),
                        ("--warmup", args.warmup or None), ("--write-swf", args.write_swf),
                        ("--jobs-out", args.jobs_out)):
        if value is not None:
            raise UsageError(f"{flag} does not apply to a gang run (--gang {args.gang})")
    policy = build(config).policy
    params = dict(config.params)
    if args.trace:
        from emulator.sim import swf

        jobs = list(swf.read_jobs(args.trace, topo, time_unit=args.time_unit))
        info = {"trace": str(args.trace), "jobs": len(jobs)}
    else:
        if args.load is None:
            raise UsageError("a synthetic run needs --load (or give --trace FILE)")
        size_dist = args.size_dist or ("uniform" if topo.kind == "hypercube" else "processors")
        wl = workloads.make_workload(topo, load=args.load, size_dist=size_dist, service=args.service,
                                     service_mean=args.service_mean, demand=args.demand, seed=args.seed)
        jobs = list(wl.jobs(args.jobs, args.time))
        info = {"load": args.load, "arrival_rate": wl.rate, "jobs": len(jobs), "seed": args.seed}
    t0 = time.perf_counter()
    res = gang_sim.simulate(policy, jobs, switch_cost=args.switch_cost, reload_time=args.reload_time,
                            reload_rate=args.reload_rate)
    wall = time.perf_counter() - t0
    out = {"topology": str(topo), "allocator": args.allocator, "gang": args.gang, "params": params,
           "workload": info, "wall_seconds": wall, "metrics": res.metrics}
    if args.json:
        print_json(_jsonable(out))
        return 0
    from rich.console import Console  # lazy: see the module docstring
    from rich.table import Table

    c = Console()
    c.print(f"[bold]{out['topology']}[/]  gang [cyan]{args.gang}[/]  allocator [cyan]{args.allocator}[/]")
    t = Table(show_header=True, header_style="bold")
    t.add_column("metric")
    t.add_column("value", justify="right")
    for k, v in res.metrics.items():
        if isinstance(v, (int, float)):
            t.add_row(k, f"{v:.4f}" if isinstance(v, float) else str(v))
        else:
            t.add_row(k, str(v))
    c.print(t)
    return 0


def _check_output(path, flag: str = "--write-swf") -> None:
    p = os.fspath(path)
    if os.path.isdir(p):
        raise UsageError(f"{flag} {p}: is a directory")
    parent = os.path.dirname(os.path.abspath(p))
    if not os.path.isdir(parent):
        raise UsageError(f"{flag} {p}: no directory {parent}")
    if not os.access(parent, os.W_OK):
        raise UsageError(f"{flag} {p}: cannot write in {parent}")


def print_metrics(out: dict) -> None:
    from rich.console import Console  # lazy: see the module docstring
    from rich.table import Table

    m = out["metrics"]
    c = Console()
    c.print(f"[bold]{out['topology']}[/]  allocator [cyan]{out['allocator']}[/]  "
            f"scheduler [cyan]{out['scheduler']}[/]  reduction [cyan]{out['reduction']}[/]")
    c.print("workload: " + ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                                      for k, v in out["workload"].items()))
    t = Table(show_header=True, header_style="bold")
    t.add_column("metric")
    t.add_column("value", justify="right")
    for k in ("generated", "completed", "allocated", "mean_queueing_delay", "mean_turnaround",
              "utilization", "throughput", "power", "measured_load", "external_fragmentation",
              "ls_ratio", "mean_jobs_in_system", "observation_time"):
        v = m[k]
        t.add_row(k, f"{v:.4f}" if isinstance(v, float) else str(v))
    if "mean_message_delay" in m:
        for k in ("comm_completed", "mean_message_delay", "mean_message_contention", "mean_comm_run_time",
                  "mean_contention_free_run_time", "mean_slowdown", "messages"):
            v = m[k]
            t.add_row(k + (" (us)" if k.startswith("mean_message") else ""),
                      f"{v:.4f}" if isinstance(v, float) else str(v))
    c.print(t)
    if out.get("network"):
        n = out["network"]
        c.print(f"network: 1 time unit = {n['time_unit_us']:g} us ({n['time_unit_rule']}); "
                f"L = {n['length_flits']} flits, T_t = {n['flit_time_us']} us; "
                + ", ".join(f"{p['comm']} (share {p['share']:g})" for p in n["profiles"]))
    if m["per_size"]:
        ps = Table(title="per allocated size", title_justify="left", header_style="bold")
        for col in ("nodes", "completed", "mean wait", "mean turnaround"):
            ps.add_column(col, justify="right")
        for k, v in m["per_size"].items():
            ps.add_row(k, str(v["completed"]), f"{v['mean_wait']:.3f}", f"{v['mean_turnaround']:.3f}")
        c.print(ps)
    eps = out.get("events_per_second")
    c.print(f"[dim]{m['events']} events in {out['wall_seconds']:.2f} s"
            + (f" ({eps:,.0f} events/s)" if eps else "") + "[/]")


def add_commands(sub) -> None:
    p = sub.add_parser("simulate", help="one discrete-event run; prints the metrics",
                       description="Run the policies in virtual time on a synthetic Poisson "
                                   "workload or a Standard Workload Format trace.")
    p.add_argument("--topology", default="hypercube:10", help="hypercube:N or mesh:WxH")
    p.add_argument("--allocator", help="allocator name (default: the topology's, which `mcemu policies` names)")
    p.add_argument("--scheduler", default=None, help="discipline (default fcfs; not with --gang)")
    p.add_argument("--reduction", default=None, help="rsr:T, limit:K, limit:greedy, limit:average")
    p.add_argument("--gang", default=None, help="gang policy (time sharing; none: no time sharing)")
    p.add_argument("--load", type=float, default=None, help="offered load (fraction of capacity)")
    p.add_argument("--time", type=float, default=None, help="observation time T (time units)")
    p.add_argument("--jobs", type=int, default=None, help="stop after N completions")
    p.add_argument("--warmup", type=int, default=0, help="completions not counted: every metric's observation window starts at the W-th "
                        "completion (with --jobs or --time; the JSON's `window` says it)")
    p.add_argument("--size-dist", default=None, help="job size distribution (default: uniform on a cube, processors on a mesh)")
    p.add_argument("--service", default="uniform", help="service distribution")
    p.add_argument("--service-mean", type=float, default=5.0, help="mean residence time")
    p.add_argument("--demand", choices=["dependent", "independent"], default="dependent")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--trace", default=None, help="replay an SWF log (.swf or .swf.gz)")
    p.add_argument("--time-unit", type=float, default=1.0,
                   help="seconds of the trace per model time unit (with --trace)")
    p.add_argument("--write-swf", default=None, metavar="OUT", help="write the simulated schedule as SWF")
    p.add_argument("--jobs-out", default=None, metavar="JOBS.csv",
                   help="write one row per completed job with Batsim's jobs.csv columns (job_id, submission_time, "
                        "starting_time, finish_time, waiting_time, allocated_resources as '0-3 8', ...) for "
                        "evalys or pandas; jobs unfinished at --time and warm-up jobs are not written")
    p.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="a discipline (or gang policy) parameter (repeatable), e.g. --param threshold=20")
    p.add_argument("--switch-cost", type=float, default=0.0, help="gang: time units per context switch")
    p.add_argument("--reload-time", type=float, default=0.0, help="gang: cache-reload phase after a switch")
    p.add_argument("--reload-rate", type=float, default=0.5, help="gang: speed during the reload phase")
    g = p.add_argument_group(
        "jobs that communicate (our extension, not the dissertation's model: NETWORK.md 3.3)",
        "With --comm a job's run time comes from its messages: its ranks run on its nodes (row-major "
        "order of the nodes unless the allocator maps them: naive-ch6, multiple-buddy-ch6), every path "
        "of its pattern does K iterations of send, wait for the delivery, compute Exp(MTBS) on one "
        "wormhole network shared with every running job, and it leaves when its last path is done. "
        "Example: mcemu simulate --topology mesh:32x32 --allocator naive --load 0.5 "
        "--comm transpose:mtbs=25:iterations=200 --jobs 300")
    g.add_argument("--comm", action="append", metavar="PATTERN:mtbs=US:iterations=K",
                   help="every job communicates so (repeatable: each job draws one, weighted by :share=W); "
                        "pattern options follow, e.g. permutation:mtbs=0:iterations=50:seed=3. A job asks for "
                        "its logical grid: on a mesh, square-var sizes by default when the pattern needs "
                        "square jobs (transpose, diagonal)")
    g.add_argument("--net-time-unit", default="auto", metavar="US",
                   help="microseconds of the network per time unit of the jobs; auto (default): the "
                        "profiles' mean contention-free run time K x (MTBS + L x T_t) equals --service-mean "
                        "units (with --trace: --time-unit seconds)")
    g.add_argument("--flit-time", type=float, default=0.05, help="microseconds per flit (0.05)")
    g.add_argument("--message-length", type=int, default=500, help="flits per message (500)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=run)
