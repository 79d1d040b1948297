"""The starvation threshold of ``lazy`` (scheduler.disciplines.lazy; Mohapatra, Yu and Das,
journal and conference papers, section 3.2). Laziness alone lets a large job wait for ever
behind a stream of smaller ones; the threshold bounds the wait: once the oldest waiting job
has waited that long, ``stop_alloc`` is set, its queue is saved as Q_j and nothing else is
allocated until the head of Q_j is. This module holds the threshold's value and the
measurements it is computed from, the ages of the waiting jobs and the check; the discipline
decides when the check runs (its gap 4, ``threshold_check``) and what stop_alloc holds back.

**Threshold** (``threshold``): a number fixes it (the paper's "predefined" threshold);
``"dynamic"`` (default) is the paper's heuristic d_t^2 * lambda, where, in this reading,
d_t is the mean queueing delay (start - submit) of all jobs allocated so far (the running
R/A of section 4.2, updated "every time a job is allocated"), and lambda the measured arrival
rate, (arrivals - 1) / (last arrival - first arrival), i.e. one over the mean inter-arrival
time. Until one job has been allocated and two have arrived apart in time there is no
threshold. ``None`` (or ``"none"``) disables the threshold (pure laziness; a large job can
then starve). A job has reached the threshold when ``now >= submit + threshold`` ("whenever
the waiting time of a job *reaches* the threshold"). Note that d_t^2 lambda < d_t whenever
d_t lambda < 1, so at light load the dynamic threshold is short and cuts laziness short.

**The oldest waiting job** comes from a heap of ages rather than a scan of every queue,
because the check runs at every release (every event with the event check): O(log) per job
instead of O(waiting jobs) per check. Among jobs submitted at the same instant the earlier
arrival is the older.

The mixin reads the discipline's ``_waiting`` (waiting job id -> Job) and ``_count`` (how many
wait), which the per-size queues keep (scheduler.disciplines._lazy_queues). The discipline's
hot paths (issue 18) do parts of it themselves, with the same decisions -- an arrival's
measurement and ``_push_age`` in ``arrive``; ``_current_threshold``, ``_oldest`` and the check
in ``depart``, the general pass and ``next_wakeup`` -- so a change here must be made there too.
"""
from __future__ import annotations

import heapq
import math
from collections import deque

from scheduler.disciplines.base import DisciplineError


