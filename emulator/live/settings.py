"""The live cluster's settings, declared ONCE (``SETTINGS``): each ``mcemu up`` setting's flag,
type, help, default, kind and the processes that receive it, with the checks of their values.
Everything derived from them (the flags of every parser, the journal's merge, the command
lines ``mcemu up`` passes on) is emulator.live.config, the module to import; how to add a
setting is in its docstring."""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

from emulator.live import admission  # its quota and rate are the settings' defaults

POLICY, TUNABLE, PROCESS = "policy", "tunable", "process"
DAEMON, LAUNCHER, NODE, INTERCONNECT = "daemon", "launcher", "node", "interconnect"
COMMANDS = ("up", "demo")  # parsers that ask: a setting not given there is None (the journal's, or the default)
NETWORKS = ("wormhole",)


class Setting(NamedTuple):
    """One ``mcemu up`` setting (see the module docstring). A NamedTuple, not a dataclass:
    dataclasses (with inspect) would cost every mcemu command 4 ms more at start-up."""
    name: str  # the configuration's key, start_cluster's keyword, the parsed attribute
    kind: str  # POLICY, TUNABLE or PROCESS
    to: tuple  # the processes given it: DAEMON, LAUNCHER, NODE, INTERCONNECT
    help: str  # "{default}" is replaced by the default the command shows
    type: Callable | None = None
    default: Any = None
    shown: Any = None  # the default as help says it, where ``default`` is not it
    flag: str = ""  # default: --name with dashes
    node_name: str = ""  # the node processes' name (flag, agent keyword) where it differs
    commands: tuple = ("up",)
    none: bool = False  # the word "none" asks for None
    check: Callable | None = None  # value -> value; ValueError when out of bounds
    journal: bool | None = None  # stored in the journal; None: when POLICY or TUNABLE
    arg: dict | None = None  # more of argparse's add_argument (action, choices, ...)

    @property
    def action(self) -> str | None:
        return (self.arg or {}).get("action")

    @property
    def stored(self) -> bool:
        return self.kind in (POLICY, TUNABLE) if self.journal is None else self.journal

    def flag_for(self, where: str) -> str:
        name = self.node_name if where in (LAUNCHER, NODE) and self.node_name else self.name
        return self.flag if self.flag and name == self.name else "--" + name.replace("_", "-")

    def dest_for(self, where: str) -> str:
        return self.node_name if where in (LAUNCHER, NODE) and self.node_name else self.name


def _within(flag: str, lo, hi):
    def check(v):
        if not lo <= int(v) <= hi:
            raise ValueError(f"{flag} must be within {lo}-{hi}, got {v}")
        return v
    return check


def _positive_unit(v):
    if not float(v) > 0:
        raise ValueError(f"--time-unit must be > 0, got {v}")
    return v


def _network(v):
    if v not in (None, *NETWORKS):
        raise ValueError(f"--network must be one of {', '.join(NETWORKS)} or none, got {v!r}")
    return v


def _dilation(d):
    if isinstance(d, bool) or not isinstance(d, (int, float)) or not 1 <= d <= 1e9:
        raise ValueError(f"--net-dilation must be a number of wall microseconds per network microsecond "
                         f"within 1-1e9, got {d!r}")
    return float(d)


NET_TIMES = ("dilated", "virtual")


def _net_time(v):
    if v not in NET_TIMES:
        raise ValueError(f"--net-time must be one of {', '.join(NET_TIMES)}, got {v!r}")
    return v


CPU_CLOCKS = ("raw", "gauged")


def _cpu_clock(v):
    if v not in CPU_CLOCKS:
        raise ValueError(f"--cpu-clock must be one of {', '.join(CPU_CLOCKS)}, got {v!r}")
    return v


