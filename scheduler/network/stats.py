"""Message statistics: one record for a path's, a job's or a live job's messages, and the one
percentile definition every report uses.

A :class:`MessageStats` keeps the measured delays (the percentiles need them), the sums of
their contention (delay minus the contention-free latency, NETWORK.md 1.2 items 5 and 10) and
of their starting contention (the wait for the first channel, §3.2), and counts every delivery
(measured or not, warm-ups included). Its unit is its writer's: flit times in the model and in
the live interconnect (converted to microseconds by ``Wormhole.us`` when reported).

The closed loop of :mod:`scheduler.network.traffic` writes its fields inline (its hot loop, one
message at a time); the live interconnect through :meth:`MessageStats.add`.
"""
from __future__ import annotations

import math


def percentile(sorted_values, q: float) -> float:
    """Nearest-rank percentile of an ascending sequence (q in (0, 100]): the smallest value
    with at least q % of the values at or below it; NaN when empty. What ``mcemu net simulate``
    has always reported as p95, so the committed figures are read with it."""
    if not sorted_values:
        return math.nan
    k = max(1, math.ceil(q / 100.0 * len(sorted_values)))
    return sorted_values[k - 1]


class MessageStats:
    """The messages of one path or one job (module docstring)."""

    __slots__ = ("delays", "contention", "starting", "delivered", "last", "bytes", "early", "unmeasured", "_sorted",
                 "_of")

    def __init__(self):
        self.delays: list[float] = []  # of the measured messages
        self.contention = 0.0  # sum over the measured messages of (delay - contention-free latency)
        self.starting = 0.0  # sum over the measured messages of their wait for the first channel
        self.delivered = 0  # every delivery, measured or not
        self.last = 0.0  # delivery time of the last message
        self.bytes = 0  # payload bytes delivered (a live job's; the model's messages have none)
        self.early = 0  # deliveries counted by add but not measured (warm-ups)
        self.unmeasured = 0.0  # the sum of their contention
        self._sorted: list[float] = []  # ``delays`` sorted, as far as p95 last saw them
        self._of = None  # the list ``_sorted`` was made of (a writer may replace ``delays``)

    def add(self, delay: float, free: float, at: float, measured: bool = True) -> None:
        """A delivery at ``at`` after ``delay``, whose contention-free latency is ``free``."""
        self.delivered += 1
        self.last = at
        if measured:
            self.delays.append(delay)
            self.contention += delay - free
        else:
            self.early += 1
            self.unmeasured += delay - free

    @property
    def count(self) -> int:
        return len(self.delays)

    def mean(self) -> float:
        n = len(self.delays)
        return sum(self.delays) / n if n else math.nan

    def p95(self) -> float:
        """The live interconnect reports a running job's p95 every second or so: sorting every
        delay each time cost its loop tens of ms at 80,000 messages. The sorted copy is kept and
        only the delays added since are merged in (timsort merges the two runs in linear time)."""
        d, srt = self.delays, self._sorted
        if self._of is not d or len(srt) > len(d):
            srt[:] = d
            self._of = d
        elif len(srt) < len(d):
            srt.extend(d[len(srt):])
        else:
            return percentile(srt, 95)
        srt.sort()
        return percentile(srt, 95)

    def summary(self, us) -> dict:
        """The report of a live job (``comm``: ``mcemu queue``, the journal, the monitor), in
        microseconds by ``us``: count (measured), messages (every one), bytes (their payloads),
        mean and p95 delay, the contention-free baseline (the mean of each message's latency
        alone on the network), the mean contention and the slowdown (mean / baseline) of the
        measured messages; and the mean contention of the unmeasured ones :meth:`add` counted
        (``unmeasured_contention_us``; None when none). The warm-up stays out of the mean by
        design (the transient of ``mcemu net simulate``) but not out of the report: a job held
        up at its start, behind an ended job's worms (issue 30), takes the whole wait on each
        path's first message, a warm-up, and showed slowdown 1.0 and nothing else."""
        n = len(self.delays)
        unmeasured = us(self.unmeasured / self.early) if self.early else None
        if not n:
            return {"count": 0, "messages": self.delivered, "bytes": self.bytes, "mean_delay_us": None,
                    "p95_delay_us": None, "baseline_us": None, "mean_contention_us": None, "slowdown": None,
                    "unmeasured_contention_us": unmeasured}
        mean = sum(self.delays) / n
        base = mean - self.contention / n
        return {"count": n, "messages": self.delivered, "bytes": self.bytes, "mean_delay_us": us(mean),
                "p95_delay_us": us(self.p95()),
                "baseline_us": us(base), "mean_contention_us": us(self.contention / n),
                "slowdown": mean / base if base > 0 else None, "unmeasured_contention_us": unmeasured}


__all__ = ["MessageStats", "percentile"]
