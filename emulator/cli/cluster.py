"""``mcemu up / down / nodes / submit / queue / cancel / workload / wait / node``: the live cluster.

The processes' lifecycle (start, recover, stop by pid) is :mod:`emulator.cli.lifecycle`;
``cluster_processes``, ``start_cluster`` and ``stop_cluster`` are re-exported here.

``up`` starts two processes, each in its own session and recorded by pidfile in MCEMU_HOME:
the daemon (``python -m emulator.live.daemon``) and the launcher (``python -m nodes.launcher``),
which forks the node agents and restarts those that die (``--no-restart``: not; see
nodes.launcher). It returns (``--detach``) once every local node has registered, or stays in
the foreground until Ctrl-C and then stops the cluster. Run against a home whose daemon died
(SIGKILL) with its journal open, ``up`` recovers: it starts a new daemon (and a launcher if
the old one is gone), which replays the journal, waits until it serves and the node
processes still alive have registered again with their tasks (never for the dead ones), and
says what it recovered. An ``up`` that fails after it spawned something stops, by pid,
everything it spawned (``_stop_started``).

``wait`` polls the jobs until they are no longer queued or running; its exit status says how
they ended.

``down`` asks the daemon to shut down (it tells the nodes, which kill their tasks), then
waits for every process it recorded (daemon, launcher, the launcher's whole process tree,
collected BEFORE asking) and terminates by pid whatever is left after a deadline. It never
looks processes up by name.
"""
from __future__ import annotations

import itertools
import signal
import sys
import time

from emulator.cli import UsageError, print_json
from emulator.cli.lifecycle import FINISHED, cluster_processes, start_cluster, stop_cluster  # noqa: F401
from emulator.jsonable import jsonable
from emulator.live import home as homemod

# lazy imports, measured: the client (zmq, msgpack) 50 ms, the policy stack 80 ms, rich 30 ms,
# the workloads 140 ms at start-up of every mcemu command (each builds the whole parser, so
# imports this module; scripts and tests poll `mcemu nodes` / `queue`)


def use_key(args) -> None:
    """``--key FILE``: the credential every tcp connection of this command uses (checked now,
    one line if it is not one; emulator.live.keys), passed on as ``MCEMU_KEY``."""
    import os

    key = getattr(args, "key", None)
    if key:
        from emulator.live import keys as keysmod

        try:
            keysmod.credential(key)
        except keysmod.KeyFileError as e:
            raise UsageError(f"--key: {e}") from None
        os.environ["MCEMU_KEY"] = key


def _client(args):
    from emulator.live.client import Client

    use_key(args)
    return Client(getattr(args, "connect", None) or None, timeout=args.timeout)


def _table(title, columns, rows):
    from rich.console import Console
    from rich.table import Table

    t = Table(title=title, title_justify="left", box=None, pad_edge=False, header_style="bold")
    for c in columns:
        t.add_column(c)
    for r in rows:
        t.add_row(*[("" if v is None else str(v)) for v in r])
    # a pipe gets full rows (like squeue), a terminal gets rich's fitting
    Console(width=None if sys.stdout.isatty() else 200).print(t)


def _ranges(ids) -> str:
    """Node ids as ranges: 0-3,5,7-8."""
    runs = ([n for _, n in g] for _, g in itertools.groupby(enumerate(sorted(ids)), lambda p: p[1] - p[0]))
    return ",".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


# ---------------------------------------------------------------------- commands


