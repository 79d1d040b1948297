"""The one network driver: the wormhole model run on a caller's clock.

Every user of :class:`~scheduler.network.wormhole.Wormhole` drives it the same way: inject
messages at a time it gives, advance the model to a time it gives, take the deliveries that
became certain. What differs is the clock, and that is one :class:`Clock`, a linear map
between the caller's time and the model's flit times:

* **virtual** (``Clock.virtual``): the simulators. ``mcemu net simulate`` runs in flit times
  themselves; jobs that communicate (emulator.sim.comm_work) in the workload's time unit, one
  unit being ``unit_us / flit_time`` flit times;
* **dilated wall time** (``Clock.dilated``): the live interconnect, where one network
  microsecond is ``net_dilation`` wall microseconds (a flit of 0.05 us cannot be timed by
  processes), counted from the moment the driver started.

The driver reads no clock: time is always an argument (the core is pure).

**The safe horizon** (:meth:`NetworkDriver.horizon`), written here once: a delivery the model
has not returned yet is due no earlier than its next event plus ``L - 1`` flit times. A
delivery is certain when its header reaches the destination (the sink never blocks) and its
tail follows ``L - 1`` flit times behind (NETWORK.md 1.2 item 5; Wormhole's docstring), so the
header's arrival, which is an event at or after the next one, lies ``L - 1`` flit times (at
least) before the delivery. ``next + (L - 1)`` is the rule; the live loop's old "halfway
there", ``(L - 1) / 2``, was not a second rule but how early the interconnect chose to learn a
delivery: it is now :meth:`NetworkDriver.wakeup`'s ``lead`` (a delivery known ``lead`` flit
times before its due time), an argument of the live driver, bounded by the horizon.

* the simulator of jobs that communicate advances the model at most to the horizon per step
  (:meth:`NetworkDriver.safe_until`), so every delivery, and the job completion it may be, is
  found before the model takes any event at its time;
* the live interconnect wakes when the model reaches ``horizon - lead``
  (:meth:`NetworkDriver.wakeup`) and queues what it learns by due time
  (:meth:`NetworkDriver.advance`, :meth:`NetworkDriver.due`): it hands each delivery to the
  tasks from ``lead`` before its due time on, however late the messages that made it arrived.

The closed-loop traffic (:class:`~scheduler.network.traffic.Traffic`) runs in flit times and
calls the model directly, one message at a time: no conversion on its hot path.
"""
from __future__ import annotations

import math
from heapq import heappop, heappush

from scheduler.network.stats import MessageStats
from scheduler.network.wormhole import INF, Delivery, Wormhole, tags_of

_HUGE = 1e300  # a time this far out is no time: `before` of it is INF


class Clock:
    """A linear map between a caller's time ``t`` and flit times: ``(t - origin) * per_unit``."""

    __slots__ = ("origin", "per_unit")

    def __init__(self, per_unit: float = 1.0, origin: float = 0.0):
        if not (per_unit > 0 and math.isfinite(per_unit)):
            raise ValueError(f"a clock needs a positive number of flit times per unit, got {per_unit!r}")
        self.per_unit, self.origin = float(per_unit), float(origin)

    @classmethod
    def virtual(cls, per_unit: float = 1.0) -> "Clock":
        """Simulated time: flit times themselves, or ``per_unit`` flit times per time unit."""
        return cls(per_unit)

    @classmethod
    def dilated(cls, origin: float, flit_time_us: float, dilation: float) -> "Clock":
        """Wall seconds from ``origin``: one network microsecond lasts ``dilation`` wall us."""
        return cls(1e6 / (flit_time_us * dilation), origin)

    def flits(self, t: float) -> float:
        return (t - self.origin) * self.per_unit

    def time(self, flits: float) -> float:
        return self.origin + flits / self.per_unit

    def span(self, flits: float) -> float:
        """A duration of ``flits`` flit times in the caller's unit."""
        return flits / self.per_unit

    def before(self, t: float) -> float:
        """The last flit time strictly before the caller's time ``t`` (INF for a time that is
        no time)."""
        x = self.flits(t)
        return INF if x > _HUGE else math.nextafter(x, -INF)


VIRTUAL = Clock()


