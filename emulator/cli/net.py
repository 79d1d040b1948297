"""``mcemu net``: the interconnection network without the cluster.

* ``mcemu net simulate``: jobs' traffic over the wormhole model (per path, job and channel);
* ``mcemu net predict``: the dissertation's analytic models for the same jobs;
* ``mcemu net metrics``: SCL, ICL, internal competing level and congestion, no simulation;
* ``mcemu net links``: the live cluster's channels (its interconnect), utilization per window;
* ``mcemu net replay``: a program's recorded trace on any placement (emulator.sim.replay).

Jobs are ``--job PATTERN[:SHAPE]@PLACE[:KEY=VALUE...]`` (repeatable; see
:mod:`scheduler.network.layout`) or ``--job-file F.json``. The network model is imported
inside the commands: every ``mcemu`` command builds this parser, and the model costs 15 ms,
the placed jobs 64 ms (with the policy stack), against 4 ms for ``emulator.cli`` itself.
"""
from __future__ import annotations

import sys
import time

from emulator.cli import UsageError, print_json


def _net(args):
    from scheduler.network.wormhole import Wormhole

    topology = args.topology or (f"mesh:{args.mesh}" if args.mesh else "mesh:16x16")
    if args.mesh and args.topology:
        raise UsageError("give --mesh WxH or --topology, not both")
    return Wormhole(topology, flit_time=args.flit_time, length=args.length,
                    startup=args.startup / args.flit_time if args.flit_time > 0 else args.startup)


def _jobs(args, topology):
    from scheduler.network.layout import check_disjoint, load_job_file, parse_job

    jobs = [parse_job(spec, topology, i) for i, spec in enumerate(args.job or ())]
    if args.job_file:
        jobs += load_job_file(args.job_file, topology)
    if not jobs:
        raise UsageError("give at least one --job PATTERN:SHAPE@PLACE or a --job-file")
    check_disjoint(jobs)
    return jobs


def simulate(args) -> int:
    from emulator.sim.network import simulate_network

    net = _net(args)
    jobs = _jobs(args, net.channels.topology)
    t0 = time.perf_counter()
    if sys.stderr.isatty() and not args.json:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn("simulating the network"), BarColumn(),
                      TextColumn("{task.percentage:>3.0f}%"), TimeElapsedColumn(), transient=True) as prog:
            task = prog.add_task("net", total=1.0)
            doc = simulate_network(net, jobs, messages=args.messages, warmup=args.warmup, seed=args.seed,
                                   progress=lambda f: prog.update(task, completed=f))
    else:
        doc = simulate_network(net, jobs, messages=args.messages, warmup=args.warmup, seed=args.seed)
    wall = time.perf_counter() - t0
    if args.json:
        print_json(doc)
        return 0
    _print_simulation(doc, wall)
    return 0


def _print_simulation(doc: dict, wall: float) -> None:
    from rich.console import Console
    from rich.table import Table

    c = Console()
    s = doc["network"]
    c.print(f"[bold]{s['topology']}[/]  {s['routing']} routing, wormhole, L = {s['length_flits']} flits, "
            f"T_t = {s['flit_time_us']} us  ({doc['messages_per_path']} messages per path after "
            f"{doc['warmup_messages_per_path']} of warm-up; seed {doc['seed']})")
    t = Table(title="paths (delays in us)", title_justify="left", header_style="bold")
    for col in ("job", "from", "to", "hops", "MTBS", "msgs", "mean", "p95", "contention"):
        t.add_column(col, justify="right")
    for p in doc["paths"]:
        at = (lambda v: ",".join(map(str, v)) if isinstance(v, list) else str(v))
        t.add_row(p["job"], at(p["source_at"]), at(p["destination_at"]), str(p["hops"]),
                  f"{p['mtbs_us']:g}", str(p["messages"]), f"{p['mean_delay_us']:.2f}",
                  f"{p['p95_delay_us']:.2f}", f"{p['mean_contention_us']:.2f}")
    c.print(t)
    j = Table(title="jobs", title_justify="left", header_style="bold")
    for col in ("job", "pattern", "paths", "mean delay", "mean contention"):
        j.add_column(col, justify="right")
    for job in doc["jobs"]:
        j.add_row(job["name"], f"{job['pattern']} {job['shape']}", str(job["paths"]),
                  f"{job['mean_delay_us']:.2f}", f"{job['mean_contention_us']:.2f}")
    c.print(j)
    busiest = sorted(doc["channels"], key=lambda ch: -ch["utilization"])[:5]
    c.print("busiest channels: " + ", ".join(f"{ch['channel']} {ch['utilization']:.2f}" for ch in busiest))
    c.print(f"[dim]{doc['simulated_messages']} messages simulated in {wall:.2f} s "
            f"({doc['simulated_messages'] / wall:,.0f} messages/s)[/]" if wall > 0 else "")


