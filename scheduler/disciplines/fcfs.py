"""``fcfs``: first come, first served, blocking (lazy-scheduling journal paper, section 2.3).

One queue in arrival order; only its head is ever tried, so a small job that would fit waits
behind a large one that does not. That blocking is the point of comparison in the papers.
"""
from __future__ import annotations

from collections import deque

from scheduler.disciplines import register
from scheduler.disciplines.base import Discipline


@register("fcfs")
class FCFS(Discipline):
    """One queue in arrival order; the head blocks everyone behind it."""

    def __init__(self, topology, allocator, **params):
        super().__init__(topology, allocator, **params)
        self._queue: deque = deque()

    def _enqueue(self, job, now):
        self._queue.append(job)

    def _dequeue(self, job_id):
        self._queue = deque(j for j in self._queue if j.id != job_id)

    def _schedule(self, now):
        started = []
        q = self._queue
        while q:
            s = self._try_start(q[0], now)
            if s is None:
                break
            q.popleft()
            started.append(s)
        return started

    def waiting(self):
        return list(self._queue)

    def snapshot(self):
        snap = super().snapshot()
        if self._queue:
            head = self._queue[0]
            snap["blocked"] = (
                f"head job {head.id} ({head.request}) does not fit: "
                f"{self.allocator.free_count} of {self.topology.size} nodes free"
            )
        return snap
