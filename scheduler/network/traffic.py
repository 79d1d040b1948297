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
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass

from scheduler.network.wormhole import INF, Delivery, NetworkError, Wormhole


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


class _Source:
    __slots__ = ("path", "think", "rng", "sent", "done", "limit", "active", "delays", "contention",
                 "starting", "last")

    def __init__(self, path: Path, think: float, rng: random.Random, limit: int | None):
        self.path, self.think, self.rng, self.limit = path, think, rng, limit
        self.sent = self.done = 0
        self.active = True
        self.delays: list[float] = []  # flit times, of the messages recorded
        self.contention = 0.0
        self.starting = 0.0  # of the recorded messages: waits for the first channel
        self.last = 0.0  # delivery time of the last message


class Traffic:
    """Closed-loop sources on a :class:`Wormhole`. Times in flit times, like the model.
    ``warmup``: each path's first that many deliveries are not kept for its statistics."""

    def __init__(self, net: Wormhole, seed: int = 0, warmup: int = 0):
        if not (isinstance(warmup, int) and warmup >= 0):
            raise NetworkError(f"warm-up must be a number of messages >= 0, got {warmup!r}")
        self.net = net
        self.seed = seed
        self.warmup = warmup
        self.sources: list[_Source] = []
        self.finished: list[int] = []  # path ids that did all their iterations, in order

    def add(self, path: Path, at: float | None = None, iterations: int | None = None) -> int:
        """Start ``path`` at ``at`` (default now); returns its id. ``iterations``: stop after
        that many messages (None: forever)."""
        if iterations is not None and not (isinstance(iterations, int) and iterations >= 1):
            raise NetworkError(f"iterations must be a positive integer, got {iterations!r}")
        net = self.net
        net.channels.route(path.src, path.dst)  # a node outside the machine fails here, not later
        pid = len(self.sources)
        rng = random.Random(self.seed * 1_000_003 + pid)
        s = _Source(path, path.mtbs / net.flit_time, rng, iterations)
        self.sources.append(s)
        start = net.now if at is None else at
        self._send(pid, s, start + self._think(s))
        return pid

    def stop(self, pid: int) -> None:
        """No more messages from path ``pid`` (one in flight still arrives)."""
        self.sources[pid].active = False

    @staticmethod
    def _think(s: _Source) -> float:
        return s.rng.expovariate(1.0 / s.think) if s.think > 0 else 0.0

    def _send(self, pid: int, s: _Source, at: float) -> None:
        s.sent += 1
        self.net.send(s.path.src, s.path.dst, at, pid)

    def advance(self, until: float = INF) -> list[Delivery]:
        """Advance the network to ``until`` (or to the first batch of deliveries) and answer
        every delivery with the path's next message; returns the deliveries."""
        got = self.net.advance(until)
        L1 = self.net.length - 1
        sources, warmup = self.sources, self.warmup
        k0 = self.net.startup
        for d in got:
            pid = d.tag
            s = sources[pid]
            s.done += 1
            s.last = d.delivered
            if s.done > warmup:
                delay = d.delivered - d.sent
                s.delays.append(delay)
                s.contention += delay - d.hops - L1
                s.starting += d.first - d.sent - k0
            if s.limit is not None and s.done >= s.limit:
                s.active = False
                self.finished.append(pid)
            elif s.active:
                s.sent += 1
                self.net.send(s.path.src, s.path.dst, d.delivered + (
                    s.rng.expovariate(1.0 / s.think) if s.think > 0 else 0.0), pid)
        return got


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list (q in (0, 100])."""
    if not sorted_values:
        return math.nan
    k = max(1, math.ceil(q / 100.0 * len(sorted_values)))
    return sorted_values[k - 1]


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
    us = traffic.net.us
    n = len(s.delays)
    hops = len(traffic.net.channels.route(s.path.src, s.path.dst))
    base = hops + traffic.net.length - 1
    if not n:
        return PathStats(s.path, 0, hops, math.nan, math.nan, math.nan, math.nan, math.nan)
    p95 = percentile(sorted(s.delays), 95)
    # delays are differences of float send times: Wormhole.us rounds away the last bits, so
    # that a path without contention shows 0, not -5e-15
    return PathStats(s.path, n, hops, us(sum(s.delays) / n), us(p95), us(s.contention / n), us(p95 - base),
                     us(s.starting / n))


__all__ = ["Path", "PathStats", "Traffic", "path_stats", "percentile"]
