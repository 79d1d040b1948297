"""``lazy``: lazy scheduling (Mohapatra, Yu and Das; journal paper section 3.2, conference
paper section 3.2).

There are n+1 FCFS queues Q_0..Q_n, one per size class (``topology.size_class``: the cube
dimension on a hypercube, the power-of-two class on a mesh), and a threshold length N_k per
queue. Following the conference text, N_k "denotes the number of subcubes of a particular
size being occupied at any instant": incremented by every k-cube allocation, decremented by
every k-cube deallocation. A job waits for a busy cube of its own size while |Q_k| <= N_k;
when |Q_k| > N_k the head of Q_k asks the allocator for a new cube. A departing job's cube is
handed straight to the head of Q_k. A waiting-time threshold prevents starvation: once the
oldest waiting job has waited that long, ``stop_alloc`` is set, its queue is saved as Q_j and
nothing else is allocated until the head of Q_j is.

    Lazy_Request(I_k): 1. enqueue I_k to Q_k; 2. if |Q_k| > N_k and not stop_alloc, then
        Buddy_Request(head of Q_k); 3. if it succeeds, increment N_k.
    Lazy_Release(I_k): 1. determine the oldest request; if its waiting time exceeds the
        threshold, set stop_alloc and save Q_j; 2. if |Q_k| > 0 and not stop_alloc, allocate
        the released subsystem to the head of Q_k; 3. if stop_alloc, Buddy_Request(head of
        Q_j); on success clear stop_alloc; 4. Buddy_Release(I_k).

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

**Hand-over**: the departing job's Allocation is given to the head of Q_k as it is, without
being released and re-allocated, so the head gets exactly "the released subsystem" whatever
the allocator, and N_k does not change. When the allocation cannot serve the head as it is
(a folded allocation; a different shape of the same class, a 4x2 leaving and a 2x4 at the
head on a mesh, 5 vs 8 processors with ``naive``; a node the live daemon has marked down),
it is released and the head asks the allocator for its own request at once. N_k and Q_k are
indexed by the class of the *allocation*: with size reduction a job of Q_k folded to a
(k-1)-cube counts in N_{k-1}, and its cube is handed to Q_{k-1} when it leaves.

**Gaps in the pseudo-code, filled in the default mode** (``literal=False``):

1. *What retries a job whose Buddy_Request failed at arrival?* The text retries only on a
   same-size departure (hand-over) or the next arrival to the same queue; a job with N_k = 0
   whose request failed would wait for the delay threshold. Default: after every event, each
   queue with |Q_k| > N_k (oldest head first) allocates heads until |Q_k| <= N_k or the
   allocator fails.
2. *May the priority job use the cube being released?* Literally no: step 3 requests before
   step 4 releases, so a job that needs the cube of the last running job can never start
   (nothing else is running to depart, and arrivals allocate nothing while stop_alloc is
   set: a deadlock). Default: the departing cube is released first, then the priority job
   (head of Q_j) asks for its request.
3. *What happens on an arrival while stop_alloc is set?* The arrival is only enqueued, in
   both modes ("no jobs are allocated until" the priority job is). An arrival frees nothing,
   so retrying the priority job then would be pointless.
4. *When is the oldest request checked?* Literally only at a departure (step 1). Default: at
   every event, and on a timer: ``next_wakeup()`` returns the moment the oldest waiting job
   reaches the threshold, so ``tick()`` sets stop_alloc even when no job arrives or leaves;
   the priority job is tried at once (it may fit already: a job waiting lazily for a busy
   cube of its size while free ones exist). After it starts, the next oldest is checked.
5. *After the priority job starts, what else?* Literally nothing until the next event.
   Default: the hand-over/retry pass of gap 1 runs in the same event.
6. *Cancel of the priority job* (not in the paper, both modes): stop_alloc is cleared.

Cost: a head that failed is not tried again until something is released (allocations only
take nodes away), and the oldest job is kept in a heap, so an event costs O(queues) plus
the allocator calls that can succeed. ``tick`` forgets the failures, because the daemon
calls it when a node comes back. Among jobs submitted at the same instant the earlier
arrival is the older.

``literal=True`` runs the pseudo-code as printed: one Buddy_Request at an arrival, steps 1-4
in that order at a departure (the priority job cannot use the departing cube), the oldest
request checked only at departures, no timer, no retry pass.
"""
from __future__ import annotations

import heapq
import math
from collections import deque

