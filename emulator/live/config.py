"""The live cluster's settings: ONE declaration per ``mcemu up`` setting (``SETTINGS``, in
emulator.live.settings), and everything derived from it.

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

How to add a setting: append one ``Setting`` to ``SETTINGS`` (emulator/live/settings.py), e.g.::

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

from emulator.live.settings import (  # noqa: F401  (the declaration; importers use this module)
    COMMANDS, CPU_CLOCKS, DAEMON, INTERCONNECT, LAUNCHER, NET_TIMES, NETWORKS, NODE, POLICY, PROCESS, SETTINGS,
    TUNABLE, Setting)

# The journal's format: 2 since gang rows are quarantined and a node coming back calls the
# policy's retry (a gang journal of format 1 would not replay to the same placements); 3 since
# a discipline holds the jobs that down nodes keep from fitting and schedules at a node's
# failure (a discipline journal of format 1-2 with a node down would replay differently).
FORMAT = 3
_UNSET = object()


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