def parse_threshold(value):
    if value is None or value == "dynamic":
        return value
    if value is False:  # ``--param threshold=off`` reads as False
        return None
    if isinstance(value, str) and value.strip().lower() in ("none", "off"):
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise DisciplineError(
                f"lazy threshold must be 'dynamic', a number >= 0 or None, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 \
            or math.isnan(value):
        raise DisciplineError(f"lazy threshold must be 'dynamic', a number >= 0 or None, got {value!r}")
    return None if math.isinf(value) else float(value)


class StarvationThreshold:
    """Mixin for :class:`~scheduler.disciplines.lazy.Lazy`: the waiting-time threshold, the
    measurements of the dynamic one (d_t, lambda), the ages of the waiting jobs, the check
    that sets ``stop_alloc`` and the timer of the event check."""

    CHECKS = ("release", "event")

    def _init_threshold(self, threshold, threshold_check: str, literal: bool) -> None:
        if threshold_check not in self.CHECKS:
            raise DisciplineError(f"lazy parameter threshold_check must be one of {', '.join(self.CHECKS)}, "
                                  f"got {threshold_check!r}")
        self.threshold_check = threshold_check
        # gap 4: the oldest job checked at every event and on a timer (not the paper's default)
        self._check_events = threshold_check == "event" and not literal
        self.threshold_param = parse_threshold(threshold)
        self.stop_alloc = False
        self.Q_j: int | None = None
        self.priority_job = None  # id of the head of Q_j while stop_alloc is set
        # The oldest waiting job in O(log): a heap of (submit, seq, job, k), stale entries
        # (jobs no longer waiting) dropped when they surface. While the jobs come in submit
        # order (always in the simulator) the entries are pushed in heap order, so the heap
        # is a deque (``_fifo``: append and popleft instead of heappush and heappop, the same
        # first entry); the first entry out of order turns it into the heap (a sorted list is
        # one) for good.
        self._ages = deque()
        self._fifo = True
        self._seq = 0  # jobs queued so far: the tie-break of equal submit times
        # measurements for the dynamic threshold
        self.arrivals = 0
        self._first_arrival = self._last_arrival = None
        self.allocated = 0
        self.total_delay = 0.0
        self._dynamic = self.threshold_param == "dynamic"
        self._threshold = None if self._dynamic else self.threshold_param
        # The dynamic threshold is a function of the measurements above, recomputed when it
        # is read after one of them changed (_current_threshold), not at every arrival and
        # allocation: the same value, fewer computations.
        self._stale = False
        # next_wakeup() always answers None unless the threshold is checked at events: the
        # engine then skips the call (emulator.sim.engine)
        self.never_wakes = not self._check_events

    # ------------------------------------------------------------------ measurements

    @property
    def d_t(self) -> float | None:
        return self.total_delay / self.allocated if self.allocated else None

    @property
    def arrival_rate(self) -> float | None:
        if self.arrivals < 2 or self._last_arrival <= self._first_arrival:
            return None
        return (self.arrivals - 1) / (self._last_arrival - self._first_arrival)

    @property
    def threshold(self) -> float | None:
        """The waiting-time threshold now, None when there is none."""
        return self._current_threshold()

    def _current_threshold(self) -> float | None:
        if self._stale:
            self._stale = False
            self._update_threshold()
        return self._threshold

    def _update_threshold(self) -> None:
        # Only an arrival (lambda) or an allocation (d_t) moves the dynamic threshold. The
        # arithmetic of d_t * d_t * arrival_rate, without the properties: it runs at every
        # arrival and allocation.
        if self._dynamic:
            n, a = self.allocated, self.arrivals
            if n and a >= 2 and self._last_arrival > self._first_arrival:
                d = self.total_delay / n
                self._threshold = d * d * ((a - 1) / (self._last_arrival - self._first_arrival))
            else:
                self._threshold = None

    def _held_arrival(self, job, now):
        # every arrival is measured here, a job held at its arrival (Discipline._held_arrive)
        # too: lambda counts it
        self.arrivals += 1
        if self._first_arrival is None:
            self._first_arrival = now
        self._last_arrival = now
        if self._dynamic:
            self._stale = True

    # ------------------------------------------------------------------ the oldest waiting job

    def _push_age(self, entry) -> None:
        ages = self._ages
        if self._fifo:
            if not ages or entry[0] >= ages[-1][0]:
                ages.append(entry)
                return
            self._ages = ages = list(ages)  # sorted by (submit, seq): a heap
            self._fifo = False
        heapq.heappush(ages, entry)

    def _drop_age(self) -> None:
        """Drop the first (stale) entry of ``_ages``."""
        if self._fifo:
            self._ages.popleft()
        else:
            heapq.heappop(self._ages)

    def _oldest(self):
        """(job, k) of the oldest waiting job (the paper: "keeping track of the waiting time
        of the earliest generated job"); None when nothing waits."""
        ages, waiting = self._ages, self._waiting
        while ages:
            _, _, job, k = ages[0]
            if waiting.get(job.id) is job:
                return job, k
            self._drop_age()
        return None

    # ------------------------------------------------------------------ the check

    def _check_threshold(self, now: float) -> None:
        if self.stop_alloc or not self._count:
            return
        t = self._current_threshold()
        if t is None:
            return
        job, k = self._oldest()
        if now >= job.submit + t:
            self.stop_alloc, self.Q_j, self.priority_job = True, k, job.id

    def next_wakeup(self):
        if not self._check_events or self.stop_alloc or not self._count:
            return None
        t = self._current_threshold()
        if t is None:
            return None
        ages, waiting = self._ages, self._waiting
        while True:  # _oldest, inlined: the simulator asks after every event
            job = ages[0][2]
            if waiting.get(job.id) is job:
                return job.submit + t
            self._drop_age()


__all__ = ["StarvationThreshold", "parse_threshold"]
