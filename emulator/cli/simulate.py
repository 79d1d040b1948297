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
from emulator.sim.spec import WorkloadSpec  # stdlib only: the workload's defaults, for the help


def _net_time_unit(text: str):
    unit = text.strip().lower()
    if unit == "auto":
        return unit
    try:
        return float(unit)
    except ValueError:
        raise UsageError(f"--net-time-unit must be microseconds per time unit or auto, got {text!r}") from None


def _refuse_with_gang(args, config) -> None:
    """What a gang run does not use is refused, not silently dropped (the daemon refuses
    --gang with --reduction the same way)."""
    for flag, value in (("--reduction", config.reduction), ("--scheduler", args.scheduler),
                        ("--warmup", args.warmup or None), ("--write-swf", args.write_swf),
                        ("--jobs-out", args.jobs_out)):
        if value is not None:
            raise UsageError(f"{flag} does not apply to a gang run (--gang {args.gang})")


def _spec(args, config):
    """The command's options as one RunSpec (emulator.sim.spec): the workload's defaults are
    the spec's, the work model gang with --gang, comm with --comm, else fixed."""
    from emulator.sim.spec import Observers, RunSpec, StopRule, WorkloadSpec  # lazy: see the module docstring

    if args.trace:
        w = WorkloadSpec(trace=args.trace, time_unit=args.time_unit, seed=args.seed)
    else:
        if args.load is None:
            raise UsageError("a synthetic run needs --load (or give --trace FILE)")
        given = {"size": args.size_dist, "service": args.service, "service_mean": args.service_mean,
                 "demand": args.demand}
        w = WorkloadSpec(load=args.load, seed=args.seed, **{k: v for k, v in given.items() if v is not None})
    if config.gang is not None:
        work, options = "gang", {"switch_cost": args.switch_cost, "reload_time": args.reload_time,
                                 "reload_rate": args.reload_rate}
    elif args.comm:
        work, options = "comm", {"comm": list(args.comm), "net_time_unit": _net_time_unit(args.net_time_unit),
                                 "flit_time": args.flit_time, "message_length": args.message_length}
    else:
        work, options = "fixed", {}
    observe = Observers(records=bool(args.write_swf or args.jobs_out), nodes=bool(args.jobs_out))
    return RunSpec(config, w, StopRule(args.time, args.jobs, args.warmup), work, options, observe)


def _run_with_progress(spec, args):
    """The run, with a Rich progress bar on a terminal (not with --json)."""
    import dataclasses

    from emulator.sim.run import run as run_spec  # lazy: see the module docstring

    if not (sys.stderr.isatty() and not args.json) or spec.work == "gang":
        return run_spec(spec)
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn  # lazy: see the module docstring

    total = args.time or args.jobs
    with Progress(TextColumn("simulating"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                  TimeElapsedColumn(), transient=True) as prog:
        task = prog.add_task("sim", total=total)
        by_time = args.time is not None
        show = lambda now, done: prog.update(task, completed=now if by_time else done)  # noqa: E731
        return run_spec(dataclasses.replace(spec, observe=dataclasses.replace(spec.observe, progress=show)))


def run(args) -> int:
    """One run of any work model: the options -> a RunSpec -> emulator.sim.run.run -> the output."""
    from scheduler.stack import StackConfig  # lazy: see the module docstring
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
    if args.comm and (config.gang is not None or config.reduction is not None):
        raise UsageError("--comm does not combine with --gang or --reduction (one rank per node, no time sharing)")
    if config.gang is not None:
        _refuse_with_gang(args, config)
    for flag, path in (("--write-swf", args.write_swf), ("--jobs-out", args.jobs_out)):
        if path:
            _check_output(path, flag)  # before the run, not after it
    res = _run_with_progress(_spec(args, config), args)
    out = _output(args, topo, res)
    if args.json:
        print_json(_jsonable(out))
    elif config.gang is not None:
        print_gang(out)
    else:
        print_metrics(out)
    return 0


def _output(args, topo, res) -> dict:
    """The command's document: the stack as built, the workload, the metrics (one schema)."""
    stack, wall, m = res.stack, res.wall_seconds, res.metrics
    if stack.gang is not None:
        return {"topology": str(topo), "allocator": stack.allocator, "gang": stack.gang, "params": dict(stack.params),
                "workload": res.workload, "wall_seconds": wall, "metrics": m}
    out = {
        "topology": str(topo), "allocator": stack.allocator, "scheduler": stack.discipline,
        "reduction": stack.reduction or "none", "params": dict(stack.params), "workload": res.workload,
        "wall_seconds": wall, "events_per_second": m["events"] / wall if wall > 0 else None, "metrics": m,
    }
    if res.network is not None:
        out["network"] = res.network
    unit = args.time_unit if args.trace else 1.0
    if args.write_swf:
        from emulator.sim import swf  # lazy: see the module docstring

        swf.write_schedule(args.write_swf, res.records, topology=topo, time_unit=unit,
                           note=f"mcemu simulate {out['allocator']}/{out['scheduler']}")
        out["swf_written"] = str(args.write_swf)
    if args.jobs_out:
        from emulator.sim.batsim import write_jobs_csv  # lazy: see the module docstring

        name = os.path.basename(str(args.trace)) if args.trace else f"mcemu-load-{args.load:g}-seed-{args.seed}"
        write_jobs_csv(args.jobs_out, res.records, workload_name=name, time_unit=unit)
        out["jobs_written"] = str(args.jobs_out)
    return out


def print_gang(out: dict) -> None:
    from rich.console import Console  # lazy: see the module docstring
    from rich.table import Table

    c = Console()
    c.print(f"[bold]{out['topology']}[/]  gang [cyan]{out['gang']}[/]  allocator [cyan]{out['allocator']}[/]")
    t = Table(show_header=True, header_style="bold")
    t.add_column("metric")
    t.add_column("value", justify="right")
    for k, v in out["metrics"].items():
        t.add_row(k, f"{v:.4f}" if isinstance(v, float) else str(v))
    c.print(t)


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
                  "mean_contention_free_run_time", "mean_comm_slowdown", "messages"):
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
    p.add_argument("--service", default=None, help=f"service distribution (default {WorkloadSpec.service})")
    p.add_argument("--service-mean", type=float, default=None,
                   help=f"mean residence time (default {WorkloadSpec.service_mean:g})")
    p.add_argument("--demand", choices=["dependent", "independent"], default=None,
                   help=f"(default {WorkloadSpec.demand})")
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
