"""The live cluster's settings: ONE declaration per ``mcemu up`` setting (``SETTINGS``), and
everything derived from it.

A ``Setting`` says its flag, type, help and default, its kind and which processes receive it:

* kind ``POLICY``: fixed by the journal (``meta.config``): a daemon started again on the same
  MCEMU_HOME and asked for another value refuses to start (topology, allocator, time unit ...);
* kind ``TUNABLE``: kept in the journal, but a restart may change it (heartbeat, liveness,
  max_requeue);
* kind ``PROCESS``: how this run's processes run, never in the journal (listen, rt_priority,
  the launcher's restarts ...).

``to`` names the processes given it on their command line: ``daemon``; ``node`` (the node
agents: ``python -m nodes.agent``, ``mcemu node``, and the launcher, which forwards it to the
agents it forks, as the keyword ``node_name or name`` of ``nodes.agent.run_node``);
``launcher`` (the launcher only); ``interconnect``. ``commands`` names the ``mcemu`` commands
that show it as a flag (``up``; ``demo`` shares a few).

Derived from ``SCHEMA`` (read at call time, so that a test can extend it):
``add_arguments(parser, where)`` the flags of ``mcemu up`` / ``demo`` / ``node`` and the
argv parsers of the daemon, the launcher and the agent; ``values(args, where)`` what a parser
read, by setting name; ``argv(where, values)`` the command line ``mcemu up`` (emulator.cli.
lifecycle) passes to a process; ``given(**asked)`` / ``resolve(journal, asked)`` the
configuration a cluster runs with, which is the journal's config (the ``POLICY`` and
``TUNABLE`` settings, ``DEFAULTS``).

How to add a setting: append one ``Setting`` to ``SETTINGS``, e.g.::

    Setting("quiet_after", TUNABLE, (DAEMON,), "seconds of silence before a node is suspect "
            "(default {default})", type=float, default=2.0, check=_within("--quiet-after", 0, 3600))

``mcemu up`` then has ``--quiet-after``, ``start_cluster`` takes ``quiet_after=`` and hands it
to the processes in ``to``, whose parsers accept it, and a policy or tunable one is resolved
against the journal and stored in it. What is left is to USE it where it arrives
(``cfg["quiet_after"]`` in the daemon; a node setting is a keyword of ``nodes.agent.Agent``).

``resolve`` is the one merge: the daemon calls it when it starts and ``mcemu up`` calls it
before it starts anything, so a bad setting is refused in one line with no process left
behind. ``stack_config(cfg)`` turns a resolved configuration into the ``scheduler.stack``
configuration the daemon builds its policy from; ``params`` are ``--param KEY=VALUE`` parsed by
``scheduler.stack.parse_params`` (the simulator's parser too), ``--mpl M`` is ``params["mpl"]``.
"""
from __future__ import annotations

import argparse
from typing import Any, Callable, NamedTuple

from emulator.live import admission  # its quota and rate are the settings' defaults