def predict(args) -> int:
    from scheduler.network.predict import predict_job

    topology = _net(args).channels.topology
    jobs = _jobs(args, topology)
    doc = {"topology": str(topology), "model": args.model, "case4": args.case4,
           "length_flits": args.length, "flit_time_us": args.flit_time,
           "jobs": [predict_job(j, topology, args.model, length=args.length, flit_time=args.flit_time,
                                case4=args.case4) for j in jobs],
           "note": "each job alone: contention between jobs is not modelled here; delays are "
                   "L*T_t + contention (the models leave out the hop term)"}
    if args.json:
        print_json(doc)
        return 0
    from rich.console import Console
    from rich.table import Table

    c = Console()
    c.print(f"[bold]{doc['topology']}[/]  {args.model} model  ({doc['note']})")
    for j in doc["jobs"]:
        t = Table(title=f"{j['name']}: {j['pattern']}, {j['predictor']}", title_justify="left",
                  header_style="bold")
        for col in ("source", "destination", "MTBS", "predicted delay (us)"):
            t.add_column(col, justify="right")
        for p in j["paths"]:
            t.add_row(str(p["source"]), str(p["destination"]), f"{p['mtbs_us']:g}", f"{p['predicted_delay_us']:.2f}")
        c.print(t)
        c.print(f"mean {j['mean_delay_us']:.2f} us" + ("" if not j["bound"] else " (an upper bound)")
                + "".join(f"; {a['predictor']}: {a['mean_delay_us']:.2f} us" for a in j["also"]))
    return 0


def metrics(args) -> int:
    from fractions import Fraction

    from scheduler.network.metrics import congestion, icl, internal_competing_level, scl

    net = _net(args)
    jobs = _jobs(args, net.channels.topology)
    ch = net.channels
    paths = [(j, p) for j in jobs for p in j.paths]
    routes = [ch.route(p.src, p.dst) for _, p in paths]
    owners = [j.name for j, _ in paths]
    s, i, k = scl(routes), icl(routes), internal_competing_level(routes, owners)
    cong = congestion(routes)
    per_job = []
    for j in jobs:
        idx = [n for n, o in enumerate(owners) if o == j.name]
        per_job.append({"name": j.name, "pattern": j.pattern, "paths": len(idx),
                        "scl": float(Fraction(sum(s[n] for n in idx), len(idx))),
                        "icl": float(Fraction(sum(i[n] for n in idx), len(idx))),
                        "internal_competing_level": float(Fraction(sum(k[n] for n in idx), len(idx)))})
    doc = {"topology": str(ch.topology),
           "paths": [{"job": owners[n], "source": p.src, "destination": p.dst, "hops": len(routes[n]),
                      "scl": s[n], "icl": i[n], "internal_competing_level": k[n],
                      "starting_channel": ch.name(routes[n][0])} for n, (_, p) in enumerate(paths)],
           "jobs": per_job,
           "pattern": {"scl": sum(s) / len(s), "icl": sum(i) / len(i),
                       "max_congestion": max(cong.values(), default=0)},
           "channels": [{"channel": ch.name(c), "congestion": v} for c, v in sorted(cong.items())]}
    if args.json:
        print_json(doc)
        return 0
    from rich.console import Console
    from rich.table import Table

    c = Console()
    t = Table(title=f"{doc['topology']}: pattern metrics (§4.3.2, §6.2.1)", title_justify="left",
              header_style="bold")
    for col in ("job", "pattern", "paths", "SCL", "ICL", "internal competing level"):
        t.add_column(col, justify="right")
    for j in per_job:
        t.add_row(j["name"], j["pattern"], str(j["paths"]), f"{j['scl']:.3f}", f"{j['icl']:.3f}",
                  f"{j['internal_competing_level']:.3f}")
    c.print(t)
    c.print(f"all paths: SCL {doc['pattern']['scl']:.3f}, ICL {doc['pattern']['icl']:.3f}, "
            f"largest congestion factor {doc['pattern']['max_congestion']}")
    return 0


