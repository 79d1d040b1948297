"""The wormhole timing model: messages as worms over reserved channels, in virtual time.

Dissertation §3.1 (NETWORK.md 1.1-1.2): a message is one packet of ``L`` flits; the header
routes and the body follows in a pipeline; a channel, once acquired, is reserved for the
message until its tail flit has crossed it; a header that finds its next channel reserved
waits and keeps every channel it holds; no virtual channels; the destination takes arrivals
"without any waiting time". Our choices where the text is silent ([D] in NETWORK.md 1.2):
one-flit buffers, injection and ejection are not resources, a waiting header gets the channel
in FCFS order of request time (what §6.1.1's argument about starting channels assumes; exact
ties go in the order the requests were made, which is deterministic), router decisions are
folded into the flit time and the start-up overhead k_0 is 0 unless given.

**Time is counted in flit times** (``T_t``; the JSON and the analytic models speak
microseconds: multiply by :attr:`Wormhole.flit_time`). Integer flit times keep the
coincidences of back-to-back traffic (MTBS 0) exact, where microseconds in floating point
would break ties by rounding.

Why two kinds of event per hop are enough, and only one is needed: with one-flit buffers a
worm always occupies consecutive channels, one flit each, so the tail is ``L - 1`` channels
behind the header. Channel ``k`` of a ``d``-hop route is released when the header moves
``L`` channels further on (into channel ``k + L`` during transit, or ``k + L - d`` flit times
after reaching the destination, where the sink drains one flit per flit time). Once the
header arrives the whole release schedule and the delivery time ``t_dest + L - 1`` are
certain, so they are written onto the channels at once: a free channel is just one whose
release time has passed, and only a channel that has waiters gets an event at its release.
An uncontended message therefore costs one event per hop and none per flit: the cost does
not grow with ``L``. Hop events are all one flit time after the event that made them, so they
are created in time order and live in a FIFO; injections and grants (arbitrary times) on a
heap. At equal times heap events go first; the outcome does not depend on it, because a
request finds a channel free only if nobody is already waiting for it.

A lone message over ``d`` hops is delivered ``d + L - 1`` flit times after it was sent
(header ``d``, tail ``L - 1`` behind): the text's ``≈ (Dist + L) * T_t``.

Replies at a delivery time: :meth:`Wormhole.advance` returns a delivery as soon as it is
certain (its ``delivered`` time may still lie ahead) and stops before the earliest delivery
time it returns, so no event at that instant has been taken: a reply sent then is ordered with
them exactly as if it had been sent before the call, however calls are cut.

The model is pure: time only moves inside :meth:`Wormhole.advance`, which takes the time to
advance to and returns the deliveries it found; the discrete-event drivers and the live
cluster both call it.
"""
from __future__ import annotations

import math
from collections import deque
from heapq import heapify, heappop, heappush
from typing import Iterable, NamedTuple

from scheduler.network.channels import Channels
from scheduler.topology import Topology

INF = math.inf
_INJECT, _GRANT = 0, 1


class NetworkError(ValueError):
    """Bad input to the network model: a node outside the machine, a time in the past, a
    non-positive message length."""


def tags_of(tags) -> frozenset:
    """``tags`` (an iterable of message tags) as a set, or a NetworkError."""
    if isinstance(tags, (str, bytes)):  # one tag, not its characters
        raise NetworkError(f"withdraw takes a collection of tags, not the string {tags!r}")
    try:
        return frozenset(tags)
    except TypeError as e:
        raise NetworkError(f"withdraw takes a collection of hashable tags: {e}") from None


class Delivery(NamedTuple):
    """A message whose tail reaches its destination at ``delivered`` (flit times);
    ``first``: when its header got its first channel, so ``first - sent - startup`` is the
    *starting contention* (§3.2: at "the first communication channel that a message faces")
    and the rest of ``delivered - sent - (hops + L - 1)`` the intermediate contention."""

    tag: object
    sent: float
    delivered: float
    hops: int
    first: float