POLICY, TUNABLE, PROCESS = "policy", "tunable", "process"
DAEMON, LAUNCHER, NODE, INTERCONNECT = "daemon", "launcher", "node", "interconnect"
COMMANDS = ("up", "demo")  # parsers that ask: a setting not given there is None (the journal's, or the default)
NETWORKS = ("wormhole",)
# The journal's format: 2 since gang rows are quarantined and a node coming back calls the
# policy's retry (a gang journal of format 1 would not replay to the same placements); 3 since
# a discipline holds the jobs that down nodes keep from fitting and schedules at a node's
# failure (a discipline journal of format 1-2 with a node down would replay differently).
FORMAT = 3
_UNSET = object()


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
    Setting("max_requeue", TUNABLE, (DAEMON,), "node faults a job survives by requeueing (default {default})",
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


def _shown(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


class Schema:
    """The settings and what is derived from them; ``SCHEMA`` is the cluster's."""

    def __init__(self, settings):
        self.settings = tuple(settings)
        self.by_name = {s.name: s for s in self.settings}
        if len(self.by_name) != len(self.settings):
            raise ValueError("two settings of one name")

    def extended(self, *more: Setting) -> Schema:
        return Schema(self.settings + more)

    def keys(self, *kinds) -> tuple:
        """The journal's keys of these kinds."""
        return tuple(s.name for s in self.settings if s.stored and s.kind in kinds)

    def defaults(self) -> dict:
        """The journal's configuration when nothing is asked (before ``resolve``'s rules)."""
        return {s.name: s.default for s in self.settings if s.stored}

    def where(self, where: str) -> list[Setting]:
        """The settings of a command's parser (``up``, ``demo``) or a process's (its argv)."""
        if where in COMMANDS:
            return [s for s in self.settings if where in s.commands]
        return [s for s in self.settings if where in s.to or (where == LAUNCHER and NODE in s.to)]

    def known(self, values: dict) -> None:
        unknown = sorted(set(values) - set(self.by_name))
        if unknown:
            raise TypeError(f"unknown cluster setting{'s' * (len(unknown) > 1)}: {', '.join(unknown)}")

    def add_arguments(self, parser, where: str, shown: dict | None = None) -> None:
        """The flags of ``where``'s settings. A command's are None when not given (so that the
        journal's value stands); the daemon's journal settings too (it resolves them); a
        process's others default to the setting's default."""
        for s in self.where(where):
            kw = dict(s.arg or {})
            if s.type is not None:
                kw["type"] = s.type
            if s.action == "store_true":
                default = False
            elif s.action == "append":
                default = []
            elif where in COMMANDS or (where == DAEMON and s.stored):
                default = None
            else:
                default = s.default
            show = (shown or {}).get(s.name, s.default if s.shown is None else s.shown)
            parser.add_argument(s.flag_for(where), dest=s.dest_for(where), default=default,
                                help=s.help.replace("{default}", _shown(show)), **kw)

    def values(self, args, where: str) -> dict:
        """What a parser of ``where`` read, by setting name."""
        return {s.name: getattr(args, s.dest_for(where)) for s in self.where(where)}

    def node_keywords(self, args) -> dict:
        """The keywords of ``nodes.agent.run_node`` that a node process's parser read."""
        return {s.dest_for(NODE): getattr(args, s.dest_for(NODE)) for s in self.where(NODE)}

    def argv(self, where: str, values: dict) -> list[str]:
        """The command line that gives ``where`` the settings in ``values`` that are set."""
        out: list[str] = []
        for s in self.where(where):
            v = values.get(s.name)
            if v is None or v is False or (s.action == "append" and not v):
                continue
            flag = s.flag_for(where)
            if s.action == "store_true":
                out.append(flag)
            elif s.action == "append":
                out += [a for x in v for a in (flag, str(x))]
            else:
                out += [flag, str(v)]
        return out

    def check_process(self, values: dict) -> None:
        """The bounds of the PROCESS settings given (the others are ``resolve``'s)."""
        for s in self.settings:
            if s.kind == PROCESS and s.check is not None and values.get(s.name) is not None:
                s.check(values[s.name])

    def given(self, asked: dict) -> dict:
        """The journal's settings a command line asks for (None: not asked), from any settings
        by name. ``params`` are ``KEY=VALUE`` strings; a bad one raises
        ``scheduler.stack.StackError`` (a ValueError)."""
        from scheduler.stack import parse_params  # lazy: see SETTINGS (43 ms)

        self.known(asked)
        params, mpl, gang = asked.get("params"), asked.get("mpl"), asked.get("gang")
        p = parse_params(params) if params else {}
        if mpl is not None:
            if gang in (None, "none"):
                raise ValueError("--mpl needs --gang (it is the number of rows of the gang's Ousterhout matrix)")
            if p.get("mpl", mpl) != mpl:
                raise ValueError(f"--mpl {mpl} and --param mpl={p['mpl']} disagree")
            p["mpl"] = mpl
        return {**{k: asked.get(k) for k in self.keys(POLICY, TUNABLE)}, "params": p or None}

    def resolve(self, journal: dict | None, asked: dict) -> dict:
        """The configuration to run with: the journal's (only TUNABLE settings may change, any
        other difference is a ValueError) or, for a new cluster, ``asked`` over the defaults."""
        from scheduler.stack import DEFAULT_DISCIPLINE  # lazy: see SETTINGS

        asked = {k: v for k, v in asked.items() if v is not None}
        for k, v in list(asked.items()):
            if v == "none" and k in self.by_name and self.by_name[k].none:
                asked[k] = None
        if journal:
            cfg = {**self.defaults(), **_legacy(journal)}
            _refuse_clash(cfg, asked, self.keys(POLICY))
            cfg.update({k: v for k, v in asked.items() if k in self.keys(TUNABLE)})
        else:
            cfg = {**self.defaults(), **asked}
            if cfg["gang"] is None and cfg["scheduler"] is None:
                cfg["scheduler"] = DEFAULT_DISCIPLINE["live"]
        cfg["params"] = dict(cfg["params"] or {})
        if cfg.get("allocator") is None and "allocator" in self.by_name:
            from scheduler.allocators import default as default_allocator  # lazy: see SETTINGS

            cfg["allocator"] = default_allocator(cfg["topology"])
        for s in self.settings:
            if s.stored and s.check is not None:
                cfg[s.name] = s.check(cfg[s.name])
        # the bounds of the protocol's welcome: outside them every node would refuse to register
        if not 0.001 <= float(cfg["heartbeat"]) <= 3600 or not 1 <= int(cfg["liveness"]) <= 1000:
            raise ValueError(f"--heartbeat must be within 0.001-3600 s and --liveness within 1-1000, got "
                             f"{cfg['heartbeat']} and {cfg['liveness']}")
        return cfg


def _refuse_clash(cfg: dict, asked: dict, policy_keys) -> None:
    clash = {k: cfg.get(k) for k, v in asked.items() if k in policy_keys and k != "params" and cfg.get(k) != v}
    old = cfg.get("params") or {}
    clash.update({f"--param {k}": old.get(k, "(not set)") for k, v in (asked.get("params") or {}).items()
                  if old.get(k, _UNSET) != v})
    if clash:
        raise ValueError("this MCEMU_HOME's journal was started with "
                         + ", ".join(f"{k}={old!r}" for k, old in clash.items())
                         + "; use another MCEMU_HOME or the same settings")


def _legacy(cfg: dict) -> dict:
    """A journal written before ``params``: ``gang_params`` and ``mpl`` were the gang's."""
    if "gang_params" in cfg or "mpl" in cfg:
        cfg = dict(cfg)
        p = dict(cfg.pop("gang_params", None) or {})
        mpl = cfg.pop("mpl", None)
        if mpl is not None:
            p["mpl"] = mpl
        cfg.setdefault("params", p)
        if cfg.get("gang") not in (None, "none"):
            cfg["scheduler"] = None  # the old daemon recorded the unused default discipline
    for k in ("gang", "reduction"):  # the old daemon kept "none" as given
        if cfg.get(k) == "none":
            cfg = {**cfg, k: None}
    return cfg


SCHEMA = Schema(SETTINGS)
# the cluster schema's, for readers; the functions below read SCHEMA when called
DEFAULTS = SCHEMA.defaults()
POLICY_KEYS = SCHEMA.keys(POLICY)  # what a journal fixes: a restarted daemon asked for others refuses to start
TUNABLE_KEYS = SCHEMA.keys(TUNABLE)  # what a restarted daemon may change


def add_arguments(parser: argparse.ArgumentParser, where: str, shown: dict | None = None) -> None:
    SCHEMA.add_arguments(parser, where, shown)


def values(args, where: str) -> dict:
    return SCHEMA.values(args, where)


def node_keywords(args) -> dict:
    return SCHEMA.node_keywords(args)


def argv(where: str, values: dict) -> list[str]:
    return SCHEMA.argv(where, values)


def known(values: dict) -> None:
    SCHEMA.known(values)


def check_process(values: dict) -> None:
    SCHEMA.check_process(values)


def given(**asked) -> dict:
    return SCHEMA.given(asked)


def resolve(journal: dict | None, asked: dict) -> dict:
    return SCHEMA.resolve(journal, asked)


def default(name: str):
    return SCHEMA.by_name[name].default


def check_format(meta: dict, cfg: dict) -> None:
    """Refuse to continue a cluster whose journal an older mcemu wrote when a replay here
    could place its jobs elsewhere than it did: a gang journal before format 2 (its rows did
    not keep down nodes out), a discipline journal before format 3 (jobs that down nodes kept
    from fitting blocked the queue instead of being held)."""
    fmt = meta.get("format", 1)
    if meta.get("config") and fmt < (2 if cfg.get("gang") is not None else 3):
        kind = "a gang" if cfg.get("gang") is not None else "this"
        raise ValueError(f"this MCEMU_HOME's journal was written by an older mcemu for {kind} cluster and cannot "
                         "be replayed exactly: stop that cluster with the mcemu that started it, or use another "
                         "MCEMU_HOME")


def message(e: BaseException) -> str:
    """One line for a configuration error (a KeyError's text is its key, quoted)."""
    if type(e) is KeyError and e.args:
        return str(e.args[0])
    return str(e)


def stack_config(cfg: dict):
    """The policy stack (``scheduler.stack.StackConfig``) of a resolved configuration; every
    node starts out of service (a node is in service once it has registered)."""
    from scheduler.stack import StackConfig  # lazy: see SETTINGS
    from scheduler.topology import parse_topology

    topo = parse_topology(cfg["topology"])
    return StackConfig.from_options(topology=topo, allocator=cfg["allocator"], scheduler=cfg["scheduler"],
                                    reduction=cfg["reduction"], gang=cfg["gang"], params=cfg["params"],
                                    down=tuple(range(topo.size)), driver="live")


__all__ = ["COMMANDS", "DAEMON", "DEFAULTS", "FORMAT", "INTERCONNECT", "LAUNCHER", "NETWORKS", "NODE", "POLICY",
           "POLICY_KEYS", "PROCESS", "SCHEMA", "SETTINGS", "Schema", "Setting", "TUNABLE", "TUNABLE_KEYS",
           "add_arguments", "argv", "check_format", "check_process", "default", "given", "known", "message",
           "node_keywords", "resolve", "stack_config", "values"]
