"""A program's trace replayed in the simulator: the chapter-6 placement question asked of a real
program (``mcemu net replay``).

Each rank of a :class:`~scheduler.network.trace.Trace` replays its events on its node of a
placement: it computes for the recorded intervals, injects each send into the wormhole model
at its clock as a worm of ``1 + ceil(nbytes / flit_bytes)`` flits, and a wait completes when
every message and delivery notice it lists is delivered (clock = max(clock, latest due)), or
after its timeout when it lists none. The times of the waits are the model's, not the
recorded ones: on other nodes, or next to other traffic, the program's messages contend
differently and its ranks end at other times. On the recorded placement the replay gives the
recorded dues and end clocks again (the live interconnect runs the same model on the same
clock: to float rounding, and to the order of sends at exactly the same instant).

**Conservative order.** The model is only ever advanced to just before the smallest clock of
a rank that can still act (a send at time t is ordered before the network's events at t, as
:class:`~scheduler.network.wormhole.Wormhole` orders a reply), so no rank sends into the
model's past; a delivery is known as soon as it is certain (its header has arrived), which
may wake a waiting rank at its due time. The one network driver (scheduler/network/driver.py)
maps the trace's seconds to flit times (``Clock.virtual(1e6 / flit_time_us)``), injects and
counts the messages as the live interconnect's does (emulator.live.ic_virtual). The replay calls
the model's own ``advance`` rather than the driver's, which runs on to a time in one go: here
the model must stop at the first delivery that wakes a rank, whose reply is due then (the
live side's emulator.live.vtime runs the model the same way).

**Other traffic** (``background``): closed-loop paths (scheduler.network.traffic, the loop of
``mcemu net simulate``, messages of the network's L flits) that start with the program and
keep sending until its last rank ends.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from heapq import heappop, heappush

from scheduler.network.driver import Clock, NetworkDriver, send_order
from scheduler.network.stats import MessageStats
from scheduler.network.trace import Trace, TraceError
from scheduler.network.traffic import Path, PathLoop
from scheduler.network.wormhole import INF, Wormhole
from scheduler.topology import Topology, parse_topology

_PROGRAM, _BACKGROUND = 0, 1  # first field of a tag: whose message


@dataclass
class ReplayResult:
    """What :func:`replay` found. Times in the trace's seconds, delays in microseconds."""

    placement: tuple[int, ...]
    ends: list[float]  # each rank's end clock
    elapsed: float  # the job's: the last rank's end
    messages: list[dict]  # per message: src, dst, seq, bytes, flits, hops, sent, due, delay_us
    summary: dict  # MessageStats.summary of the program's messages (count, mean, p95, contention ...)
    recorded: dict | None = None  # on the recorded placement: largest relative differences
    background: dict | None = None  # the other traffic's MessageStats.summary
    stats: MessageStats = field(default_factory=MessageStats, repr=False)  # flit times


class _Rank:
    __slots__ = ("id", "events", "i", "clock", "waiting", "keys", "end", "nsent")

    def __init__(self, rank: int, events: tuple, start: float):
        self.id, self.events, self.i, self.clock = rank, events, 0, start
        self.waiting: set | None = None  # the messages/notices a blocked wait still needs
        self.keys: list = []  # every message/notice of the wait in progress
        self.end: float | None = None
        self.nsent = 0  # its sends so far: the tie key of the next, as on the live interconnect