class Wormhole:
    """Wormhole-switched channels of ``topology`` (a :class:`Channels` or anything
    :func:`parse_topology` takes).

    ``flit_time`` (us per flit; 0.05 in the text), ``length`` (flits per message; 500 in the
    text), ``startup`` (k_0, flit times added before a message's header enters the network).
    """

    def __init__(self, topology: Topology | Channels | str, *, flit_time: float = 0.05,
                 length: int = 500, startup: float = 0.0):
        self.channels = topology if isinstance(topology, Channels) else Channels(topology)
        if not (isinstance(length, int) and length >= 1):
            raise NetworkError(f"message length must be a positive number of flits, got {length!r}")
        if not (flit_time > 0 and math.isfinite(flit_time)):
            raise NetworkError(f"flit time must be positive, got {flit_time!r}")
        if not (startup >= 0 and math.isfinite(startup)):
            raise NetworkError(f"start-up overhead must be >= 0 flit times, got {startup!r}")
        self.flit_time, self.length, self.startup = float(flit_time), length, float(startup)
        n = self.channels.count
        self.free_at = [0.0] * n  # release time of the channel's last holder (INF: held, not yet known)
        self.held = [0.0] * n  # when the current (or last) holder acquired it
        self.busy = [0.0] * n  # reserved time of finished holdings (and of known future releases)
        self.waiters: list[list | None] = [None] * n  # headers waiting, in request order
        self._heap: list = []
        self._hops: deque = deque()
        self._seq = 0
        self.now = 0.0
        self.in_flight = 0
        self.sent = 0
        self.delivered = 0
        self.withdrawn = 0  # messages taken out unfinished (withdraw)

    # ------------------------------------------------------------------ input

    def send(self, src: int, dst: int, at: float | None = None, tag: object = None,
             length: int | None = None, order: int | None = None) -> None:
        """Inject a message from ``src`` to ``dst`` at time ``at`` (flit times; default now),
        which must not be in the past. ``tag`` comes back in its :class:`Delivery`. ``length``:
        this message's flits (default the network's L): a program's message of B bytes is a header
        plus ceil(B / flit width) flits (nodes.mpi.live), where the text's messages all have L.
        ``order``: how the injection ranks among those at the same instant (default: the order of
        the calls); a caller whose calls come in an order of its own (the live interconnect in
        virtual time, where frames arrive as processes run) gives a key of the sender's, so ties
        go the same way every run and in the replay (the same key: emulator.sim.replay)."""
        if length is not None and not (isinstance(length, int) and length >= 1):
            raise NetworkError(f"message length must be a positive number of flits, got {length!r}")
        if at is None:
            at = self.now
        elif not at >= self.now:  # also refuses NaN
            raise NetworkError(f"cannot send at {at}: the network is at {self.now}")
        try:
            route = self.channels.route(src, dst)
        except (ValueError, TypeError) as e:
            raise NetworkError(str(e)) from None
        self.inject(route, at, tag, length, order)

    def inject(self, route: tuple, at: float, tag: object, length: int | None = None,
               order: int | None = None) -> None:
        """:meth:`send` without its checks, for a caller that holds the route
        (``channels.route``) and sends at or after now: the closed loop's next message."""
        self._seq += 1
        self.sent += 1
        self.in_flight += 1
        # a message: [route, index of the channel its header wants, sent, tag, first channel at, flits]
        heappush(self._heap, (at + self.startup, _INJECT, self._seq if order is None else order,
                              [route, 0, at, tag, 0.0, self.length if length is None else length]))

    def withdraw(self, tags, taken: list | None = None, cut: bool = True) -> int:
        """Take the messages whose tag is in ``tags`` out of the model, at :attr:`now` (an
        ended job's: its worms are nobody's and must not hold up the next job on its nodes).
        Returns how many were taken; ``taken``: a list their tags are appended to.

        * a message that has no channel yet (its injection is ahead, or its header waits for
          its first channel) goes, and its place in its channel's queue with it;
        * ``cut`` (the default): a worm whose header has channels but has not reached its
          destination (in transit, or blocked mid-route) goes too: its channels are released
          now, each to its first waiter in request order, as its tail would release them;
        * a worm whose header has reached its destination stays: its delivery is certain and
          was returned by :meth:`advance`, its channels' release times are written (at most
          ``L - 1`` flit times ahead); so do, with ``cut=False``, the worms already in the
          network, which finish as if nothing was withdrawn.

        No event of a message taken is ever taken again; a withdrawal of nothing changes
        nothing (the run is the one without the call)."""
        tags = tags_of(tags)
        gone, moving = [], []  # the messages taken; those of them that hold channels
        idle = self._unqueue(tags, cut, gone, moving)
        heap = self._heap
        kept = [e for e in heap if not (e[3][3] in tags if e[1] == _INJECT else e[3] in idle)]
        if len(kept) != len(heap):
            gone += [e[3] for e in heap if e[1] == _INJECT and e[3][3] in tags]
            heapify(kept)
            self._heap = kept
        if cut and any(m[3] in tags for _, m in self._hops):
            moving += [m for _, m in self._hops if m[3] in tags]
            gone += [m for _, m in self._hops if m[3] in tags]
            self._hops = deque(e for e in self._hops if e[1][3] not in tags)
        for m in moving:  # every queue has been cut first: a grant goes only to a waiter that stays
            self._cut(m)
        self.in_flight -= len(gone)
        self.withdrawn += len(gone)
        if taken is not None:
            taken += [m[3] for m in gone]
        return len(gone)

    def _unqueue(self, tags: frozenset, cut: bool, gone: list, moving: list) -> set:
        """Take the withdrawn headers out of the channels' queues (with ``cut``, also those
        waiting mid-route, into ``moving``); the others keep their order. Returns the channels
        left without waiters whose grant is booked (a known release): that event must go too."""
        waiters, free_at, idle = self.waiters, self.free_at, set()
        for c, q in enumerate(waiters):
            if q is None or not any(m[3] in tags and (cut or not m[1]) for m in q):
                continue
            keep = []
            for m in q:
                if m[3] in tags and (cut or not m[1]):
                    gone.append(m)
                    if m[1]:
                        moving.append(m)
                else:
                    keep.append(m)
            waiters[c] = keep or None
            if not keep and free_at[c] != INF:
                idle.add(c)
        return idle

    def _cut(self, m: list) -> None:
        """Worm ``m``, its header wanting channel ``m[1]`` of its route, releases the channels
        it holds (the ``L`` behind its header, those its tail has not crossed) now."""
        route, k = m[0], m[1]
        seq = self._seq
        for r in route[max(0, k - m[5]):k]:
            seq = self._release(r, self.now, seq)
        self._seq = seq

    def next_time(self) -> float | None:
        """The time of the next internal event (None: nothing in flight)."""
        t = self._heap[0][0] if self._heap else INF
        if self._hops and self._hops[0][0] < t:
            t = self._hops[0][0]
        return None if t == INF else t

    # ------------------------------------------------------------------ the loop

    def advance(self, until: float = INF) -> list[Delivery]:
        """Take the events up to time ``until`` and return the deliveries that became certain,
        in the order found, stopping before the earliest delivery time it returns (module
        docstring: replies at a delivery time)."""
        heap, hops = self._heap, self._hops
        free_at, held, busy, waiters = self.free_at, self.held, self.busy, self.waiters
        out, now, seq = [], self.now, self._seq
        limit = INF  # the earliest delivery returned: events from then on wait for the next call
        while True:
            if hops and not (heap and heap[0][0] <= hops[0][0]):  # at equal times the heap first
                t, item = hops[0]
                if t > until or t >= limit:
                    break
                hops.popleft()
                kind = -1
            elif heap:
                t, kind, _, item = heap[0]
                if t > until or t >= limit:
                    break
                heappop(heap)
            else:
                break
            now = t
            if kind == _GRANT:
                c = item
                q = waiters[c]
                m = q.pop(0)
                if not q:
                    waiters[c] = None
            else:  # a header asks for its next channel (an injection asks for the first)
                m = item
                if not m[0]:  # to itself: no channel; the sink drains the worm
                    limit = min(limit, self._to_itself(m, t, out))
                    continue
                c = m[0][m[1]]
                if free_at[c] > t or waiters[c] is not None:  # reserved: m waits, in request order
                    if waiters[c] is not None:
                        waiters[c].append(m)
                    else:
                        waiters[c] = [m]
                        if free_at[c] != INF:  # its release is known: be granted then
                            seq += 1
                            heappush(heap, (free_at[c], _GRANT, seq, c))
                    continue
            # m acquires channel c at time t
            free_at[c], held[c] = INF, t
            route, j, L = m[0], m[1], m[5]
            if not j:
                m[4] = t
            elif j >= L:  # the tail leaves the channel L behind the header
                seq = self._release(route[j - L], t, seq)
            d = len(route)
            if j + 1 < d:
                m[1] = j + 1
                hops.append((t + 1, m))
                continue
            # the header reaches the destination at t + 1: every release is now known
            tdest = t + 1
            base = tdest + L - d
            for k in range(d - L if d > L else 0, d):
                r = route[k]
                rel = base + k
                free_at[r] = rel
                busy[r] += rel - held[r]
                if waiters[r] is not None:
                    seq += 1
                    heappush(heap, (rel, _GRANT, seq, r))
            delivered = tdest + L - 1
            out.append(Delivery(m[3], m[2], delivered, d, m[4]))
            self.in_flight -= 1
            self.delivered += 1
            limit = delivered if delivered < limit else limit
        self._seq = seq
        self.now = now if now > self.now else self.now
        if until != INF and until > self.now and not out:
            self.now = until
        return out

    def _release(self, r: int, t: float, seq: int) -> int:
        """Channel ``r`` is released at ``t`` during transit (the tail has crossed it: routes
        longer than L); its first waiter is granted it then. Returns the event counter."""
        self.free_at[r] = t
        self.busy[r] += t - self.held[r]
        if self.waiters[r] is not None:
            seq += 1
            heappush(self._heap, (t, _GRANT, seq, r))
        return seq

    def _to_itself(self, m: list, t: float, out: list) -> float:
        """A message to its own node takes no channel: the sink drains the worm from ``t``."""
        delivered = t + m[5] - 1
        out.append(Delivery(m[3], m[2], delivered, 0, t))
        self.in_flight -= 1
        self.delivered += 1
        return delivered

    # ------------------------------------------------------------------ measurement

    def busy_time(self, c: int, at: float | None = None) -> float:
        """How long channel ``c`` has been reserved in [0, ``at``] (default now)."""
        at = self.now if at is None else at
        b, f = self.busy[c], self.free_at[c]
        if f == INF:
            return b + max(0.0, at - self.held[c])
        if f > at:  # a release already booked lies ahead
            return b - (f - max(at, self.held[c]))
        return b

    def utilization(self, since: Iterable[float] | None = None, t0: float = 0.0,
                    t1: float | None = None) -> list[float]:
        """Reserved fraction of [t0, t1] for every channel; ``since``: the busy times at t0
        (:meth:`busy_snapshot` taken then), default zero."""
        t1 = self.now if t1 is None else t1
        span = t1 - t0
        n = self.channels.count
        base = list(since) if since is not None else [0.0] * n
        if span <= 0:
            return [0.0] * n
        return [(self.busy_time(c, t1) - base[c]) / span for c in range(n)]

    def busy_snapshot(self) -> list[float]:
        return [self.busy_time(c) for c in range(self.channels.count)]

    def us(self, t: float) -> float:
        """Flit times to microseconds, to the nanosecond's millionth (so 501 flits read 25.05,
        not 25.050000000000002)."""
        return round(t * self.flit_time, 9) + 0.0  # + 0.0: no -0.0


__all__ = ["Delivery", "NetworkError", "Wormhole", "tags_of"]