def pattern_job(args, request: dict, client) -> tuple[str, float]:
    """``mcemu submit --pattern``: the command of the ready-made pattern task (nodes.pattern)
    and, unless ``--runtime`` is given, a run time estimate for the policy (the job really
    ends when its paths have done their messages): every message contention-free plus MTBS.
    The job asks for its logical grid as a job of ``mcemu simulate --comm`` does
    (scheduler.comm_profile.grid_request): ``request`` is rewritten in place to it (a node
    count on a mesh becomes the smallest submesh that holds it; a k-cube is its most square
    grid of 2^k ranks; a request of the other topology's kind is refused, as the daemon does)."""
    import inspect

    from emulator.live.admission import wrong_kind
    from emulator.live.config import message
    from scheduler.comm_profile import grid_request
    from scheduler.network.patterns import pattern_pairs
    from scheduler.network.wormhole import NetworkError, Wormhole
    from scheduler.topology import Request, RequestError, TopologyError, parse_topology

    cfg = client.status()["config"]
    try:
        topology = parse_topology(cfg["topology"])
        why = wrong_kind(request, topology)  # the daemon's refusal, before the request is rewritten below
        if why:
            raise UsageError(why)
        w, h, grid = grid_request(Request.from_dict(request), topology)
        pattern_pairs(args.pattern, w, h)
    except (NetworkError, KeyError, RequestError, TopologyError) as e:
        raise UsageError(f"--pattern: {message(e)}") from None
    if args.iterations < 1 or (args.warmup is not None and args.warmup < 0) or not 0 <= args.mtbs < 1e9:
        raise UsageError("--iterations must be >= 1, --warmup >= 0 and --mtbs a number of microseconds >= 0")
    if cfg.get("network") != "wormhole":
        raise UsageError("--pattern needs a cluster with a network: mcemu up --network wormhole")
    request.clear()
    request.update(grid.to_dict())
    warmup = args.iterations // 10 if args.warmup is None else args.warmup
    runtime = args.runtime
    if runtime is None:
        d = {k: v.default for k, v in inspect.signature(Wormhole).parameters.items()}  # the model's defaults
        per = args.mtbs + d["length"] * d["flit_time"]
        runtime = (warmup + args.iterations) * per * cfg["net_dilation"] / 1e6 / cfg["time_unit"]
    return pattern_command(args.pattern, w, h, args.mtbs, args.iterations, warmup, args.seed, args.group), runtime


def pattern_command(pattern: str, w: int, h: int, mtbs: float, iterations: int, warmup: int, seed: int = 0,
                    group: str | None = None, group_jobs: int | None = None) -> str:
    """The command line of the pattern task (nodes.pattern) on every rank of a W x H job;
    ``group``: its paths keep sending until every job of the group has done its messages;
    ``group_jobs``: in virtual time, the group's jobs start together once that many are in."""
    import shlex

    return (f"{shlex.quote(sys.executable)} -m nodes.pattern --shape {w}x{h} --pattern {shlex.quote(pattern)}"
            f" --mtbs {mtbs:g} --iterations {iterations} --warmup {warmup} --seed {seed}"
            + (f" --group {shlex.quote(group)}" if group else "")
            + (f" --group-jobs {int(group_jobs)}" if group and group_jobs else ""))


