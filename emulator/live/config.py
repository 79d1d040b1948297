"""The live cluster's settings: defaults, what the journal says, what the command line asks.

A cluster keeps its configuration in its journal (``meta.config``), so that a daemon started
again on the same MCEMU_HOME continues with the same policies. The keys:

==============  =================================================================================
topology        ``hypercube:N`` or ``mesh:WxH``
allocator       allocator name
scheduler       the discipline (default lazy); None under a gang policy
reduction       size reduction (``rsr:T``, ``limit:K``) or None
gang            gang policy name or None (``--gang none`` is None)
params          ``--param KEY=VALUE`` of the discipline or of the gang policy, parsed by
                ``scheduler.stack.parse_params`` (the simulator's parser too); ``--mpl M`` is
                ``params["mpl"]``
time_unit       wall-clock seconds per model time unit
heartbeat       seconds between heartbeats; ``liveness`` missed ones make a node down
max_requeue     node faults a job survives by being requeued
network         None, or ``wormhole``: tasks exchange messages through the interconnect
                (emulator.live.interconnect), timed by scheduler.network.wormhole
net_dilation    wall microseconds per network microsecond (the network runs dilated)
==============  =================================================================================

``resolve(journal_config, given)`` is the one merge: the daemon calls it when it starts and
``mcemu up`` calls it before it starts anything, so a bad setting is refused in one line with
no process left behind. ``stack_config(cfg)`` turns a resolved configuration into the
``scheduler.stack`` configuration the daemon builds its policy from.
"""
from __future__ import annotations

from scheduler.stack import (DEFAULT_ALLOCATOR, DEFAULT_DISCIPLINE, DEFAULT_TOPOLOGY, StackConfig,
                             parse_params)
from scheduler.topology import parse_topology

DEFAULTS = {"topology": DEFAULT_TOPOLOGY, "allocator": DEFAULT_ALLOCATOR, "scheduler": None, "reduction": None,
            "gang": None, "params": {}, "time_unit": 1.0, "heartbeat": 0.2, "liveness": 3, "max_requeue": 1,
            "network": None, "net_dilation": 1000.0}
NETWORKS = ("wormhole",)
# what a journal fixes: a restarted daemon asked for other values refuses to start
POLICY_KEYS = ("topology", "allocator", "scheduler", "reduction", "gang", "params", "time_unit", "network",
               "net_dilation")
# what a restarted daemon may change
TUNABLE = ("heartbeat", "liveness", "max_requeue")
# The journal's format: 2 since gang rows are quarantined and a node coming back calls the
# policy's retry (a gang journal of format 1 would not replay to the same placements); 3 since
# a discipline holds the jobs that down nodes keep from fitting and schedules at a node's
# failure (a discipline journal of format 1-2 with a node down would replay differently).
FORMAT = 3
_UNSET = object()


def given(*, topology=None, allocator=None, scheduler=None, reduction=None, gang=None, params=(), mpl=None,
          time_unit=None, heartbeat=None, liveness=None, max_requeue=None, network=None, net_dilation=None) -> dict:
    """The settings a command line asks for (None: not asked). ``params`` are ``KEY=VALUE``
    strings; a bad one raises ``scheduler.stack.StackError`` (a ValueError)."""
    p = parse_params(params) if params else {}
    if mpl is not None:
        if gang in (None, "none"):
            raise ValueError("--mpl needs --gang (it is the number of rows of the gang's Ousterhout matrix)")
        if p.get("mpl", mpl) != mpl:
            raise ValueError(f"--mpl {mpl} and --param mpl={p['mpl']} disagree")
        p["mpl"] = mpl
    return {"topology": topology, "allocator": allocator, "scheduler": scheduler, "reduction": reduction,
            "gang": gang, "params": p or None, "time_unit": time_unit, "heartbeat": heartbeat,
            "liveness": liveness, "max_requeue": max_requeue, "network": network, "net_dilation": net_dilation}


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


def resolve(journal: dict | None, asked: dict) -> dict:
    """The configuration to run with: the journal's (only ``TUNABLE`` keys may change, any
    other difference is a ValueError) or, for a new cluster, ``asked`` over the defaults."""
    asked = {k: v for k, v in asked.items() if v is not None}
    for k in ("gang", "reduction", "network"):
        if asked.get(k) == "none":
            asked[k] = None
    if journal:
        cfg = {**DEFAULTS, **_legacy(journal)}
        clash = {k: cfg.get(k) for k, v in asked.items() if k in POLICY_KEYS and k != "params" and cfg.get(k) != v}
        old = cfg.get("params") or {}
        clash.update({f"--param {k}": old.get(k, "(not set)") for k, v in (asked.get("params") or {}).items()
                      if old.get(k, _UNSET) != v})
        if clash:
            raise ValueError("this MCEMU_HOME's journal was started with "
                             + ", ".join(f"{k}={old!r}" for k, old in clash.items())
                             + "; use another MCEMU_HOME or the same settings")
        cfg.update({k: v for k, v in asked.items() if k in TUNABLE})
    else:
        cfg = {**DEFAULTS, **asked}
        if cfg["gang"] is None and cfg["scheduler"] is None:
            cfg["scheduler"] = DEFAULT_DISCIPLINE["live"]
    cfg["params"] = dict(cfg["params"] or {})
    if not float(cfg["time_unit"]) > 0:
        raise ValueError(f"--time-unit must be > 0, got {cfg['time_unit']}")
    # the bounds of the protocol's welcome: outside them every node would refuse to register
    if not 0.001 <= float(cfg["heartbeat"]) <= 3600 or not 1 <= int(cfg["liveness"]) <= 1000:
        raise ValueError(f"--heartbeat must be within 0.001-3600 s and --liveness within 1-1000, got "
                         f"{cfg['heartbeat']} and {cfg['liveness']}")
    if cfg["network"] not in (None, *NETWORKS):
        raise ValueError(f"--network must be one of {', '.join(NETWORKS)} or none, got {cfg['network']!r}")
    d = cfg["net_dilation"]
    if isinstance(d, bool) or not isinstance(d, (int, float)) or not 1 <= d <= 1e9:
        raise ValueError(f"--net-dilation must be a number of wall microseconds per network microsecond "
                         f"within 1-1e9, got {d!r}")
    cfg["net_dilation"] = float(d)
    if not 0 <= int(cfg["max_requeue"]) <= 1000:
        raise ValueError(f"--max-requeue must be within 0-1000, got {cfg['max_requeue']}")
    return cfg


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


def stack_config(cfg: dict) -> StackConfig:
    """The policy stack of a resolved configuration; every node starts out of service (a node
    is in service once it has registered)."""
    topo = parse_topology(cfg["topology"])
    return StackConfig.from_options(topology=topo, allocator=cfg["allocator"], scheduler=cfg["scheduler"],
                                    reduction=cfg["reduction"], gang=cfg["gang"], params=cfg["params"],
                                    down=tuple(range(topo.size)), driver="live")


__all__ = ["DEFAULTS", "FORMAT", "POLICY_KEYS", "TUNABLE", "check_format", "given", "message", "resolve",
           "stack_config"]