class _Replay:
    """One replay (module docstring); :meth:`run` returns the :class:`ReplayResult`."""

    def __init__(self, trace: Trace, topology: Topology, placement: tuple, background, seed: int, length: int):
        self.trace, self.placement = trace, placement
        self.net = Wormhole(topology, flit_time=trace.flit_time_us, length=length, startup=trace.startup_flits)
        self.driver = NetworkDriver(self.net, Clock.virtual(1e6 / trace.flit_time_us))
        self.clock = self.driver.clock
        self.t0 = trace.vt0  # clocks run from the job's start on the live clock: the same rounding
        self.ranks = [_Rank(r, ev, self.t0) for r, ev in enumerate(trace.events)]
        self.ready: list = [(self.t0, r) for r in range(trace.size)]  # (clock, rank) of ranks that can act
        self.dues: dict = {}  # (src, dst, seq) -> due (seconds)
        self.sent: dict = {}  # (src, dst, seq) -> (bytes, flits)
        self.messages: list[dict] = []
        self.stats = MessageStats()
        self.loops = [PathLoop(p, i, seed, p.mtbs / trace.flit_time_us) for i, p in enumerate(background)]
        self.routes = [self.net.channels.route(p.src, p.dst) for p in background]
        self.running = trace.size
        self.in_flight = 0  # the program's messages in the model

    def run(self) -> ReplayResult:
        for pid, loop in enumerate(self.loops):
            self.net.inject(self.routes[pid], loop.first(0.0), (_BACKGROUND, pid))
        while self.running:
            if self.ready:
                t, r = self.ready[0]
                if self._network_to(self.clock.before(t)):
                    continue  # a delivery woke a rank: it may now be the earliest
                heappop(self.ready)
                self._step(self.ranks[r])
            elif self.in_flight:  # every rank waits: the model runs to its next deliveries
                self._network_to(INF)
            else:
                raise TraceError(self._deadlock())
        return self._result()

    def _network_to(self, until: float) -> bool:
        """Advance the model to flit time ``until`` or to its next deliveries; True when a
        delivery made a waiting rank ready."""
        woke = False
        while True:
            got = self.net.advance(until)
            for d in got:
                woke |= self._delivered(d)
            if woke or not got or until == INF:
                return woke

    def _delivered(self, d) -> bool:
        kind, *key = d.tag
        if kind == _BACKGROUND:
            pid = key[0]
            delay = d.delivered - d.sent
            nxt = self.loops[pid].on_delivery(d.delivered, delay, delay - self.driver.free(d.hops),
                                              d.first - d.sent - self.net.startup)
            if nxt is not None and self.running:
                self.net.inject(self.routes[pid], nxt, d.tag)
            return False
        key = tuple(key)
        self.in_flight -= 1
        due = self.clock.time(d.delivered)
        self.dues[key] = due
        nbytes, flits = self.sent[key]
        self.driver.record(self.stats, d, True, flits)
        self.messages.append({"src": key[0], "dst": key[1], "seq": key[2], "bytes": nbytes, "flits": flits,
                              "hops": d.hops, "sent": self.clock.time(d.sent) - self.t0, "due": due - self.t0,
                              "delay_us": self.net.us(d.delivered - d.sent)})
        woke = False
        for r in {key[0], key[1]}:
            rank = self.ranks[r]
            if rank.waiting and key in rank.waiting:
                rank.waiting.discard(key)
                if not rank.waiting:
                    self._wait_done(rank)
                    woke = True
        return woke

    def _step(self, rank: _Rank) -> None:
        """Run ``rank``'s events until its clock moves (it goes back to the ready heap), it
        blocks in a wait, or it ends."""
        me, nodes, trace = rank.id, self.placement, self.trace
        while True:
            ev = rank.events[rank.i]
            rank.i += 1
            kind = ev[0]
            if kind == "c":
                rank.clock += ev[1]
                break
            if kind == "s":
                dest, nbytes, seq = ev[1], ev[2], ev[3]
                flits = trace.flits(nbytes)
                self.sent[(me, dest, seq)] = (nbytes, flits)
                self.in_flight += 1
                self.driver.send(nodes[me], nodes[dest], rank.clock, (_PROGRAM, me, dest, seq), flits,
                                 send_order(me, rank.nsent))
                rank.nsent += 1
                continue
            if kind == "e":
                rank.end = rank.clock
                self.running -= 1
                return
            rank.keys = [(src, me, seq) for src, seq, _ in ev[2]] + [(me, dst, seq) for dst, seq, _ in ev[3]]
            if not rank.keys:
                rank.clock += ev[1] or 0.0
                break
            rank.waiting = {k for k in rank.keys if k not in self.dues}
            if rank.waiting:
                return  # blocked: a delivery wakes it (_delivered)
            self._wait_done(rank, push=False)
            break
        heappush(self.ready, (rank.clock, me))

    def _wait_done(self, rank: _Rank, push: bool = True) -> None:
        rank.waiting = None
        rank.clock = max(rank.clock, max(self.dues[k] for k in rank.keys))
        if push:
            heappush(self.ready, (rank.clock, rank.id))

    def _deadlock(self) -> str:
        blocked = [f"rank {r.id} waits for " + ", ".join(f"message {s} from rank {a}" if b == r.id
                                                         else f"the delivery of its message {s} to rank {b}"
                                                         for a, b, s in sorted(r.waiting))
                   for r in self.ranks if r.waiting]
        return "the trace deadlocks on replay: " + "; ".join(blocked)

    def _result(self) -> ReplayResult:
        ends = [r.end - self.t0 for r in self.ranks]
        bg = None
        if self.loops:
            agg = MessageStats()
            for loop in self.loops:
                agg.delays += loop.delays
                agg.contention += loop.contention
                agg.delivered += loop.delivered
            bg = {"paths": len(self.loops), **agg.summary(self.net.us)}
        return ReplayResult(self.placement, ends, max(ends), self.messages, self.stats.summary(self.net.us),
                            background=bg, stats=self.stats)


