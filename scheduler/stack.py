"""The one stack builder: configuration strings in, a ready policy object out.

Every driver (``mcemu simulate``, ``mcemu up``, the experiments, the gang simulator, the
tests) builds its policies here, so a run configured with the same strings behaves the same
everywhere:

    allocator -> quarantine -> size reduction -> discipline
    allocator -> quarantine (one per row)      -> gang policy (registration office)

The quarantine (scheduler.quarantine) keeps nodes that are out of service out of every
allocation; in a simulation no node is ever down and it changes nothing. This module is also
the only ``--param KEY=VALUE`` parser and the only place the front ends' defaults live
(topology, allocator, discipline); a policy's own parameters default in its constructor.

    from scheduler.stack import StackConfig, build
    stack = build(StackConfig("hypercube:6", "buddy", "lazy", params={"threshold": 20}))
    stack.policy.arrive(job, 0.0)      # -> [Start, ...]
    stack.mark_down(5, now)            # node 5 is out of service; jobs that cannot fit
                                       # without it are held (policy.held()) -> decisions
    stack.mark_up(5, now)              # -> decisions: it is back, held and waiting jobs are tried
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field, replace
from typing import Mapping

from scheduler import allocators, disciplines, gang, reduction
from scheduler.quarantine import DownSet, Quarantine, held_reason
from scheduler.topology import parse_topology

# The defaults of every front end. The live cluster's discipline is lazy (DESIGN "Command
# line": mcemu up); the simulator's is FCFS, the papers' baseline that every other
# discipline is compared with.
DEFAULT_TOPOLOGY = "hypercube:4"
DEFAULT_DISCIPLINE = {"live": "lazy", "simulate": "fcfs"}
# A driver's defaults for a policy's parameters, under what the user gives. The live
# cluster's lazy checks its starvation threshold at every event and on a timer: the papers
# check it only when a job leaves (the simulator's default, scheduler.disciplines.lazy gap
# 4), which on a cluster with idle nodes and no job about to leave keeps jobs waiting that
# whoever watches it expects to run (issue 19's stall case: 1-node jobs behind a 2-cube the
# down nodes keep out). ``mcemu up --param threshold_check=release`` runs the papers' reading.
DEFAULT_PARAMS = {"live": {"lazy": {"threshold_check": "event"}}}

_TRUE = ("true", "yes", "on")
_FALSE = ("false", "no", "off")
_NONE = ("none", "null")


class StackError(ValueError):
    """A configuration that cannot be built: an unknown name, a bad parameter, a clash."""


def parse_value(text: str):
    """One ``--param`` value: true/false/yes/no/on/off, none/null, an integer, a float
    (``inf``, ``1e3``), a JSON list or object (``[[1,1],[3,8]]``, ``inf`` allowed inside), or
    else the text itself."""
    v = text.strip()
    low = v.lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    if low in _NONE:
        return None
    try:
        return int(v)
    except ValueError:
        pass
    try:
        return float(v)
    except ValueError:
        pass
    if v[:1] in "[{":
        try:
            return json.loads(v, parse_constant=_constant)
        except ValueError:
            try:  # inf / -inf inside a list: JSON spells them Infinity
                return json.loads(_json_inf(v), parse_constant=_constant)
            except ValueError:
                raise StackError(f"--param value {text!r} is not a valid list or object") from None
    return v


def _constant(name: str) -> float:
    return {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}[name]


def _json_inf(v: str) -> str:
    return re.sub(r"(?<![\w\"])(-?)inf(inity)?(?![\w\"])", lambda m: m.group(1) + "Infinity", v,
                  flags=re.IGNORECASE)


def parse_params(items, what: str = "--param") -> dict:
    """``["KEY=VALUE", ...]`` (repeatable ``--param``; the options of a ``--job`` or ``--comm``
    spec, ``what`` naming them in errors) -> dict; ``-`` in a key reads as ``_``."""
    out = {}
    for item in items or ():
        if not isinstance(item, str):
            raise StackError(f"{what} must be KEY=VALUE, got {item!r}")
        k, eq, v = item.partition("=")
        k = k.strip().replace("-", "_")
        if not eq or not k.isidentifier():
            raise StackError(f"{what} must be KEY=VALUE, got {item!r}")
        if k in out:
            raise StackError(f"{what} {k} is given twice")
        out[k] = parse_value(v)
    return out


@dataclass(frozen=True)
class StackConfig:
    """What a run is configured with. ``scheduler`` is the discipline (refused with ``gang``);
    ``params`` go to the discipline or, with ``gang``, to the gang policy (``mpl`` among
    them); ``down`` are nodes out of service from the start.

    ``gang="none"`` here builds the registered gang policy ``none`` (space sharing through the
    registration office, MPL 1: the gang experiments' baseline); on the command line
    ``--gang none`` means no gang policy at all, which :meth:`from_options` maps to None."""

    topology: object = DEFAULT_TOPOLOGY
    allocator: str | None = None  # None: the topology's (scheduler.allocators.DEFAULTS)
    scheduler: str | None = None
    reduction: str | None = None
    gang: str | None = None
    params: Mapping = field(default_factory=dict)
    down: tuple = ()
    driver: str = "simulate"  # whose default discipline applies: "simulate" or "live"

    @classmethod
    def from_options(cls, *, gang=None, reduction=None, params=(), **kw) -> "StackConfig":
        """From command-line options: ``--gang none`` means no time sharing and ``--reduction
        none`` no reduction (as on every front end), ``params`` as ``KEY=VALUE`` strings or a
        dict."""
        if not isinstance(params, Mapping):
            params = parse_params(params)
        return cls(gang=None if gang in (None, "none") else gang,
                   reduction=None if reduction in (None, "none") else reduction, params=dict(params), **kw)

    @property
    def discipline(self) -> str:
        return self.scheduler or DEFAULT_DISCIPLINE[self.driver]


@dataclass
class Stack:
    """A built stack: ``policy`` is what a driver calls (a discipline or a gang policy)."""

    config: StackConfig
    topology: object
    policy: object
    down: DownSet  # shared by every quarantine of the stack
    gang: bool
    _probe: object = field(default=None, repr=False)  # a gang's quarantine for held(), made on demand

    def mark_down(self, node: int, now: float | None = None) -> list:
        """Node ``node`` is out of service: no new allocation includes it. The jobs running
        there are the driver's business (the daemon requeues them). Given ``now``, a
        discipline sorts its waiting jobs out at once: those that cannot be allocated while
        the node is out are held (scheduler.disciplines.base), and a pass runs (a blocked head
        or lazy's priority job held lets the others start); its decisions."""
        self.topology.check_node(node)
        self.down.add(node)
        if now is None or self.gang:
            return []
        return self.policy.retry(now)

    def held(self, waiting=()) -> dict:
        """Waiting jobs that cannot be allocated while the down nodes are out: id -> reason.
        A discipline holds them itself (scheduler.disciplines.base); a gang policy never
        blocks on them (its rows are tried job by job), so for it the jobs ``waiting`` are
        probed against a quarantine of the stack's allocator: the reason is shown all the same."""
        if not self.gang:
            return {jid: reason for jid, (_, reason) in self.policy.held().items()}
        if not self.down:
            return {}
        if self._probe is None:
            self._probe = Quarantine(allocators.create(self.config.allocator, self.topology), self.down)
        return {j.id: held_reason(j.request, self.down) for j in waiting if self._probe.unavailable(j.request)}

    def mark_up(self, node: int, now: float) -> list:
        """Node ``node`` is back: the policy tries its waiting jobs again; its decisions."""
        self.topology.check_node(node)
        self.down.discard(node)
        return self.policy.retry(now)


def build(config: StackConfig) -> Stack:
    topo = parse_topology(config.topology)
    if config.allocator is None:
        config = replace(config, allocator=allocators.default(topo))
    down = DownSet(config.down)
    for n in down:
        topo.check_node(n)
    params = dict(config.params)
    try:
        if config.gang is not None:
            if config.reduction not in (None, "none"):
                raise StackError("--gang does not combine with --reduction (gang rows use the allocator as is)")
            if config.scheduler is not None:
                raise StackError(f"--scheduler {config.scheduler} does not apply with --gang {config.gang}")
            allocators.REGISTRY.get(config.allocator)  # an unknown name: a clear error first
            policy = gang.create(config.gang, topo, config.allocator, down=down, **params)
            return Stack(config, topo, policy, down, True)
        alloc = Quarantine(allocators.create(config.allocator, topo), down)
        chain = reduction.wrap(alloc, config.reduction)
        params = {**DEFAULT_PARAMS.get(config.driver, {}).get(config.discipline, {}), **params}
        policy = disciplines.create(config.discipline, topo, chain, **params)
        return Stack(config, topo, policy, down, False)
    except TypeError as e:  # a keyword (--param) the policy's constructor does not take
        what = f"gang policy {config.gang!r}" if config.gang is not None else f"scheduler {config.discipline!r}"
        raise StackError(f"{what}: {e}") from None


__all__ = ["DEFAULT_DISCIPLINE", "DEFAULT_PARAMS", "DEFAULT_TOPOLOGY", "Stack", "StackConfig",
           "StackError", "build", "parse_params", "parse_value"]
