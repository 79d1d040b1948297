"""Traffic sources: paths that send, wait for delivery, compute, and send again.

Dissertation §3.1 and eq. 4.2 (NETWORK.md 1.2 item 9): the unit of traffic is a *path*, an
ordered (source, destination) pair with its own MTBS (mean time between sending). Each path
runs the closed loop ``send -> wait until the tail is delivered -> compute Exp(MTBS) ->
send``, so a path has at most one message in the network and its rate is
``1 / (MTBS + D)``. MTBS 0 sends back to back. Several paths from one node run independent
loops (NETWORK.md 8.22).

Our choices: a path's first message goes out after one computation phase (a random phase;
at MTBS 0 at once, as the text's stair analysis assumes), and each path draws its
computation times from a stream of its own, seeded by ``(seed, path id)``, so adding a job
does not change another job's draws. A path may stop after ``iterations`` messages (jobs
that communicate, an extension of ours: NETWORK.md 3.3).

The loop of one path is :class:`PathLoop` (its stream, its counts, its measured messages);
:class:`Traffic` runs many on the model, the live pattern task (nodes.pattern) runs its rank's
on the interconnect with the same seeds. A message's contention is its delay less the
contention-free latency ``k_0 + hops + L - 1`` (:meth:`NetworkDriver.free`).
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass

from scheduler.network.driver import NetworkDriver
from scheduler.network.stats import MessageStats
from scheduler.network.wormhole import INF, Delivery, NetworkError


@dataclass(frozen=True, slots=True)
class Path:
    """A (source, destination) pair with its MTBS in microseconds; ``job`` names its owner."""

    src: int
    dst: int
    mtbs: float
    job: object = None

    def __post_init__(self):
        if not (isinstance(self.mtbs, (int, float)) and self.mtbs >= 0 and math.isfinite(self.mtbs)):
            raise NetworkError(f"MTBS must be a finite number of microseconds >= 0, got {self.mtbs!r}")
        if self.src == self.dst:
            raise NetworkError(f"a path needs two different nodes, got {self.src} -> {self.dst}")


class PathLoop(MessageStats):
    """One path's closed loop (module docstring): its stream of computation times (seeded by
    ``(seed, stream)``), its sends and its deliveries, counted after ``warmup`` of them (of
    ``measure`` at most; None: all). ``think`` is the mean computation time in the caller's
    unit (flit times in the model, wall seconds in the live pattern task, nodes.pattern).
    ``limit``: the path stops after that many messages (None: when told, :meth:`stop`; INF
    then)."""

    __slots__ = ("path", "src", "dst", "rate", "rng", "draw", "sent", "limit", "active", "warmup", "measure")

    def __init__(self, path: Path, stream: int, seed: int, think: float, limit: int | None = None,
                 warmup: int = 0, measure: int | None = None):
        super().__init__()
        self.path, self.src, self.dst = path, path.src, path.dst
        self.rate = 1.0 / think if think > 0 else 0.0
        self.rng = random.Random(seed * 1_000_003 + stream)
        self.draw = self.rng.expovariate
        self.sent = 0
        self.limit = INF if limit is None else limit
        self.warmup = warmup
        self.measure = INF if measure is None else warmup + measure
        self.active = True

    def pause(self) -> float:
        """One computation phase: Exp(MTBS), or nothing at MTBS 0."""
        return self.draw(self.rate) if self.rate else 0.0

    def first(self, start: float) -> float:
        """The path starts at ``start``: the time of its first send (after one phase)."""
        self.sent += 1
        return start + self.pause()

    def on_delivery(self, at: float, delay: float, contention: float, starting: float) -> float | None:
        """A message of the path was delivered at ``at``: counted (kept when measured); the time
        of the next send, or None when the path stops (its last message, or it was stopped)."""
        self.delivered += 1
        self.last = at
        if self.warmup < self.delivered <= self.measure:
            self.delays.append(delay)
            self.contention += contention
            self.starting += starting
        if self.delivered >= self.limit:
            self.active = False
            return None
        if not self.active:
            return None
        self.sent += 1
        return at + (self.draw(self.rate) if self.rate else 0.0)

    def measured_send(self) -> bool:
        """Whether the message the path sends next is one of those measured."""
        return self.warmup < self.sent <= self.measure

    def stop(self) -> None:
        """No more messages (one in flight still arrives)."""
        self.active = False


class Traffic:
    """Closed-loop sources on a driver's model (:class:`~scheduler.network.driver.NetworkDriver`).
    Times in flit times, the model's own: the loop calls the model directly.
    ``warmup``: each path's first that many deliveries are not kept for its statistics."""

    def __init__(self, driver: NetworkDriver, seed: int = 0, warmup: int = 0):
        if not (isinstance(warmup, int) and warmup >= 0):
            raise NetworkError(f"warm-up must be a number of messages >= 0, got {warmup!r}")
        self.driver = driver
        self.net = driver.net
        self.seed = seed
        self.warmup = warmup
        self.sources: list[PathLoop] = []
        self.routes: list[tuple] = []  # path id -> its channels
        self.finished: list[int] = []  # path ids that did all their iterations, in order

    def add(self, path: Path, at: float | None = None, iterations: int | None = None) -> int:
        """Start ``path`` at ``at`` (default now); returns its id. ``iterations``: stop after
        that many messages (None: forever)."""
        if iterations is not None and not (isinstance(iterations, int) and iterations >= 1):
            raise NetworkError(f"iterations must be a positive integer, got {iterations!r}")
        net = self.net
        try:  # a node outside the machine fails here, not later
            route = net.channels.route(path.src, path.dst)
        except (ValueError, TypeError) as e:
            raise NetworkError(str(e)) from None
        pid = len(self.sources)
        s = PathLoop(path, pid, self.seed, path.mtbs / net.flit_time, iterations, self.warmup)
        self.sources.append(s)
        self.routes.append(route)
        net.send(s.src, s.dst, s.first(net.now if at is None else at), pid)
        return pid

    def stop(self, pid: int) -> None:
        """No more messages from path ``pid`` (one in flight still arrives)."""
        self.sources[pid].stop()

    def advance(self, until: float = INF) -> list[Delivery]:
        """Advance the network to ``until`` (or to the first batch of deliveries) and answer
        every delivery with the path's next message; returns the deliveries."""
        net = self.net
        got = net.advance(until)
        L1, k0 = net.length - 1, net.startup
        sources, routes, inject, on_delivery = self.sources, self.routes, net.inject, PathLoop.on_delivery
        for pid, sent, at, hops, first in got:
            s = sources[pid]
            delay = at - sent
            nxt = on_delivery(s, at, delay, delay - hops - L1 - k0, first - sent - k0)
            if nxt is not None:
                inject(routes[pid], nxt, pid)
            elif s.delivered == s.limit:
                self.finished.append(pid)
        return got


@dataclass(frozen=True, slots=True)
class PathStats:
    """One path's measured messages, in microseconds."""

    path: Path
    messages: int
    hops: int
    mean: float
    p95: float
    contention: float  # mean of (delay - contention-free latency)
    p95_contention: float
    starting: float  # mean wait for the first channel (the rest of the contention is intermediate)


def path_stats(traffic: Traffic, pid: int) -> PathStats:
    s = traffic.sources[pid]
    net = traffic.net
    us = net.us
    n = s.count
    hops = len(net.channels.route(s.src, s.dst))
    base = traffic.driver.free(hops)
    if not n:
        return PathStats(s.path, 0, hops, math.nan, math.nan, math.nan, math.nan, math.nan)
    p95 = s.p95()
    # delays are differences of float send times: Wormhole.us rounds away the last bits, so
    # that a path without contention shows 0, not -5e-15
    return PathStats(s.path, n, hops, us(s.mean()), us(p95), us(s.contention / n), us(p95 - base),
                     us(s.starting / n))


__all__ = ["Path", "PathLoop", "PathStats", "Traffic", "path_stats"]