def replay(trace: Trace, topology: Topology | str, placement=None, *, background=(), seed: int = 0,
           length: int = 500) -> ReplayResult:
    """Replay ``trace`` on ``topology`` with rank i on ``placement[i]`` (default the recorded
    nodes), next to the closed-loop ``background`` paths (:class:`~scheduler.network.traffic.Path`,
    their MTBS in microseconds, messages of ``length`` flits; ``seed`` seeds their computation
    phases). On the recorded placement of the recorded topology, ``recorded`` holds the largest
    relative differences between the replayed and the recorded dues and end clocks."""
    topo = parse_topology(topology)
    placement = tuple(trace.nodes if placement is None else placement)
    check_placement(placement, trace.size, topo)
    for p in background:
        if p.src in placement or p.dst in placement:
            raise TraceError(f"other traffic on node {p.src if p.src in placement else p.dst}, "
                             f"one of the program's")
    res = _Replay(trace, topo, placement, list(background), seed, length).run()
    if placement == trace.nodes and str(topo) == trace.topology:
        res.recorded = compare(trace, res)
    return res


def check_placement(placement: tuple, size: int, topology: Topology) -> None:
    if len(placement) != size:
        raise TraceError(f"a placement of {len(placement)} nodes for a trace of {size} ranks")
    if len(set(placement)) != size:
        raise TraceError(f"the placement names a node twice: {list(placement)}")
    bad = [n for n in placement if not (isinstance(n, int) and 0 <= n < topology.size)]
    if bad:
        raise TraceError(f"node(s) {bad} are not in {topology} (0..{topology.size - 1})")


def compare(trace: Trace, res: ReplayResult) -> dict:
    """The largest relative differences between the recorded and the replayed times: the end
    clocks, the dues of the messages the waits listed, and both."""
    def rel(rec: float, new: float) -> float:
        return abs(new - rec) / abs(rec) if rec else (0.0 if new == rec else INF)

    ends = max((rel(a, b) for a, b in zip(trace.ends(), res.ends)), default=0.0)
    dues = {(m["src"], m["dst"], m["seq"]): m["due"] for m in res.messages}
    worst = 0.0
    for r, events in enumerate(trace.events):
        for ev in events:
            if ev[0] == "w":
                for src, seq, due in ev[2]:
                    worst = max(worst, rel(due, dues[(src, r, seq)]))
                for dst, seq, due in ev[3]:
                    worst = max(worst, rel(due, dues[(r, dst, seq)]))
    return {"ends": ends, "dues": worst, "max": max(ends, worst)}


# ---------------------------------------------------------------------- placements


def contiguous(trace: Trace, topology: Topology | str) -> tuple[int, ...]:
    """The recorded nodes on the recorded topology; elsewhere the first free submesh (Zhu's
    first fit) or subcube (the buddy system) of the trace's logical shape, ranks in row-major
    (increasing address) order as the daemon numbers them."""
    from scheduler import allocators
    from scheduler.comm_profile import logical_shape
    from scheduler.topology import Request, ceil_log2

    topo = parse_topology(topology)
    if str(topo) == trace.topology:
        return tuple(trace.nodes)
    if topo.kind == "mesh":
        w, h = _recorded_shape(trace) or logical_shape(Request.processors(trace.size), topo)
        alloc = allocators.create("first-fit", topo).allocate(Request.submesh(w, h))
    else:
        alloc = allocators.create("buddy", topo).allocate(Request.cube(ceil_log2(trace.size)))
    if alloc is None:  # pragma: no cover - an empty machine fits any request that normalizes
        raise TraceError(f"no contiguous place for {trace.size} ranks in {topo}")
    return tuple(alloc.ranks[:trace.size])