def _cpu_scale(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1e6:
        raise ValueError(f"--cpu-scale must be a number of node seconds per host CPU second within 0-1e6, "
                         f"got {v!r}")
    return float(v)


_UP_DEMO = ("up", "demo")
# In `mcemu up --help`'s order. The defaults of topology and scheduler are the policy stack's
# (scheduler.stack.DEFAULT_*, which tests/test_cli_config.py compares): not imported, which would
# cost every mcemu command 43 ms (the stack imports every policy), measured. The allocator's
# follows the topology: None here, ``resolve`` asks scheduler.allocators.default
SETTINGS = (
    Setting("topology", POLICY, (DAEMON,), "hypercube:N or mesh:WxH (default {default})", default="hypercube:4",
            commands=_UP_DEMO),
    Setting("allocator", POLICY, (DAEMON,), "allocator name (default: the topology's, which "
            "`mcemu policies` names)", commands=_UP_DEMO),
    Setting("scheduler", POLICY, (DAEMON,), "discipline name (default {default})", shown="lazy",
            commands=_UP_DEMO),  # None: the stack's live discipline, unless --gang
    Setting("reduction", POLICY, (DAEMON,), "size reduction, e.g. rsr:T or limit:K", none=True),
    Setting("time_unit", POLICY, (DAEMON,), "wall-clock seconds per model time unit (default {default})",
            type=float, default=1.0, commands=_UP_DEMO, check=_positive_unit),
    Setting("heartbeat", TUNABLE, (DAEMON, NODE), "heartbeat interval in seconds (default {default})",
            type=float, default=0.2),
    Setting("liveness", TUNABLE, (DAEMON, NODE), "missed heartbeats before a node is down (default {default})",
            type=int, default=3),
    Setting("hang", TUNABLE, (DAEMON,), "seconds of silence after which a node process of this host that "
            "is still alive is taken for hung and down (default {default}); one that ends is down at once",
            type=float, default=30.0, check=_within("--hang", 0.1, 86400)),
    Setting("max_requeue", TUNABLE, (DAEMON,), "faults (a node lost, the interconnect) a job survives by "
            "requeueing (default {default})",
            type=int, default=1, check=_within("--max-requeue", 0, 1000)),
    Setting("client_max_jobs", TUNABLE, (DAEMON,), "jobs a client key may have queued or running, 0 for no "
            "limit (default {default}; admins and local users have none)", type=int, default=admission.QUEUE_QUOTA,
            check=_within("--client-max-jobs", 0, 10**9)),
    Setting("client_rate", TUNABLE, (DAEMON,), "requests a second a client key may send, in bursts of twice as "
            "many, 0 for no limit (default {default})", type=float, default=admission.RATE,
            check=_within("--client-rate", 0, 1e9)),
    Setting("listen", PROCESS, (DAEMON,), "also accept nodes and clients on tcp://ADDR:PORT (or :PORT for "
            "loopback), CURVE-authenticated with the keys of `mcemu keys init`"),
    Setting("insecure", PROCESS, (DAEMON,), "--listen without authentication: anyone who reaches the port is "
            "the cluster's admin", default=False, arg={"action": "store_true"}),
    Setting("local_nodes", PROCESS, (), "launch only nodes 0..N-1 here; the rest join with `mcemu node`",
            type=int),  # read by mcemu up itself: the launcher's --nodes
    Setting("gang", POLICY, (DAEMON,), "time-share with this gang policy (round-robin, two-queue, multilevel, "
            "fb) instead of a discipline", none=True),
    Setting("mpl", POLICY, (DAEMON,), "rows of the gang's Ousterhout matrix (default 4)", type=int,
            journal=False),  # stored as params["mpl"] (given)
    Setting("params", POLICY, (DAEMON,), "discipline or gang policy parameter, e.g. threshold=20, literal=on, "
            "slot=0.5 or levels=[[1,1],[3,8]] (repeatable; read as `mcemu simulate` reads it)", default={},
            flag="--param", arg={"action": "append", "metavar": "KEY=VALUE"}),
    Setting("rt_priority", PROCESS, (DAEMON, NODE), "run the daemon and the nodes at SCHED_RR priority P "
            "(default 10) where permitted", type=int, arg={"nargs": "?", "const": 10, "metavar": "P"}),
    Setting("node_sched", PROCESS, (NODE,), "the node agents' scheduling policy (default {default}: a woken node "
            "does not preempt the daemon or another node; faster job starts on few cores)", default="batch",
            node_name="sched", arg={"choices": ("batch", "normal")}),
    Setting("no_restart", PROCESS, (LAUNCHER,), "leave a node process that dies dead (by default the launcher "
            "restarts it: after 0.5 s doubling to 8 s, at most --max-restarts times per node per minute)",
            default=False, arg={"action": "store_true"}),
    Setting("max_restarts", PROCESS, (LAUNCHER,), "restarts of one node within 60 s before it is left dead "
            "(default {default}; 0 = --no-restart)", type=int, default=5, arg={"metavar": "N"},
            check=_within("--max-restarts", 0, 1000)),
    Setting("network", POLICY, (DAEMON,), "wormhole: tasks exchange messages through an interconnect timed by "
            "the network model", none=True, check=_network, arg={"choices": (*NETWORKS, "none")}),
    Setting("net_dilation", POLICY, (DAEMON,), "one network microsecond lasts D wall microseconds (default "
            "{default})", type=float, default=1000.0, check=_dilation, arg={"metavar": "D"}),
    Setting("net_time", POLICY, (DAEMON,), "the network's clock: dilated (wall time slowed by --net-dilation: "
            "watch patterns in the monitor) or virtual (each rank's clock advances by its CPU time and its "
            "messages' delays: results independent of the host; docs/ARCHITECTURE.md) (default {default})",
            default="dilated", check=_net_time, arg={"choices": NET_TIMES}),
    Setting("cpu_scale", POLICY, (DAEMON,), "virtual time: seconds of an emulated node's time per second of host "
            "CPU a rank's program uses (0: computation takes no time, the clocks move by messages alone) "
            "(default {default})", type=float, default=1.0, check=_cpu_scale, arg={"metavar": "S"}),
    Setting("cpu_clock", POLICY, (DAEMON,), "virtual time: a rank's CPU seconds as the host counts them (raw) or "
            "rescaled by a host-speed gauge, a reference work timed as it runs (gauged: docs/ARCHITECTURE.md) "
            "(default {default})", default="raw", check=_cpu_clock, arg={"choices": CPU_CLOCKS}),
    Setting("flit_bytes", POLICY, (DAEMON,), "bytes per flit: a program's message of B bytes is a header flit plus "
            "ceil(B / flit bytes) flits (default {default}: the text's L = 500 flits is a 1 KB message)", type=int,
            default=2, check=_within("--flit-bytes", 1, 1 << 20), arg={"metavar": "B"}),
    Setting("grace", PROCESS, (DAEMON,), "seconds a recovered daemon waits for its nodes to register again "
            "before it marks them down (default {default})", type=float, default=5.0, commands=()),
)