def cmd_up(args) -> int:
    home = homemod.home_dir()
    listen = homemod.endpoint(args.listen, "--listen", listen=True) if args.listen else None
    if args.max_restarts is not None and not 0 <= args.max_restarts <= 1000:
        raise UsageError(f"--max-restarts must be within 0-1000, got {args.max_restarts}")
    if listen and not listen.startswith("tcp://"):
        raise UsageError(f"--listen takes a tcp address (the ipc sockets are always there), got {args.listen!r}")
    if args.insecure and not listen:
        raise UsageError("--insecure only applies to --listen")
    if listen:
        _check_listen(home, listen, args.insecure)
    st = start_cluster(home, args.topology, args.allocator, args.scheduler, args.reduction, args.time_unit,
                       args.heartbeat, args.liveness, args.max_requeue, listen, args.local_nodes,
                       timeout=args.timeout_up, gang=args.gang, mpl=args.mpl, params=args.param,
                       rt_priority=args.rt_priority, node_sched=args.node_sched, restart=not args.no_restart,
                       max_restarts=args.max_restarts, insecure=args.insecure, network=args.network,
                       net_dilation=args.net_dilation)
    rec = st.get("recovered")
    if args.json:
        doc = {"home": str(home), "pid": st["pid"], "config": jsonable(st["config"]), "nodes": st["nodes"],
               "endpoints": st["endpoints"], "startup_s": round(st["startup_s"], 3)}  # inf as "inf"
        if rec is not None:
            doc["recovered"] = rec
        print_json(doc)
    elif rec is not None:
        cfg = st["config"]
        down = f"{len(rec['nodes_down'])} down ({_ranges(rec['nodes_down'])})" if rec["nodes_down"] else "none down"
        late = (f"; {len(rec['nodes_not_back'])} not registered yet ({_ranges(rec['nodes_not_back'])}): down "
                f"after {rec['grace_s']:g} s unless they do" if rec["nodes_not_back"] else "")
        print(f"recovered the journal in {st['startup_s']:.2f} s: {cfg['topology']} ({st['size']} nodes), "
              f"{rec['queued']} jobs queued, {rec['running']} running, {rec['finished']} finished; "
              f"nodes: {st['connected']} connected, {down}{late}; home {home}")
    else:
        cfg = st["config"]
        policy = (f"gang {cfg['gang']} (MPL {st['gang']['mpl']})" if cfg.get("gang") and st.get("gang")
                  else f"scheduler {cfg['scheduler']}")
        net = (f", network {cfg['network']} (dilation {cfg['net_dilation']:g})" if cfg.get("network") else "")
        print(f"cluster up in {st['startup_s']:.2f} s: {cfg['topology']} ({st['size']} nodes), "
              f"allocator {cfg['allocator']}, {policy}, time unit {cfg['time_unit']} s{net}; "
              f"home {home}")
    if args.rt_priority and not st.get("rt"):
        print(f"mcemu up: --rt-priority {args.rt_priority} was not permitted here (needs CAP_SYS_NICE or an "
              f"RLIMIT_RTPRIO); the cluster runs at normal priority (see daemon.log, launcher.log)", file=sys.stderr)
    if args.detach:
        return 0
    stop = []
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, lambda *_: stop.append(1))
    print("running in the foreground; Ctrl-C stops the cluster", file=sys.stderr)
    try:
        while not stop and homemod.read_pidfile(home / "daemon.pid") is not None:
            time.sleep(0.2)
    finally:
        res = stop_cluster(home)
        if not args.json:
            print(f"cluster down: {len(res['stopped'])} processes stopped", file=sys.stderr)
    return 0


def _check_listen(home, listen: str, insecure: bool) -> None:
    """A tcp address needs the cluster's keys (CURVE), unless ``--insecure``, which is said
    out loud: then anyone who reaches the port is the cluster's admin."""
    from emulator.live import keys as keysmod

    host = listen[len("tcp://"):].rpartition(":")[0].strip("[]")
    loopback = host in ("localhost", "::1") or host.startswith("127.")
    if not insecure:
        if not keysmod.initialized(home):
            raise UsageError(f"--listen {listen} needs the cluster's keys: `mcemu keys init` first (clients then "
                             f"use --key), or --insecure for an unauthenticated tcp port")
        return
    if loopback:
        print(f"mcemu up: WARNING: --insecure: {listen} has no authentication; every local user can "
              f"submit, cancel and shut down as you", file=sys.stderr)
    else:
        print(f"mcemu up: WARNING: --insecure on {listen}, a non-loopback address: ANYONE WHO CAN REACH "
              f"THIS PORT CAN RUN COMMANDS AS {__import__('getpass').getuser()!r} AND SHUT THE CLUSTER DOWN. "
              f"Use `mcemu keys init` instead.", file=sys.stderr)