def links(args) -> int:
    """``mcemu net links``: ask the running cluster's interconnect for every channel's
    utilization over its last window (emulator.live.interconnect.Interconnect.links)."""
    from emulator.live import home as homemod
    from emulator.live import netlocal
    from emulator.live import protocol as P

    home = homemod.home_dir()
    if homemod.read_pidfile(home / "interconnect.pid") is None:
        raise UsageError(f"no interconnect runs in {home}: start the cluster with `mcemu up --network wormhole`")
    got = netlocal.request(str(home / "net.sock"), P.encode("net_links", id=1), args.timeout)
    if got is None:
        raise UsageError(f"no answer from the interconnect in {args.timeout} s")
    m = P.decode(got, max_size=P.MAX_REPLY)
    if m["type"] == "error":
        raise UsageError(f"{m['code']}: {m['message']}")
    doc = m["data"]
    if args.json:
        print_json(doc)
        return 0
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"{doc['topology']}: channel utilization over network time "
                    f"{doc['window_us'][0]:.0f}-{doc['window_us'][1]:.0f} us", title_justify="left",
              header_style="bold")
    for col in ("channel", "from", "to", "utilization"):
        t.add_column(col, justify="right")
    for ch in sorted(doc["channels"], key=lambda c: -c["utilization"]):
        t.add_row(ch["channel"], str(ch["from"]), str(ch["to"]), f"{ch['utilization']:.3f}")
    Console().print(t)
    print(f"{doc['messages']} messages delivered, {doc['in_flight']} in flight; dilation {doc['dilation']:g}")
    return 0


def replay(args) -> int:
    """``mcemu net replay``: a program's trace (scheduler.network.trace) replayed in the simulator
    on a placement, next to other traffic (emulator.sim.replay)."""
    from emulator.sim import replay as rp
    from scheduler.network.trace import load_trace
    from scheduler.topology import parse_topology

    trace = load_trace(args.trace)
    if args.mesh and args.topology:
        raise UsageError("give --mesh WxH or --topology, not both")
    topo = parse_topology(args.topology or (f"mesh:{args.mesh}" if args.mesh else trace.topology))
    nodes = rp.place(args.placement, trace, topo, args.seed)
    bg = [p for i, spec in enumerate(args.background or ()) for p in rp.background(spec, topo, nodes, i)]
    res = rp.replay(trace, topo, nodes, background=bg, seed=args.seed, length=args.length)
    if args.out:
        import csv

        with open(args.out, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(res.messages[0]) if res.messages else ["src"])
            w.writeheader()
            w.writerows(res.messages)
    doc = {"trace": str(args.trace), "job": trace.job, "ranks": trace.size, "recorded_on": trace.topology,
           "topology": str(topo), "placement": args.placement, "seed": args.seed, "nodes": list(nodes),
           "elapsed_s": res.elapsed, "ends_s": res.ends, "messages": res.summary,
           "background": res.background, "recorded": res.recorded}
    if args.json:
        print_json(doc)
        return 0
    s = res.summary
    print(f"job {trace.job}: {trace.size} ranks recorded on {trace.topology} ({trace.time} time), "
          f"replayed on {topo}, placement {args.placement} (seed {args.seed})")
    rows = [("elapsed", f"{res.elapsed:.6g} s"), ("messages", s["messages"])]
    if s["count"]:
        rows += [("mean delay", f"{s['mean_delay_us']:.3f} us"), ("p95 delay", f"{s['p95_delay_us']:.3f} us"),
                 ("mean contention", f"{s['mean_contention_us']:.3f} us"), ("slowdown", f"{s['slowdown']:.3f}")]
    if res.background:
        b = res.background
        rows.append(("other traffic", f"{b['paths']} paths, {b['messages']} messages, mean delay "
                                      + ("-" if b["mean_delay_us"] is None else f"{b['mean_delay_us']:.3f} us")))
    for k, v in rows:
        print(f"  {k:<16} {v}")
    print(f"  {'RANK':>6} {'NODE':>6}  END (s)")
    for r, (n, end) in enumerate(zip(nodes, res.ends)):
        print(f"  {r:>6} {n:>6}  {end:.6g}")
    if res.recorded is not None:
        print(f"replay vs live: max difference {100 * res.recorded['max']:.3f} %")
    return 0


def _common(p) -> None:
    p.add_argument("--mesh", default=None, metavar="WxH", help="a W x H mesh (default 16x16)")
    p.add_argument("--topology", default=None, help="mesh:WxH or hypercube:N (instead of --mesh)")
    p.add_argument("--job", action="append", metavar="SPEC",
                   help="PATTERN[:SHAPE]@PLACE[:mtbs=US...], e.g. transpose:4x4@0,0:mtbs=25 (repeatable)")
    p.add_argument("--job-file", default=None, metavar="F.json", help="jobs with explicit nodes and paths")
    p.add_argument("--flit-time", type=float, default=0.05, help="microseconds per flit (0.05)")
    p.add_argument("--length", type=int, default=500, help="message length in flits (500)")
    p.add_argument("--startup", type=float, default=0.0, help="start-up overhead k_0 in microseconds (0)")
    p.add_argument("--json", action="store_true", help="print one JSON document")