class NetworkDriver:
    """The model ``net`` on ``clock`` (module docstring). Its own queue (:meth:`advance`,
    :meth:`due`) holds the deliveries made certain and not yet taken, in due order."""

    def __init__(self, net: Wormhole, clock: Clock = VIRTUAL):
        self.net, self.clock = net, clock
        self.reach = net.length - 1  # how far ahead of the next event a delivery is certain
        self._queue: list = []  # (due in the caller's time, tag, Delivery)

    # ------------------------------------------------------------------ time

    def horizon(self) -> float | None:
        """Every delivery not returned yet is due at or after this flit time (None: nothing in
        flight). The rule of the module docstring."""
        nt = self.net.next_time()
        return None if nt is None else nt + self.reach

    def safe_until(self, limit: float) -> float | None:
        """How far (flit times) the model may be advanced now, at most to ``limit``, so that no
        event at or after a delivery not yet found is taken: the horizon; None when the next
        event lies after ``limit``."""
        nt = self.net.next_time()
        if nt is None or nt > limit:
            return None
        return min(limit, nt + self.reach)

    def wakeup(self, lead: float) -> float | None:
        """The caller's time by which :meth:`advance` must run again for every delivery to be
        known ``lead`` flit times (at most ``L - 1``) before it is due."""
        h = self.horizon()
        return None if h is None else self.clock.time(h - min(lead, self.reach))

    # ------------------------------------------------------------------ messages

    def send(self, src: int, dst: int, t: float, tag: object, length: int | None = None,
             order: int | None = None) -> None:
        """Inject a message at the caller's time ``t`` (a time the model has passed counts as
        its present: a late sender is late, not in the past); ``length``: its flits (default L);
        ``order``: its rank among injections at the same instant (Wormhole.send)."""
        net = self.net
        at = self.clock.flits(t)
        net.send(src, dst, at if at > net.now else net.now, tag, length, order)

    def withdraw(self, tags, t: float | None = None, cut: bool = True) -> list:
        """Take the messages tagged ``tags`` out of the model (Wormhole.withdraw: those without a
        channel, and with ``cut`` those whose header is on its way; their channels go to their
        waiters now), after running it to the caller's time ``t`` (default: where it is).
        Returns the tags taken: none of them ever comes out of :meth:`due`. Every other
        message of ``tags`` does: its header had reached its destination (its delivery is
        certain, maybe already queued here), or with ``cut=False`` it was past its first channel."""
        tags = tags_of(tags)  # refused before the model moves: bad input changes nothing
        if t is not None:
            self.advance(t)
        taken: list = []
        self.net.withdraw(tags, taken, cut)
        return taken

    def advance(self, t: float) -> int:
        """Run the model to the caller's time ``t``; the deliveries it makes certain (their
        tails may still be on the way) join the queue by due time. Returns how many."""
        net, queue, time = self.net, self._queue, self.clock.time
        until = self.clock.flits(t)
        n = 0
        while True:
            got = net.advance(until)
            if not got:
                return n
            n += len(got)
            for d in got:
                heappush(queue, (time(d.delivered), d.tag, d))

    def next_due(self) -> float | None:
        """The caller's time of the first queued delivery."""
        return self._queue[0][0] if self._queue else None

    def due(self, t: float) -> list[tuple[float, Delivery]]:
        """Take the queued deliveries due at or before the caller's time ``t``: (due, Delivery)
        in due order."""
        queue, out = self._queue, []
        while queue and queue[0][0] <= t:
            due, _, d = heappop(queue)
            out.append((due, d))
        return out

    def free(self, hops: int, length: int | None = None) -> float:
        """The contention-free latency of a message of ``length`` flits (default L) over ``hops``
        channels (flit times): start-up, header, tail (NETWORK.md 1.2 item 5)."""
        return self.net.startup + hops + (self.reach if length is None else length - 1)

    def record(self, stats: MessageStats, d: Delivery, measured: bool = True, length: int | None = None) -> float:
        """Count delivery ``d`` (of ``length`` flits, default L) in ``stats``; its delay (flit times)."""
        delay = d.delivered - d.sent
        stats.add(delay, self.free(d.hops, length), d.delivered, measured)
        return delay


def send_order(rank: int, count: int) -> int:
    """The tie key of a program's message (Wormhole.send's ``order``): its sender's rank and how
    many that rank sent before it, the same in the live run and in its replay. Above every
    plain counter's value, so a background path's injection goes first at a tie."""
    return (1 << 62) + (rank << 32) + count


__all__ = ["Clock", "NetworkDriver", "VIRTUAL", "send_order"]