def cmd_down(args) -> int:
    home = homemod.home_dir()
    res = stop_cluster(home, timeout=args.timeout_down)
    if args.json:
        print_json(res)
    elif res["was_running"]:
        extra = f", {len(res['terminated'])} terminated, {len(res['killed'])} killed" if res["terminated"] or res["killed"] else ""
        print(f"cluster down: {len(res['stopped'])} processes stopped{extra}")
    else:
        print(f"no cluster running in {home}")
    return 0


def cmd_nodes(args) -> int:
    with _client(args) as c:
        nodes = c.nodes()
    if args.json:
        print_json({"nodes": nodes})
        return 0
    # like sinfo: group nodes of the same state
    groups: dict[str, list] = {}
    for n in nodes:
        groups.setdefault(n["state"], []).append(n["node"])
    if any("tasks" in n for n in nodes):  # gang: which task runs and which are kept in, per node
        def tasks(n, st):
            return ",".join(f"{t['job']}({t['pid']})" if args.long else str(t["job"])
                            for t in n["tasks"] if t["state"] == st) or "-"
        _table(None, ["NODE", "STATE", "RUNNING", "SUSPENDED"] + (["PID", "HOST"] if args.long else []),
               [(n["node"], n["state"], tasks(n, "running"), tasks(n, "suspended"))
                + ((n["pid"], n["host"]) if args.long else ()) for n in nodes])
    elif not args.long:
        _table(None, ["STATE", "NODES", "NODELIST"], [(s, len(v), _ranges(v)) for s, v in sorted(groups.items())])
    else:
        _table(None, ["NODE", "STATE", "JOB", "PID", "HOST"],
               [(n["node"], n["state"], ",".join(map(str, n["jobs"])) or "-", n["pid"], n["host"]) for n in nodes])
    return 0


def _parse_request(args) -> dict:
    if args.cube is not None:
        return {"cube": args.cube}
    if args.shape:
        try:
            w, h = (int(x) for x in args.shape.lower().split("x"))
        except ValueError:
            raise UsageError(f"--shape must be WxH, got {args.shape!r}") from None
        return {"shape": [w, h]}
    return {"nodes": args.nodes}


def cmd_submit(args) -> int:
    from emulator.live.client import DaemonError

    from emulator.cli.net import pattern_job

    request = _parse_request(args)
    with _client(args) as c:
        command, runtime = pattern_job(args, request, c) if args.pattern else (args.task_command, args.runtime)
        if runtime is None:
            raise UsageError("--runtime is required (but for a --pattern job)")
        if runtime <= 0:
            raise UsageError(f"--runtime must be > 0, got {runtime}")
        try:
            jid = c.submit(request, runtime, args.name or "", command, args.burn)
        except DaemonError as e:
            raise UsageError(str(e)) from None
    if args.json:
        print_json({"job": jid})
    else:
        print(f"Submitted job {jid}")
    return 0


def cmd_queue(args) -> int:
    with _client(args) as c:
        q = c.queue(all=args.all)
    if args.json:
        print_json(q)
        return 0
    rows = []
    gang = q.get("gang")
    for j in q["jobs"]:
        row = (j["id"], j["name"], j.get("owner") or "-", j["state"], j["request_text"], j["allocation"] or "-",
               _ranges(j["nodes"] or []) or "-", f"{j['submit']:.2f}",
               "" if j["start"] is None else f"{j['start']:.2f}", "" if j["end"] is None else f"{j['end']:.2f}",
               j["attempt"], j["reason"] or "")
        if gang:
            g = j.get("gang") or {}
            att = g.get("attained")
            row = row[:4] + (g.get("state", ""), "" if g.get("level") is None else g["level"],
                             "" if g.get("slots") is None else g["slots"],
                             "" if att is None else f"{att:.2f}") + row[4:]
        rows.append(row)
    cols = ["JOBID", "NAME", "OWNER", "STATE", "REQUEST", "ALLOCATION", "NODELIST", "SUBMIT", "START", "END", "ATT", "REASON"]
    if gang:
        cols[4:4] = ["SLOT", "LEVEL", "SLOTS", "ATTAINED"]
    _table(f"now {q['now']:.2f}", cols, rows)
    return 0