def add_commands(sub) -> None:
    net = sub.add_parser("net", help="the interconnection network: simulate, predict, metrics",
                         description="Wormhole-routed mesh and hypercube networks (dissertation "
                                     "chapters 3-6): message delays of placed jobs.")
    nsub = net.add_subparsers(dest="net_command", metavar="SUBCOMMAND")
    s = nsub.add_parser("simulate", help="simulate jobs' messages; delays per path, job, channel",
                        description="Each path sends, waits for delivery, computes Exp(MTBS), sends "
                                    "again; delays in microseconds after a warm-up.")
    _common(s)
    s.add_argument("--messages", type=int, default=2000, help="measured messages per path (2000)")
    s.add_argument("--warmup", type=int, default=None,
                   help="messages per path not measured (default: a tenth of --messages)")
    s.add_argument("--seed", type=int, default=0)
    s.set_defaults(func=simulate)
    pr = nsub.add_parser("predict", help="the analytic contention models for the same jobs",
                         description="Chapter 4 (homogeneous) or chapter 5 (heterogeneous) models: "
                                     "per-path predicted delays in microseconds.")
    _common(pr)
    pr.add_argument("--model", choices=["homogeneous", "heterogeneous"], default="homogeneous")
    pr.add_argument("--case4", choices=["physical", "literal"], default="physical",
                    help="reading of eqs. 5.10/5.11 (NETWORK.md 5.2; default physical)")
    pr.set_defaults(func=predict)
    me = nsub.add_parser("metrics", help="SCL, ICL, internal competing level, congestion (no simulation)",
                         description="Pattern metrics of §4.3.2 and §6.2.1 over the jobs' XY/e-cube routes.")
    _common(me)
    me.set_defaults(func=metrics)
    li = nsub.add_parser("links", help="the live cluster's channel utilization over the last window",
                         description="Asks the interconnect of the cluster in MCEMU_HOME (mcemu up --network "
                                     "wormhole) for every channel's reserved fraction of its last window.")
    li.add_argument("--json", action="store_true", help="print one JSON document")
    li.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for the interconnect")
    li.set_defaults(func=links)
    rp = nsub.add_parser("replay", help="replay a program's trace in the simulator on any placement",
                         description="Replays a trace recorded by a program run (a directory "
                                     "$MCEMU_HOME/traces/job-<id> or one merged JSON file) on a mesh or "
                                     "hypercube, its ranks on contiguous, scattered or given nodes, next to "
                                     "other traffic: elapsed time, message delays, per-rank ends.")
    rp.add_argument("trace", help="a trace directory (rank-<r>.json files) or a merged JSON file")
    rp.add_argument("--mesh", default=None, metavar="WxH", help="a W x H mesh (default: the recorded topology)")
    rp.add_argument("--topology", default=None, help="mesh:WxH or hypercube:N (instead of --mesh)")
    rp.add_argument("--placement", default="contiguous", metavar="contiguous|scattered|FILE",
                    help="the recorded nodes (or a first-fit submesh / buddy subcube on another machine), "
                         "a seeded random set of nodes, or a JSON list of node ids, one per rank (contiguous)")
    rp.add_argument("--seed", type=int, default=0, help="seed of --placement scattered and of the other traffic (0)")
    rp.add_argument("--background", action="append", metavar="PATTERN[:MTBS]",
                    help="other traffic: a pattern on the nodes the program does not use, MTBS in us (e.g. "
                         "all-to-all:25), or a --job spec (transpose:4x4@4,0:mtbs=25); repeatable")
    rp.add_argument("--length", type=int, default=500, help="the other traffic's message length in flits (500)")
    rp.add_argument("--out", metavar="CSV", help="write every program message (ranks, bytes, hops, times) to CSV")
    rp.add_argument("--json", action="store_true", help="print one JSON document")
    rp.set_defaults(func=replay)
    net.set_defaults(func=lambda args: (net.print_help(), 2)[1])