from scheduler.disciplines import register
from scheduler.disciplines.base import Discipline, DisciplineError, remove_job
from scheduler.decisions import Start
from scheduler.jobs import JobError


def _parse_threshold(value):
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


@register("lazy")
class Lazy(Discipline):
    """Per-size queues Q_k that wait for busy k-cubes while |Q_k| <= N_k; stop_alloc on delay."""

    def __init__(self, topology, allocator, *, threshold="dynamic", literal: bool = False, **params):
        super().__init__(topology, allocator, **params)
        if not isinstance(literal, bool):
            raise DisciplineError(f"lazy parameter literal must be true or false, got {literal!r}")
        self.threshold_param = _parse_threshold(threshold)
        self.literal = literal
        nq = topology.num_classes
        self.queues = [deque() for _ in range(nq)]
        self.N = [0] * nq
        self.stop_alloc = False
        self.Q_j: int | None = None
        self.priority_job = None  # id of the head of Q_j while stop_alloc is set
        self._alloc_class: dict = {}  # running job id -> class of its allocation
        self._count = 0
        self._arrival_k: int | None = None  # literal mode: the queue Lazy_Request serves
        self._releases = 0  # allocations released so far
        # Queues the retry pass must look at: all after a release, else those that gained
        # or lost a head since the last pass (a head that failed cannot fit until a release).
        self._all_dirty = True
        self._dirty: set = set()
        # The oldest waiting job in O(log): a heap of (submit, seq, job, k), stale entries
        # (jobs no longer waiting) dropped when they surface.
        self._ages: list = []
        self._waiting: dict = {}  # waiting job id -> Job (its queue: _class_cache[request])
        self._seq = 0
        self._failed: list = [None] * nq  # per queue: (releases, head id) of its last failure
        # measurements for the dynamic threshold
        self.arrivals = 0
        self._first_arrival = self._last_arrival = None
        self.allocated = 0
        self.total_delay = 0.0
        self._dynamic = self.threshold_param == "dynamic"
        self._threshold = None if self._dynamic else self.threshold_param

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
            self._update_threshold()
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
        s = self.running[head.id] = Start(head, alloc, now)
        return self._record_start(s)

    def _release(self, alloc) -> None:
        self.allocator.release(alloc)
        self._releases += 1
        self._all_dirty = True

    def _oldest(self):
        """(job, k) of the oldest waiting job (the paper: "keeping track of the waiting time
        of the earliest generated job"); None when nothing waits."""
        ages, waiting = self._ages, self._waiting
        while ages:
            _, _, job, k = ages[0]
            if waiting.get(job.id) is job:
                return job, k
            heapq.heappop(ages)
        return None

    def _check_threshold(self, now: float) -> None:
        if self.stop_alloc or not self._count:
            return
        t = self._threshold
        if t is None:
            return
        job, k = self._oldest()
        if now >= job.submit + t:
            self.stop_alloc, self.Q_j, self.priority_job = True, k, job.id

    # ------------------------------------------------------------------ hooks

    def arrive(self, job, now):
        # Discipline.arrive, with the arrival measured after the refusal and before the job
        # is queued.
        self._admit(job, now)
        k = self._class_cache.get(job.request)
        if k is None:
            k = self._size_class(job.request)
        self._held_arrival(job, now)
        self._known.add(job.id)
        self._put(job, k)
        return self._schedule(now)

    def _held_arrival(self, job, now):
        # every arrival is measured here, a job held at its arrival (Discipline._held_arrive)
        # too: lambda counts it
        self.arrivals += 1
        if self._first_arrival is None:
            self._first_arrival = now
        self._last_arrival = now
        if self._dynamic:
            self._update_threshold()

    def _enqueue(self, job, now):
        self._put(job, self._size_class(job.request))

    def _put(self, job, k: int) -> None:
        self.queues[k].append(job)
        self._waiting[job.id] = job
        self._seq += 1
        heapq.heappush(self._ages, (job.submit, self._seq, job, k))
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

    def depart(self, job_id, now):
        self._advance(now)
        start = self.running.pop(job_id, None)
        if start is None:
            raise JobError(f"job {job_id} is not running")
        self._known.discard(job_id)
        alloc = start.allocation
        k = self._alloc_class.pop(job_id)
        self.N[k] -= 1
        started = []
        self._check_threshold(now)  # step 1 (both modes)
        if self.queues[k] and not self.stop_alloc:  # step 2: hand the subsystem over
            head = self.queues[k][0]
            if self._reusable(alloc, head):
                self._pop_head(k)
                started.append(self._record_start(self._start_on(head, alloc, now)))
            else:
                self._release(alloc)
                s = self._start_head(k, now)
                if s is not None:
                    started.append(s)
            alloc = None
        if self.literal:
            if self.stop_alloc:  # step 3, before the release of step 4
                s = self._start_head(self.Q_j, now)
                if s is not None:
                    started.append(s)
            if alloc is not None:  # step 4
                self._release(alloc)
            return started
        if alloc is not None:
            self._release(alloc)
        return started + self._schedule(now)

    def _reusable(self, alloc, head) -> bool:
        """Whether the departing allocation serves ``head`` as it is: unfolded, the very
        request the allocator would make for the head, and (under the live daemon's
        quarantine) no node of it down."""
        if alloc.folds or self._normalize(head.request) != alloc.request:
            return False
        down = getattr(self.allocator, "down", None)
        return not down or down.isdisjoint(alloc.nodes)

    def tick(self, now):
        # A tick may follow a change the discipline cannot see (the daemon's quarantine
        # bringing a node back): forget which heads were known not to fit.
        self._releases += 1
        self._all_dirty = True
        return super().tick(now)

    def _schedule(self, now):
        if self.literal:
            return self._literal_request(now)
        started = []
        queues, N, ages, waiting = self.queues, self.N, self._ages, self._waiting
        while self._count:
            if not self.stop_alloc and self._threshold is not None:
                # _check_threshold, inlined: it runs once or twice per event.
                while True:
                    _, _, job, k = ages[0]
                    if waiting.get(job.id) is job:
                        break
                    heapq.heappop(ages)
                if now >= job.submit + self._threshold:
                    self.stop_alloc, self.Q_j, self.priority_job = True, k, job.id
            if self.stop_alloc:
                s = self._start_head(self.Q_j, now)
                if s is None:
                    break
                started.append(s)
                continue
            if self._all_dirty:
                over = [(q[0].submit, k) for k, q in enumerate(queues) if len(q) > N[k]]
                self._all_dirty = False
            elif self._dirty:
                over = [(queues[k][0].submit, k) for k in self._dirty if len(queues[k]) > N[k]]
            else:
                break  # nothing released and no queue changed: no head can start
            self._dirty.clear()
            if len(over) > 1:
                over.sort()
            progressed = False
            for _, k in over:
                q = queues[k]
                while len(q) > N[k]:
                    s = self._start_head(k, now)
                    if s is None:
                        break
                    started.append(s)
                    progressed = True
            if not progressed:
                break
        return started

    def _literal_request(self, now):
        """Lazy_Request steps 2-3 for the job just enqueued; nothing on a tick or cancel."""
        k, self._arrival_k = self._arrival_k, None
        if k is None or self.stop_alloc or len(self.queues[k]) <= self.N[k]:
            return []
        s = self._start_head(k, now)
        return [s] if s is not None else []

    def next_wakeup(self):
        if self.literal or self.stop_alloc or not self._count:
            return None
        t = self._threshold
        if t is None:
            return None
        ages, waiting = self._ages, self._waiting
        while True:  # _oldest, inlined: the simulator asks after every event
            job = ages[0][2]
            if waiting.get(job.id) is job:
                return job.submit + t
            heapq.heappop(ages)

    # ------------------------------------------------------------------ views

    def waiting(self):
        """Waiting jobs: the priority job first while stop_alloc is set, then all others
        oldest first (the order in which the threshold would single them out)."""
        jobs = sorted((j for q in self.queues for j in q), key=lambda j: j.submit)
        if self.stop_alloc:
            jobs.sort(key=lambda j: j.id != self.priority_job)
        return jobs

    def snapshot(self):
        t = self.threshold
        d, lam = self.d_t, self.arrival_rate
        return {
            "discipline": self.name,
            "queues": [
                {"name": f"Q_{k}", "class": k, "N_k": self.N[k], "jobs": [j.id for j in q],
                 "over_threshold": len(q) > self.N[k]}
                for k, q in enumerate(self.queues)
            ],
            "stop_alloc": self.stop_alloc,
            "Q_j": self.Q_j,
            "priority_job": self.priority_job,
            "threshold": t,
            "threshold_mode": "dynamic" if self.threshold_param == "dynamic" else
                              ("none" if self.threshold_param is None else "fixed"),
            "d_t": d,
            "lambda": lam,
            "literal": self.literal,
            "next_wakeup": self.next_wakeup(),
            "running": sorted(self.running, key=str),
        }


__all__ = ["Lazy"]