def cmd_cancel(args) -> int:
    from emulator.live.client import DaemonError

    with _client(args) as c:
        try:
            r = c.cancel(args.job)
        except DaemonError as e:
            raise UsageError(str(e)) from None
    if args.json:
        print_json(r)
    else:
        print(f"job {r['job']} cancelled")
    return 0


def workload_jobs(topology, n_jobs, load, size_dist=None, service=None, seed=0, service_mean=None):
    """The synthetic workload to stream, from emulator.sim.workloads (the simulator's generators):
    a list of {"at": model time, "request", "runtime", "name"}."""
    from emulator.sim import workloads

    kw = {} if service_mean is None else {"service_mean": service_mean}
    jobs = workloads.generate(topology, load, size_dist or "uniform", service or "uniform", seed=seed,
                              jobs=n_jobs, **kw)
    return [{"at": j.submit, "request": j.request.to_dict(), "runtime": j.runtime, "name": j.name or f"w{j.id}"}
            for j in jobs]


def cmd_workload(args) -> int:
    with _client(args) as c:
        st = c.status()
        jobs = workload_jobs(st["config"]["topology"], args.jobs, args.load, args.size_dist, args.service, args.seed,
                             args.service_mean)
        unit = st["config"]["time_unit"]
        tasks = _pattern_tasks(args, jobs, c) if args.pattern else [(None, j["runtime"]) for j in jobs]
        t0 = time.monotonic()
        ids = []
        for j, (command, runtime) in zip(jobs, tasks):
            delay = t0 + j["at"] * unit - time.monotonic()
            if delay > 0:
                time.sleep(delay)  # streaming at the workload's own arrival times
            j["runtime"] = runtime
            ids.append(c.submit(j["request"], runtime, j.get("name", ""), command=command))
            if not args.json:
                print(f"submitted job {ids[-1]} {j['request']} runtime {j['runtime']:.3g}", flush=True)
    if args.json:
        print_json({"jobs": ids, "submitted": len(ids)})
    return 0


def _pattern_tasks(args, jobs, client) -> list:
    """``workload --pattern``: every job runs the ready-made pattern task (emulator.cli.net
    ``pattern_job``), its run time set by its messages; all checked before the first submit
    (a pattern that does not fit a drawn shape is a one-line error, nothing is submitted)."""
    from types import SimpleNamespace

    from emulator.cli.net import pattern_job

    out = []
    for i, j in enumerate(jobs):
        a = SimpleNamespace(pattern=args.pattern, mtbs=args.mtbs, iterations=args.iterations, warmup=args.warmup,
                            seed=args.seed * 1_000_003 + i, group=None, runtime=None)
        try:
            out.append(pattern_job(a, j["request"], client))
        except UsageError as e:
            raise UsageError(f"job {i + 1} of the stream ({j['request']}): {e}") from None
    return out


WAIT_POLL = 0.2  # seconds between two looks at the jobs


