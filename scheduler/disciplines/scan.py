"""``scan-up`` and ``scan-down``: c-scan over per-size queues (Krueger, Lai and Radiya, as
described in the lazy-scheduling journal paper, section 2.3; conference version 2.3).

There are n+1 FCFS queues, one per size class (``topology.size_class``: the cube dimension k
on a hypercube, the power-of-two class ceil(log2 processors) on a mesh). A new job joins the
queue of its class. The scheduler serves one queue at a time, like the disk c-scan: "All
jobs of a given dimension (including those that arrive when the queue is in service) are
allocated before the scheduler moves on to the jobs of next dimension. When queue i is
empty, ScanUp allocates jobs from queue (i + 1) modulo (n + 1), while ScanDown continues
with (i - 1) modulo (n + 1)."

Readings (the text leaves these open):

* **A head that does not fit blocks the scan** (default, ``advance_when_blocked=False``):
  the scheduler stays on the current queue and waits for a departure, because the paper
  moves on only "when queue i is empty" and says all jobs of a dimension are allocated
  before the next dimension is served. Within a queue every job has the same size, so the
  head fails exactly when no free shape of that size exists. ``advance_when_blocked=True``
  selects the other reading: a blocked head passes the turn to the next non-empty queue in
  the scan direction; the scan stops for this event after every non-empty queue has failed
  once in a row, and resumes at the first queue that failed.
* **Empty queues are skipped**: "moving on" goes to the next *non-empty* queue in the scan
  direction (a c-scan does not dwell on empty cylinders); with every queue empty the scan
  position stays put, and the next arrival's queue is reached by continuing from there.
* **Starvation-free variant** (``starvation_free=True``): "disallowing allocation of jobs
  that arrive after the scheduler starts allocating from the queue. These jobs can be
  queued until the scheduler scans the queue again." When the scan reaches a queue it
  serves only the jobs present at that moment (a pass); later arrivals to that queue wait
  for the next pass, even when every other queue is empty (the scan then wraps round to
  the same queue and starts a new pass at once). Default ``False``: the journal text
  describes Scan as serving arrivals during service, and offers the variant only as the way
  starvation "could be avoided"; which one its Figures 3-9 used is not stated.
"""
from __future__ import annotations

from collections import deque

from scheduler.disciplines import register
from scheduler.disciplines.base import Discipline, DisciplineError, remove_job


def _flag(name: str, value) -> bool:
    if not isinstance(value, bool):
        raise DisciplineError(f"scan parameter {name} must be true or false, got {value!r}")
    return value


class Scan(Discipline):
    """c-scan over n+1 per-size FCFS queues; ``step`` is +1 (up) or -1 (down)."""

    step = 1

    def __init__(self, topology, allocator, *, starvation_free: bool = False,
                 advance_when_blocked: bool = False, **params):
        super().__init__(topology, allocator, **params)
        self.starvation_free = _flag("starvation_free", starvation_free)
        self.advance_when_blocked = _flag("advance_when_blocked", advance_when_blocked)
        self.nq = topology.num_classes
        self.queues = [deque() for _ in range(self.nq)]
        self.current = 0 if self.step > 0 else self.nq - 1
        # Jobs at the front of the current queue that belong to the pass in progress
        # (starvation-free variant); None when no pass has been started.
        self.batch: int | None = None
        self._count = 0  # waiting jobs
        self._class_of: dict = {}  # waiting job id -> queue index

    @property
    def direction(self) -> str:
        return "up" if self.step > 0 else "down"

    # ------------------------------------------------------------------ hooks

    def _enqueue(self, job, now):
        k = self._size_class(job.request)
        self.queues[k].append(job)
        self._class_of[job.id] = k
        self._count += 1

    def _dequeue(self, job_id):
        k = self._class_of.pop(job_id)
        i = remove_job(self.queues[k], job_id)
        self._count -= 1
        if k == self.current and self.batch is not None and i < self.batch:
            self.batch -= 1

    def _next_nonempty(self, start: int) -> int | None:
        """The first non-empty queue after ``start`` in the scan direction, wrapping round
        to ``start`` itself last."""
        nq, step, queues = self.nq, self.step, self.queues
        i = start
        for _ in range(nq):
            i = (i + step) % nq
            if queues[i]:
                return i
        return None

    def _begin_pass(self, i: int) -> None:
        self.current = i
        self.batch = len(self.queues[i]) if self.starvation_free else None

    def _pass_done(self) -> bool:
        if not self.queues[self.current]:
            return True
        return self.starvation_free and (self.batch is None or self.batch <= 0)

    def _schedule(self, now):
        started = []
        if not self._count:
            return started
        first_failed = None
        fails = 0
        while self._count:
            if self._pass_done():
                nxt = self._next_nonempty(self.current)
                if nxt is None:
                    break
                self._begin_pass(nxt)
            q = self.queues[self.current]
            s = self._try_start(q[0], now)
            if s is not None:
                q.popleft()
                del self._class_of[s.job.id]
                self._count -= 1
                if self.batch is not None:
                    self.batch -= 1
                started.append(s)
                fails, first_failed = 0, None
                continue
            if not self.advance_when_blocked:
                break
            # Reading "advance": a blocked head passes the turn on, but one failure at every
            # non-empty queue in a row ends this event's scan.
            if first_failed is None:
                first_failed = self.current
            fails += 1
            if fails >= sum(1 for x in self.queues if x):
                if first_failed != self.current:
                    self._begin_pass(first_failed)
                break
            self._begin_pass(self._next_nonempty(self.current))
        return started

    # ------------------------------------------------------------------ views

    def waiting(self):
        """Waiting jobs in scan order: the current queue first, then onward in the scan
        direction (within the current queue, this pass's jobs come first)."""
        out = []
        for d in range(self.nq):
            out.extend(self.queues[(self.current + d * self.step) % self.nq])
        return out

    def snapshot(self):
        queues = []
        for k, q in enumerate(self.queues):
            entry = {"name": f"Q_{k}", "class": k, "jobs": [j.id for j in q]}
            if k == self.current:
                entry["current"] = True
                if self.starvation_free:
                    entry["in_pass"] = self.batch if self.batch is not None else 0
            queues.append(entry)
        snap = {
            "discipline": self.name,
            "direction": self.direction,
            "current": self.current,
            "starvation_free": self.starvation_free,
            "advance_when_blocked": self.advance_when_blocked,
            "queues": queues,
            "running": sorted(self.running, key=str),
        }
        q = self.queues[self.current]
        if q:
            snap["blocked"] = (
                f"Q_{self.current} head job {q[0].id} ({q[0].request}) does not fit: "
                f"{self.allocator.free_count} of {self.topology.size} nodes free"
            )
        return snap


@register("scan-up")
class ScanUp(Scan):
    """c-scan over per-size queues, moving to the next larger size (ScanUp)."""

    step = 1


@register("scan-down")
class ScanDown(Scan):
    """c-scan over per-size queues, moving to the next smaller size (ScanDown)."""

    step = -1


__all__ = ["Scan", "ScanUp", "ScanDown"]
