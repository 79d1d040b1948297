"""The per-size queues of ``lazy`` (scheduler.disciplines.lazy): Q_0..Q_n, FCFS, one per size
class, and N_0..N_n, the allocations of each class that running jobs hold, with the
bookkeeping of every change to them -- a job enters Q_k (``_put``), a head starts
(``_start_head``: N grows), an allocation is released (``_release``), a waiting job is
cancelled (``_dequeue``) or held and given back (``_reinstate``). The discipline decides which
head is tried and when; this mixin keeps the state it decides on consistent.

**What need not be tried again.** Allocations only take nodes away, so a head that failed
fails again until something is released: ``_failed`` remembers each queue's last failure
against the count of releases, and the dirty marks name the queues that gained or lost a head
since the last pass, so that an event costs O(queues) plus the allocator calls that can
succeed, not O(queues x allocator search). ``tick`` forgets all of it, because the daemon
calls it when a node comes back, a change that no release announces.

A job that enters Q_k is aged for the starvation threshold (``_push_age``), a start is
measured for its d_t and a start of the priority job clears stop_alloc
(scheduler.disciplines._lazy_threshold). The discipline's hot
paths (issue 18) do ``_put``, ``_pop_head`` and ``_record_start`` themselves, with the same
bookkeeping: a change here must be made there too.
"""
from __future__ import annotations

from collections import deque

from scheduler.disciplines.base import remove_job
from scheduler.decisions import Start, new_start


class SizeQueues:
    """Mixin for :class:`~scheduler.disciplines.lazy.Lazy`: Q_k, N_k and their bookkeeping."""

    def _init_queues(self, nq: int) -> None:
        self.queues = [deque() for _ in range(nq)]
        self._ks = range(nq)
        self.N = [0] * nq
        self._alloc_class: dict = {}  # running job id -> class of its allocation
        self._count = 0
        self._arrival_k: int | None = None  # literal mode: the queue Lazy_Request serves
        self._waiting: dict = {}  # waiting job id -> Job (its queue: _class_cache[request])
        self._releases = 0  # allocations released so far
        # Queues the retry pass must look at: all after a release, else those that gained
        # or lost a head since the last pass (a head that failed cannot fit until a release).
        self._all_dirty = True
        self._dirty: set = set()
        self._failed: list = [None] * nq  # per queue: (releases, head id) of its last failure

    # ------------------------------------------------------------------ bookkeeping

    def _record_start(self, s: Start) -> Start:
        req = s.allocation.request
        k = self._class_cache.get(req)
        if k is None:
            k = self._size_class(req)
        job = s.job
        self._alloc_class[job.id] = k
        self.N[k] += 1
        self.allocated += 1
        self.total_delay += s.time - job.submit
        if self._dynamic:
            self._stale = True
        return s

    def _pop_head(self, k: int):
        job = self.queues[k].popleft()
        del self._waiting[job.id]
        self._count -= 1
        if job.id == self.priority_job:
            self.stop_alloc, self.Q_j, self.priority_job = False, None, None
        return job

    def _start_head(self, k: int, now: float) -> Start | None:
        """Buddy_Request(head of Q_k): on success the head leaves Q_k and N grows."""
        head = self.queues[k][0]
        key = (self._releases, head.id)
        if self._failed[k] == key:
            # Nothing was released since this head last failed, and allocations only take
            # nodes away: it would fail again. Skipping keeps an event O(queues), not
            # O(queues x allocator search).
            return None
        alloc = self.allocator.allocate(head.request)
        if alloc is None:
            self._failed[k] = key
            return None
        self._pop_head(k)
        s = self.running[head.id] = new_start(head, alloc, now)
        return self._record_start(s)

    def _release(self, alloc) -> None:
        self.allocator.release(alloc)
        self._releases += 1
        self._all_dirty = True

    def _enqueue(self, job, now):
        self._put(job, self._size_class(job.request))

    def _put(self, job, k: int) -> None:
        self.queues[k].append(job)
        self._waiting[job.id] = job
        self._seq += 1
        self._push_age((job.submit, self._seq, job, k))
        self._count += 1
        self._arrival_k = k
        self._dirty.add(k)

    def _reinstate(self, job, now):
        # a held job whose nodes came back: into Q_k in its place by submit time (its age in
        # the heap is its submit time anyway; its arrival was measured when it was held)
        k = self._size_class(job.request)
        self._put(job, k)
        q = self.queues[k]
        if len(q) > 1 and q[-2].submit > job.submit:
            q.pop()
            q.insert(next(i for i, j in enumerate(q) if j.submit > job.submit), job)

    def _dequeue(self, job_id):
        k = self._class_cache[self._waiting.pop(job_id).request]
        remove_job(self.queues[k], job_id)
        self._count -= 1
        self._dirty.add(k)
        if job_id == self.priority_job:
            self.stop_alloc, self.Q_j, self.priority_job = False, None, None

    def tick(self, now):
        # A tick may follow a change the discipline cannot see (the daemon's quarantine
        # bringing a node back): forget which heads were known not to fit.
        self._releases += 1
        self._all_dirty = True
        return super().tick(now)


__all__ = ["SizeQueues"]