def cmd_wait(args) -> int:
    """Block until the jobs finish; 0 when all completed, 1 when any failed or was cancelled,
    2 on a usage error (an unknown job, no cluster), 3 when ``--timeout`` passed first. The
    daemon may die and be restarted meanwhile (recovery): the wait goes on."""
    from emulator.live.client import Client, ClientTimeout
    from emulator.live.recovery import pending_meta

    if args.timeout is not None and args.timeout <= 0:
        raise UsageError(f"--timeout must be > 0 seconds, got {args.timeout}")
    deadline = None if args.timeout is None else time.monotonic() + args.timeout
    home = None if args.connect else homemod.home_dir()
    use_key(args)
    c = Client(args.connect or None, timeout=5.0)
    told = False
    try:
        try:
            if args.jobs:
                ids = sorted(set(args.jobs))
                known = {j["id"] for j in c.queue(jobs=ids)["jobs"]}
                if set(ids) - known:
                    raise UsageError(f"no such job: {_ranges(set(ids) - known)}")
            else:
                ids = sorted(j["id"] for j in c.queue()["jobs"])
        except ClientTimeout as e:
            raise UsageError(str(e)) from None
        jobs = []
        while ids:
            try:
                jobs = c.queue(jobs=ids)["jobs"]
                if told:
                    print("mcemu wait: the daemon answers again", file=sys.stderr)
                    told = False
            except ClientTimeout:
                if home is not None and homemod.read_pidfile(home / "daemon.pid") is None \
                        and not pending_meta(home):
                    raise UsageError(f"the cluster in {home} was stopped before jobs "
                                     f"{_ranges(ids)} finished") from None
                if not told:
                    print("mcemu wait: the daemon does not answer (restarting?); still waiting", file=sys.stderr)
                    told = True
                jobs = []
            if jobs and all(j["state"] in FINISHED for j in jobs):
                break
            if deadline is not None and time.monotonic() >= deadline:
                break
            time.sleep(WAIT_POLL if deadline is None else max(0.0, min(WAIT_POLL, deadline - time.monotonic())))
    finally:
        c.close()
    counts: dict[str, int] = {}
    for j in jobs:
        counts[j["state"]] = counts.get(j["state"], 0) + 1
    active = [j["id"] for j in jobs if j["state"] not in FINISHED]
    if not jobs and ids:  # the daemon never answered again before the deadline
        active = ids
    code = 3 if active else (1 if any(j["state"] != "completed" for j in jobs) else 0)
    if args.json:
        print_json({"jobs": [{k: j.get(k) for k in ("id", "name", "state", "exit", "reason", "attempt")}
                             for j in jobs], "states": counts, "timed_out": bool(active), "exit": code})
    elif not ids:
        print("no job queued or running: nothing to wait for")
    else:
        for j in jobs:
            if j["state"] != "completed":
                why = j.get("reason") or (f"exit {j['exit']}" if j.get("exit") else "")
                print(f"job {j['id']} {j['state']}" + (f": {why}" if why else ""))
        summary = ", ".join(f"{n} {st}" for st, n in sorted(counts.items()))
        print(f"{len(ids)} jobs: {summary}" + (f"; still active at the timeout: {_ranges(active)}" if active else ""))
    return code


def cmd_node(args) -> int:
    from nodes import agent

    use_key(args)
    return agent.run_node(args.id, homemod.endpoint(args.connect), heartbeat=args.heartbeat, liveness=args.liveness,
                          output_dir=args.output_dir, sched=args.sched)