def _recorded_shape(trace: Trace) -> tuple[int, int] | None:
    """The W x H submesh the recorded nodes formed, if they formed one."""
    topo = parse_topology(trace.topology)
    if topo.kind != "mesh":
        return None
    xs, ys = zip(*(topo.xy(n) for n in trace.nodes))
    w, h = max(xs) - min(xs) + 1, max(ys) - min(ys) + 1
    return (w, h) if w * h == trace.size else None


def scattered(trace: Trace, topology: Topology | str, seed: int = 0) -> tuple[int, ...]:
    """A seeded random set of distinct nodes, one per rank."""
    topo = parse_topology(topology)
    if trace.size > topo.size:
        raise TraceError(f"{trace.size} ranks do not fit in {topo} ({topo.size} nodes)")
    return tuple(random.Random(seed).sample(range(topo.size), trace.size))


def place(how: str, trace: Trace, topology: Topology | str, seed: int = 0) -> tuple[int, ...]:
    """``contiguous``, ``scattered`` (seeded) or a JSON file listing one node per rank (ids, or
    ``[x, y]`` on a mesh; a list or ``{"nodes": [...]}``)."""
    import json

    topo = parse_topology(topology)
    if how == "contiguous":
        return contiguous(trace, topo)
    if how == "scattered":
        return scattered(trace, topo, seed)
    try:
        with open(how) as f:
            doc = json.load(f)
    except OSError as e:
        raise TraceError(f"placement: contiguous, scattered or a JSON file of node ids: {e}") from None
    except ValueError as e:
        raise TraceError(f"placement {how}: not JSON: {e}") from None
    nodes = doc.get("nodes") if isinstance(doc, dict) else doc
    if not isinstance(nodes, list):
        raise TraceError(f"placement {how}: a JSON list of node ids, one per rank")
    try:
        return tuple(topo.node(*n) if isinstance(n, list) and topo.kind == "mesh" else n for n in nodes)
    except (TypeError, ValueError) as e:
        raise TraceError(f"placement {how}: {e}") from None


def background(spec: str, topology: Topology | str, used, index: int = 0) -> list[Path]:
    """Other traffic: ``PATTERN[:MTBS]`` (microseconds) on the nodes not in ``used``
    (:func:`free_paths`), or a job as ``mcemu net simulate --job`` writes it
    (``PATTERN:SHAPE@PLACE[:mtbs=US]``, scheduler.network.layout)."""
    from scheduler.network.layout import parse_job

    if "@" in spec:
        return parse_job(spec, topology, index).paths
    pattern, _, mtbs = spec.partition(":")
    try:
        mtbs_us = float(mtbs or 0.0)
    except ValueError:
        raise TraceError(f"background {spec!r}: PATTERN[:MTBS] (MTBS in microseconds)") from None
    if not 0 <= mtbs_us < INF:
        raise TraceError(f"background {spec!r}: MTBS must be microseconds >= 0")
    return free_paths(pattern, mtbs_us, topology, used, name=f"background{index}")


def free_paths(pattern: str, mtbs: float, topology: Topology | str, used, name: str = "background") -> list[Path]:
    """Pattern ``pattern`` on the nodes not in ``used`` (in increasing id order): as a row of
    them, or, for a pattern that needs a square job, on the largest square of them."""
    from scheduler.network.patterns import pattern_pairs
    from scheduler.network.wormhole import NetworkError

    topo = parse_topology(topology)
    free = [n for n in range(topo.size) if n not in set(used)]
    try:
        pairs = pattern_pairs(pattern, len(free), 1)
    except NetworkError:
        k = math.isqrt(len(free))
        pairs = pattern_pairs(pattern, k, k)
    return [Path(free[s], free[d], float(mtbs), name) for s, d in pairs]


__all__ = ["ReplayResult", "background", "check_placement", "compare", "contiguous", "free_paths", "place", "replay",
           "scattered"]
