"""``fcfs``: first come, first served, blocking (lazy-scheduling journal paper, section 2.3).

One queue in arrival order; only its head is ever tried, so a small job that would fit waits
behind a large one that does not. That blocking is the point of comparison in the papers.
"""
from __future__ import annotations

from collections import deque

from scheduler.disciplines import register
from scheduler.disciplines.base import Discipline
from scheduler.decisions import START_SETTERS, Start, new_start
from scheduler.jobs import JobError

_INF = float("inf")
_new = object.__new__
_job, _allocation, _time, _row, _node = START_SETTERS  # Start's slots, set as new_start sets them


@register("fcfs")
class FCFS(Discipline):
    """One queue in arrival order; the head blocks everyone behind it."""

    def __init__(self, topology, allocator, **params):
        super().__init__(topology, allocator, **params)
        self._queue: deque = deque()
        # The head that last failed to allocate. Until something is released (or a tick
        # reports a change the discipline cannot see, a node back in service) it would fail
        # again: only the head is ever allocated, so nothing else changes the free nodes.
        self._blocked = None
        # arrive and depart below are Discipline's with the hooks inlined (issue 18: the NASA
        # replay); a subclass that changes a hook they inline gets Discipline's own
        cls = type(self)
        self._inline = all(getattr(cls, n) is getattr(FCFS, n) for n in ("_enqueue", "_schedule", "_on_release")) \
            and all(getattr(cls, n) is getattr(Discipline, n) for n in ("_admit", "_advance", "_try_start"))

    def arrive(self, job, now):
        if not self._inline:
            return Discipline.arrive(self, job, now)
        if type(now) is float and self.now <= now < _INF:  # _admit: _advance's hot path
            self.now = now
        else:
            self._advance(now)
        jid, req, known = job.id, job.request, self._known
        if jid in known:
            raise JobError(f"job {jid} is already known to the scheduler")
        q = self._queue
        if not q and job is not self._blocked:
            # nothing waits (the usual arrival: 99.9% of the NASA replay's): _enqueue and
            # _schedule for a queue of one, without the queue. The allocator refuses a request
            # that can never fit (RequestError) before it changes anything, as _admit's check
            # would: that check is left to it here.
            alloc = self.allocator.allocate(req)
            known.add(jid)
            if alloc is None:
                q.append(job)
                self._blocked = job
                return []
            s = _new(Start)  # new_start(job, alloc, now) without the call (a tenth of a replay's arrival)
            _job(s, job)
            _allocation(s, alloc)
            _time(s, now)
            _row(s, None)
            _node(s, None)
            self.running[jid] = s
            return [s]
        if req not in self._normalized:
            self._normalize(req)
        known.add(jid)
        q.append(job)  # _enqueue
        if q[0] is self._blocked:  # what _schedule would find first
            return []
        return self._schedule(now)

    def depart(self, job_id, now):
        if not self._inline:
            return Discipline.depart(self, job_id, now)
        if type(now) is float and self.now <= now < _INF:
            self.now = now
        else:
            self._advance(now)
        start = self.running.pop(job_id, None)
        if start is None:
            raise JobError(f"job {job_id} is not running")
        self._known.discard(job_id)
        self.allocator.release(start.allocation)
        self._blocked = None  # _on_release
        if not self._queue:  # nothing to start (the usual departure)
            return []
        return self._schedule(now)

    def _enqueue(self, job, now):
        self._queue.append(job)

    def _dequeue(self, job_id):
        self._queue = deque(j for j in self._queue if j.id != job_id)
        self._blocked = None  # a new head may follow; let it be tried

    def _reinstate(self, job, now):
        # a held job whose nodes came back: its place in arrival (submit) order
        q = self._queue
        i = next((i for i, j in enumerate(q) if j.submit > job.submit), len(q))
        q.insert(i, job)
        self._blocked = None

    def _schedule(self, now):
        started = []
        q = self._queue
        if not self._inline:
            while q:
                head = q[0]
                if head is self._blocked:
                    break
                s = self._try_start(head, now)
                if s is None:
                    self._blocked = head
                    break
                q.popleft()
                started.append(s)
            return started
        allocate, running = self.allocator.allocate, self.running
        while q:  # the same, _try_start inlined
            head = q[0]
            if head is self._blocked:
                break
            alloc = allocate(head.request)
            if alloc is None:
                self._blocked = head
                break
            running[head.id] = s = new_start(head, alloc, now)
            q.popleft()
            started.append(s)
        return started

    def _on_release(self, start, now):
        self._blocked = None
        return []

    def tick(self, now):
        self._blocked = None
        return super().tick(now)

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