def _add_up(sub) -> None:
    p = sub.add_parser("up", help="start the daemon and one process per node")
    p.add_argument("--topology", help="hypercube:N or mesh:WxH (default hypercube:4)")
    p.add_argument("--allocator", help="allocator name (default buddy)")
    p.add_argument("--scheduler", help="discipline name (default lazy)")
    p.add_argument("--reduction", help="size reduction, e.g. rsr:T or limit:K")
    p.add_argument("--time-unit", type=float, help="wall-clock seconds per model time unit (default 1)")
    p.add_argument("--heartbeat", type=float, help="heartbeat interval in seconds (default 0.2)")
    p.add_argument("--liveness", type=int, help="missed heartbeats before a node is down (default 3)")
    p.add_argument("--max-requeue", type=int, help="node faults a job survives by requeueing (default 1)")
    p.add_argument("--listen", help="also accept nodes and clients on tcp://ADDR:PORT (or :PORT for loopback), "
                                    "CURVE-authenticated with the keys of `mcemu keys init`")
    p.add_argument("--insecure", action="store_true",
                   help="--listen without authentication: anyone who reaches the port is the cluster's admin")
    p.add_argument("--local-nodes", type=int, help="launch only nodes 0..N-1 here; the rest join with `mcemu node`")
    p.add_argument("--gang", help="time-share with this gang policy (round-robin, two-queue, multilevel, fb) "
                                  "instead of a discipline")
    p.add_argument("--mpl", type=int, help="rows of the gang's Ousterhout matrix (default 4)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="discipline or gang policy parameter, e.g. threshold=20, literal=on, slot=0.5 or "
                        "levels=[[1,1],[3,8]] (repeatable; read as `mcemu simulate` reads it)")
    p.add_argument("--rt-priority", type=int, nargs="?", const=10, metavar="P",
                   help="run the daemon and the nodes at SCHED_RR priority P (default 10) where permitted")
    p.add_argument("--node-sched", choices=("batch", "normal"),
                   help="the node agents' scheduling policy (default batch: a woken node does not preempt "
                        "the daemon or another node; faster job starts on few cores)")
    p.add_argument("--no-restart", action="store_true",
                   help="leave a node process that dies dead (by default the launcher restarts it: after 0.5 s "
                        "doubling to 8 s, at most --max-restarts times per node per minute)")
    p.add_argument("--max-restarts", type=int, metavar="N",
                   help="restarts of one node within 60 s before it is left dead (default 5; 0 = --no-restart)")
    p.add_argument("--detach", action="store_true",
                   help="return once the cluster is ready (on an unclosed journal: once the daemon serves)")
    p.add_argument("--timeout-up", type=float, help="seconds to wait for the cluster to be ready")
    p.add_argument("--network", choices=("wormhole", "none"),
                   help="wormhole: tasks exchange messages through an interconnect timed by the network model")
    p.add_argument("--net-dilation", type=float, metavar="D",
                   help="one network microsecond lasts D wall microseconds (default 1000)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=cmd_up)


def add_commands(sub) -> None:
    def common(p, json=True):
        if json:
            p.add_argument("--json", action="store_true", help="print one JSON document")
        p.add_argument("--connect", help="daemon endpoint (default: MCEMU_HOME's ipc socket)")
        p.add_argument("--key", help="credential file for a tcp daemon (`mcemu keys issue`; default: MCEMU_KEY)")
        p.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for the daemon")

    _add_up(sub)

    p = sub.add_parser("down", help="stop the cluster: every node, task and the daemon, by pid")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("--timeout-down", type=float, default=15.0)
    p.set_defaults(func=cmd_down)

    p = sub.add_parser("nodes", help="node states (like sinfo)")
    common(p)
    p.add_argument("--long", "-l", action="store_true", help="one line per node")
    p.set_defaults(func=cmd_nodes)

    p = sub.add_parser("submit", help="submit one job")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--cube", type=int, help="a K-cube")
    g.add_argument("--shape", help="a WxH submesh")
    g.add_argument("--nodes", type=int, help="a processor count")
    p.add_argument("--runtime", type=float, help="run time in model time units (required without --pattern)")
    p.add_argument("--name")
    p.add_argument("--pattern", help="a ready-made task that runs this communication pattern (transpose, "
                                     "diagonal, ring, ...; needs --shape and a cluster with --network)")
    p.add_argument("--mtbs", type=float, default=0.0, help="--pattern: mean time between sends, network us (0)")
    p.add_argument("--iterations", type=int, default=100, help="--pattern: measured messages per path (100)")
    p.add_argument("--warmup", type=int, default=None,
                   help="--pattern: messages per path before those measured (default a tenth of --iterations)")
    p.add_argument("--seed", type=int, default=0, help="--pattern: seed of the computation times (0)")
    p.add_argument("--group", help="--pattern: keep sending (unmeasured) until every job of this group is done, "
                                   "as `mcemu net simulate` keeps every path sending")
    p.add_argument("--command", dest="task_command", help="shell command each task runs (default: a synthetic task)")
    p.add_argument("--burn", action="store_true", help="synthetic task burns CPU instead of sleeping")
    common(p)
    p.set_defaults(func=cmd_submit)

    p = sub.add_parser("queue", help="waiting and running jobs (like squeue)")
    p.add_argument("--all", action="store_true", help="include finished jobs")
    common(p)
    p.set_defaults(func=cmd_queue)

    p = sub.add_parser("cancel", help="cancel a job")
    p.add_argument("job", type=int)
    common(p)
    p.set_defaults(func=cmd_cancel)

    p = sub.add_parser("workload", help="stream a synthetic Poisson workload into the running cluster",
                       description="Submit N jobs with Poisson arrivals in real time (the cluster's time unit), "
                                   "sizes and run times drawn as `mcemu simulate` draws them; `mcemu policies` "
                                   "lists the distributions.")
    p.add_argument("--jobs", type=int, required=True, help="how many jobs to submit")
    p.add_argument("--load", type=float, required=True,
                   help="offered load: arrival rate x mean size x mean service / machine size (e.g. 0.8)")
    p.add_argument("--size-dist", help="job size distribution (default: uniform on a cube, processors on a mesh)")
    p.add_argument("--service", help="service time distribution (default uniform)")
    p.add_argument("--service-mean", type=float, help="mean service time in model units (default 5)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the stream (default 0)")
    p.add_argument("--pattern", help="every job runs this communication pattern (`mcemu submit --pattern`; needs "
                                     "`up --network wormhole`): its run time comes from its messages")
    p.add_argument("--mtbs", type=float, default=0.0, help="--pattern: mean time between sends, network us (0)")
    p.add_argument("--iterations", type=int, default=100, help="--pattern: measured messages per path (100)")
    p.add_argument("--warmup", type=int, help="--pattern: messages per path before those measured (a tenth)")
    common(p)
    p.set_defaults(func=cmd_workload)

    p = sub.add_parser("wait", help="block until jobs finish; the exit status says how they ended",
                       description="Wait for the given jobs (default: every job queued or running now) to finish. "
                                   "Exit status: 0 every job completed, 1 some failed or were cancelled, 2 a usage "
                                   "error (no such job, no cluster), 3 --timeout passed with jobs still queued or "
                                   "running. A daemon that dies and is restarted meanwhile (`mcemu up`) is waited for.")
    p.add_argument("jobs", type=int, nargs="*", metavar="JOB", help="job ids (default: every active job)")
    p.add_argument("--timeout", type=float, help="give up after this many seconds (exit status 3)")
    p.add_argument("--connect", help="daemon endpoint (default: MCEMU_HOME's ipc socket)")
    p.add_argument("--key", help="credential file for a tcp daemon (`mcemu keys issue`; default: MCEMU_KEY)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=cmd_wait)

    p = sub.add_parser("node", help="run one node agent that joins a cluster (e.g. from another host)")
    p.add_argument("--connect", required=True,
                   help="the daemon's tcp://HOST:PORT (see `mcemu up --listen`), or on the same host "
                        "ipc://$MCEMU_HOME/daemon.sock (e.g. to bring back a node left down)")
    p.add_argument("--id", type=int, required=True)
    p.add_argument("--heartbeat", type=float, default=0.2)
    p.add_argument("--liveness", type=int, default=3)
    p.add_argument("--output-dir")
    p.add_argument("--sched", choices=("batch", "normal"), default="batch",
                   help="the agent's scheduling policy (default batch)")
    p.add_argument("--key", help="node credential for a tcp daemon (`mcemu keys issue NAME --role node`; "
                                 "default: MCEMU_KEY)")
    p.set_defaults(func=cmd_node)

    from emulator.cli import keys

    keys.add_commands(sub)
