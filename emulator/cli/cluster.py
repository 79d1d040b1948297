"""``mcemu up / down / nodes / node``: the live cluster, its lifecycle and its nodes.

The processes' lifecycle (start, recover, stop by pid) is :mod:`emulator.cli.lifecycle`;
``cluster_processes``, ``start_cluster`` and ``stop_cluster`` are re-exported here. The jobs on
the cluster (``submit / queue / cancel / workload / wait``) are :mod:`emulator.cli.jobs`, whose
sub-commands ``add_commands`` registers here (after ``nodes``, before ``node``); what the
commands that talk to the daemon share (``--key``, the client, the tables) is
:mod:`emulator.cli._client` (``use_key`` is re-exported here).

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

``down`` asks the daemon to shut down (it tells the nodes, which kill their tasks), then
waits for every process it recorded (daemon, launcher, the launcher's whole process tree,
collected BEFORE asking) and terminates by pid whatever is left after a deadline. It never
looks processes up by name.
"""
from __future__ import annotations

import getpass
import signal
import sys
import time

from emulator.cli import UsageError, jobs, keys, print_json
from emulator.cli._client import client_options, connect, ranges, table, use_key
from emulator.cli.lifecycle import cluster_processes, start_cluster, stop_cluster
from emulator.jsonable import jsonable
from emulator.live import config as configmod
from emulator.live import home as homemod

# lazy imports, measured on top of `mcemu --help`'s (every mcemu command builds the whole parser,
# so imports this module; scripts and tests poll `mcemu nodes` / `queue`): the node agent, the keys

# lifecycle's and _client's names re-exported: the scripts, the tests and the monitor import them from here
__all__ = ["add_commands", "cmd_up", "cmd_down", "cmd_nodes", "cmd_node",
           "cluster_processes", "start_cluster", "stop_cluster", "use_key"]


def cmd_up(args) -> int:
    home = homemod.home_dir()
    settings = configmod.values(args, "up")
    listen = settings["listen"] = homemod.endpoint(args.listen, "--listen", listen=True) if args.listen else None
    if listen and not listen.startswith("tcp://"):
        raise UsageError(f"--listen takes a tcp address (the ipc sockets are always there), got {args.listen!r}")
    if args.insecure and not listen:
        raise UsageError("--insecure only applies to --listen")
    if listen:
        _check_listen(home, listen, args.insecure)
    st = start_cluster(home, settings, timeout=args.timeout_up)
    rec = st.get("recovered")
    if args.json:
        doc = {"home": str(home), "pid": st["pid"], "config": jsonable(st["config"]), "nodes": st["nodes"],
               "endpoints": st["endpoints"], "startup_s": round(st["startup_s"], 3)}  # inf as "inf"
        if rec is not None:
            doc["recovered"] = rec
        print_json(doc)
    elif rec is not None:
        cfg = st["config"]
        down = f"{len(rec['nodes_down'])} down ({ranges(rec['nodes_down'])})" if rec["nodes_down"] else "none down"
        late = (f"; {len(rec['nodes_not_back'])} not registered yet ({ranges(rec['nodes_not_back'])}): down "
                f"after {rec['grace_s']:g} s unless they do" if rec["nodes_not_back"] else "")
        print(f"recovered the journal in {st['startup_s']:.2f} s: {cfg['topology']} ({st['size']} nodes), "
              f"{rec['queued']} jobs queued, {rec['running']} running, {rec['finished']} finished; "
              f"nodes: {st['connected']} connected, {down}{late}; home {home}")
    else:
        cfg = st["config"]
        policy = (f"gang {cfg['gang']} (MPL {st['gang']['mpl']})" if cfg.get("gang") and st.get("gang")
                  else f"scheduler {cfg['scheduler']}")
        net = ""
        if cfg.get("network") and cfg.get("net_time") == "virtual":
            net = (f", network {cfg['network']} (virtual time, cpu scale {cfg.get('cpu_scale', 1.0):g}, "
                   f"{cfg.get('flit_bytes', 2)}-byte flits)")
        elif cfg.get("network"):
            net = f", network {cfg['network']} (dilation {cfg['net_dilation']:g})"
        print(f"cluster up in {st['startup_s']:.2f} s: {cfg['topology']} ({st['size']} nodes), "
              f"allocator {cfg['allocator']}, {policy}, time unit {cfg['time_unit']} s{net}; "
              f"home {home}")
    if args.rt_priority and not st.get("rt"):
        print(f"mcemu up: --rt-priority {args.rt_priority} was not permitted here (needs CAP_SYS_NICE or an "
              f"RLIMIT_RTPRIO); the cluster runs at normal priority (see daemon.log, launcher.log)", file=sys.stderr)
    if args.detach or rec is not None:  # a recovery continues a cluster that runs on its own: it returns
        return 0
    return _foreground(home, st, args)


def _foreground(home, st: dict, args) -> int:
    """Hold the terminal until Ctrl-C (or SIGTERM), then stop the cluster; or until its daemon is
    gone: stopped by `mcemu down` elsewhere (0), or dead (1: its nodes are left to a recovery)."""
    stop = []
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, lambda *_: stop.append(1))
    print("running in the foreground; Ctrl-C stops the cluster", file=sys.stderr)
    try:
        while not stop and homemod.read_pidfile(home / "daemon.pid") is not None:
            time.sleep(0.2)
    except BaseException:
        stop.append(1)
        raise
    finally:
        # a daemon that died (its journal still open) leaves its nodes and their tasks running
        # for a recovery, as a detached cluster's does; `mcemu down` elsewhere closed the journal
        died = not stop and not jobs.stopped(home)
        if not died:
            res = stop_cluster(home)
            if not args.json:
                print(f"cluster down: {len(res['stopped'])} processes stopped", file=sys.stderr)
    if died:
        print(f"mcemu up: the daemon (pid {st['pid']}) died; its nodes keep their tasks: `mcemu up` recovers "
              f"the cluster, `mcemu down` stops it", file=sys.stderr)
        return 1
    return 0


