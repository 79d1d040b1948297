"""``two-queue``: the simple two-queue system (Zhou, Brent and Qu 1997, section 3, Fig. 2).

A service queue Q_1 holds at most N jobs and serves them round robin with a fixed slot; the
rest wait in a waiting queue Q_2 (FCFS) and enter Q_1 only when it has fewer than N jobs. All
jobs are registered (runnable); the first N are "more active". N = inf is round robin, N = 1 a
batch queue.

Reading: a job promoted from Q_2 when a member checks out takes the leaver's place in the
round-robin cycle (standard round robin: the newcomer joins the ready queue behind P), so it
gets its first slot after the other N-1 members have had theirs. That is what the paper's
derivation of equation (3) assumes (T_s = N T_0 for every job in Q_1), and with slot-aligned
service times and no switch cost the simulated turnaround matches equation (3) exactly
(tests/test_gang.py). New arrivals that find room join the tail of the cycle.
"""
from __future__ import annotations

from collections import deque

from scheduler.gang import register
from scheduler.gang.office import OfficeManager, _count, _positive
from scheduler.gang.round_robin import CyclicPointer


@register("two-queue")
class TwoQueue(OfficeManager):
    """A service queue of N served round robin, a FCFS waiting queue (section 3)."""

    def __init__(self, topology, allocator="naive", *, service_queue=3, slot: float = 1.0, **params):
        self.n = _count(service_queue, "service_queue (N)", allow_inf=True)
        self.slot = _positive(slot, "slot length")
        super().__init__(topology, allocator, **params)
        self.service: list = []
        self.wait_q: deque = deque()
        self._p = CyclicPointer()

    def _admit(self, rec, now):
        if len(self.service) < self.n:
            self.service.append(rec.id)
        else:
            self.wait_q.append(rec.id)

    def _leave(self, rec, now):
        if rec.id in self.service:
            self._p.leaving(rec.id, self.service)
            i = self.service.index(rec.id)
            if self.wait_q:
                self.service[i] = self.wait_q.popleft()
                self._p.inserted(i)
            else:
                del self.service[i]
        else:
            self.wait_q.remove(rec.id)

    def _next(self, now):
        return self._p.next(self.service)

    def _length(self, rec):
        return self.slot

    def _snapshot_extra(self):
        return {"service_queue": list(self.service), "waiting_queue": list(self.wait_q),
                "N": None if self.n == float("inf") else self.n, "slot_length": self.slot}