def _check_listen(home, listen: str, insecure: bool) -> None:
    """A tcp address needs the cluster's keys (CURVE), unless ``--insecure``, which is said
    out loud: then anyone who reaches the port is the cluster's admin."""
    from emulator.live import keys as keysmod  # lazy: 3 ms at start-up of every mcemu command

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
              f"THIS PORT CAN RUN COMMANDS AS {getpass.getuser()!r} AND SHUT THE CLUSTER DOWN. "
              f"Use `mcemu keys init` instead.", file=sys.stderr)


def cmd_down(args) -> int:
    if args.connect:
        return _down_remote(args)
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


def _down_remote(args) -> int:
    """``down --connect``: the daemon at that endpoint is asked to shut down (it stops its nodes,
    which kill their tasks; the launcher of its host exits with them) and waited for until it
    no longer answers. Only its admin may (a client or node key is refused in one line); the
    processes are on the daemon's host, where a plain ``mcemu down`` also stops them by pid."""
    from emulator.live.client import ClientTimeout, DaemonError  # lazy: see _client's docstring

    with connect(args) as c:
        try:
            c.shutdown()
        except DaemonError as e:
            raise UsageError(str(e)) from None
        deadline = time.monotonic() + args.timeout_down
        while True:
            try:
                c.ping(timeout=min(1.0, max(0.1, deadline - time.monotonic())))
            except ClientTimeout:
                break  # gone
            if time.monotonic() >= deadline:
                raise UsageError(f"the daemon at {c.endpoint} acknowledged the shutdown but still answers "
                                 f"after {args.timeout_down:g} s")
            time.sleep(0.1)
        endpoint = c.endpoint
    if args.json:
        print_json({"endpoint": endpoint, "stopped": True})
    else:
        print(f"cluster down: the daemon at {endpoint} shut down")
    return 0


def cmd_nodes(args) -> int:
    with connect(args) as c:
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
        table(None, ["NODE", "STATE", "RUNNING", "SUSPENDED"] + (["PID", "HOST"] if args.long else []),
              [(n["node"], n["state"], tasks(n, "running"), tasks(n, "suspended"))
               + ((n["pid"], n["host"]) if args.long else ()) for n in nodes])
    elif not args.long:
        table(None, ["STATE", "NODES", "NODELIST"], [(s, len(v), ranges(v)) for s, v in sorted(groups.items())])
    else:
        table(None, ["NODE", "STATE", "JOB", "PID", "HOST"],
              [(n["node"], n["state"], ",".join(map(str, n["jobs"])) or "-", n["pid"], n["host"]) for n in nodes])
    return 0


def cmd_node(args) -> int:
    from nodes import agent  # lazy: 24 ms at start-up of every mcemu command (measured)

    use_key(args)
    out = args.output_dir
    if out is None:  # its tasks' output is kept (and sent on to a daemon of another directory: nodes.outfwd)
        out = homemod.home_dir() / "output"
        out.mkdir(mode=0o700, exist_ok=True)
    return agent.run_node(args.id, homemod.endpoint(args.connect), output_dir=str(out),
                          **configmod.node_keywords(args))


def _add_up(sub) -> None:
    p = sub.add_parser("up", help="start the daemon and one process per node")
    configmod.add_arguments(p, "up")  # the cluster's settings (emulator.live.config.SETTINGS)
    p.add_argument("--detach", action="store_true",
                   help="return once the cluster is ready (on an unclosed journal: once the daemon serves)")
    p.add_argument("--timeout-up", type=float, help="seconds to wait for the cluster to be ready")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=cmd_up)


def add_commands(sub) -> None:
    _add_up(sub)

    p = sub.add_parser("down", help="stop the cluster: every node, task and the daemon, by pid",
                       description="Stop the cluster of MCEMU_HOME: every node, task and the daemon, by pid. With "
                                   "--connect (and --key for a tcp daemon: an admin key), ask that daemon to shut "
                                   "down and wait until it no longer answers.")
    client_options(p)
    p.add_argument("--timeout-down", type=float, default=15.0, help="seconds to wait for the cluster to stop (15)")
    p.set_defaults(func=cmd_down)

    p = sub.add_parser("nodes", help="node states (like sinfo)")
    client_options(p)
    p.add_argument("--long", "-l", action="store_true", help="one line per node")
    p.set_defaults(func=cmd_nodes)

    jobs.add_commands(sub)

    p = sub.add_parser("node", help="run one node agent that joins a cluster (e.g. from another host)")
    p.add_argument("--connect", required=True,
                   help="the daemon's tcp://HOST:PORT (see `mcemu up --listen`), or on the same host "
                        "ipc://$MCEMU_HOME/daemon.sock (e.g. to bring back a node left down)")
    p.add_argument("--id", type=int, required=True)
    configmod.add_arguments(p, "node")  # heartbeat, liveness, ...: the settings a node agent takes
    p.add_argument("--output-dir", help="where its tasks' output goes (default: $MCEMU_HOME/output); from "
                                        "another directory than the daemon's it is also sent to the daemon, "
                                        "whose `mcemu run` streams it")
    p.add_argument("--key", help="node credential for a tcp daemon (`mcemu keys issue NAME --role node`; "
                                 "default: MCEMU_KEY); with --network its tasks reach the interconnect at the "
                                 "daemon's port + 2 with it")
    p.set_defaults(func=cmd_node)

    keys.add_commands(sub)
