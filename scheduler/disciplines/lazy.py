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
``"dynamic"`` (default) is the paper's heuristic d_t^2 * lambda, from the measured mean
queueing delay d_t and arrival rate lambda; ``None`` (or ``"none"``) disables it (pure
laziness; a large job can then starve). How d_t and lambda are read, and when a job has
reached the threshold: scheduler.disciplines._lazy_threshold.

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
4. *When is the oldest request checked?* At a release only: ``Lazy_Release`` step 1 is the
   one place the pseudo-code determines the oldest request, and nothing in sections 3.2 of
   either paper checks it at an arrival or on a clock. This is the default
   (``threshold_check="release"``): at every departure, before the hand-over of step 2, the
   oldest waiting job is compared with the threshold (once per release); arrivals and the
   retry pass of gap 1 never set stop_alloc, and no timer is asked for. A job waiting lazily
   for a busy cube of its size therefore waits at least until some job leaves, even when
   free cubes exist -- which is the light-load cost the journal paper reports (section 5,
   Table I: "allocation of jobs are delayed even though the system has enough idle
   processors with the lazy scheme"; FCFS's power 20 against lazy's 0.5 at load 0.1, case A).
   ``threshold_check="event"`` is the other reading, kept to study it: the oldest job is
   checked at every event and on a timer (``next_wakeup()`` returns the moment it reaches
   the threshold, so ``tick()`` sets stop_alloc with no arrival or departure; after the
   priority job starts the next oldest is checked at once). At light load d_t^2 lambda is
   tiny, so the timer ends every lazy wait almost at once and lazy behaves like scan
   (M_lazy / M_scan = 0.99-1.02 at loads 0.1-0.2 in our runs, uniform residence): the
   paper's numbers favour the release reading (docs/results/lazy-table1, lazy-fig3).
5. *After the priority job starts, what else?* Literally nothing until the next event.
   Default: the hand-over/retry pass of gap 1 runs in the same event.
6. *Cancel of the priority job* (not in the paper, both modes): stop_alloc is cleared.

Cost: a head that failed is not tried again until something is released (allocations only
take nodes away), and the oldest job is kept in a heap, so an event costs O(queues) plus
the allocator calls that can succeed. ``tick`` forgets the failures, because the daemon
calls it when a node comes back. Among jobs submitted at the same instant the earlier
arrival is the older. The hot paths are inlined (issue 18, the same decisions): ``arrive``
and ``depart`` do the bookkeeping of ``_admit``, ``_put``, ``_pop_head`` and
``_record_start`` themselves and answer for the retry pass when it can start nothing, the
retry pass without the threshold check is a loop of its own, and the dynamic threshold is
computed when it is read after a measurement changed, not at every arrival and allocation.
A subclass that overrides one of those helpers must override ``arrive`` and ``depart`` too.

``literal=True`` runs the pseudo-code as printed: one Buddy_Request at an arrival, steps 1-4
in that order at a departure (the priority job cannot use the departing cube), the oldest
request checked only at departures, no timer, no retry pass. It differs from the default
(which also checks only at departures) by gaps 1, 2 and 5, not by when the threshold is
checked; ``threshold_check`` does not apply to it.

**Layout.** This module holds the decisions: Lazy_Request (``arrive``), Lazy_Release
(``depart``, with the hand-over), the retry pass and the literal mode. The state they decide
on is kept by two mixins, one concern each: the per-size queues Q_k and counts N_k with their
bookkeeping (scheduler.disciplines._lazy_queues, ``SizeQueues``), and the starvation
threshold -- its value, d_t and lambda, the ages of the waiting jobs, the check and its timer
(scheduler.disciplines._lazy_threshold, ``StarvationThreshold``).
"""
from __future__ import annotations

import heapq

from scheduler.disciplines import register
from scheduler.disciplines._lazy_queues import SizeQueues
from scheduler.disciplines._lazy_threshold import StarvationThreshold
from scheduler.disciplines.base import Discipline, DisciplineError
from scheduler.decisions import new_start
from scheduler.jobs import JobError

_INF = float("inf")


@register("lazy")
class Lazy(SizeQueues, StarvationThreshold, Discipline):
    """Per-size queues Q_k that wait for busy k-cubes while |Q_k| <= N_k; stop_alloc on delay."""

    def __init__(self, topology, allocator, *, threshold="dynamic", literal: bool = False,
                 threshold_check: str = "release", **params):
        super().__init__(topology, allocator, **params)
        if not isinstance(literal, bool):
            raise DisciplineError(f"lazy parameter literal must be true or false, got {literal!r}")
        self._init_threshold(threshold, threshold_check, literal)  # checks threshold_check, then threshold
        self.literal = literal
        self._init_queues(topology.num_classes)
        # _schedule's pass is the retry pass only (no threshold check, not literal): arrive
        # and depart may answer for it when it could start nothing
        self._plain_pass = not self._check_events and not literal
        # request -> its queue, for requests that arrived before (normalized, so admitted)
        self._arrival_class: dict = {}

    # ------------------------------------------------------------------ hooks

    def arrive(self, job, now):
        # Discipline.arrive, with the arrival measured after the refusal and before the job
        # is queued. _admit, _held_arrival and _put inlined, in that order (they run at every
        # arrival; issue 18).
        if type(now) is float and self.now <= now < _INF:  # _advance's hot path
            self.now = now
        else:
            self._advance(now)
        jid, req = job.id, job.request
        if jid in self._known:
            raise JobError(f"job {jid} is already known to the scheduler")
        k = self._arrival_class.get(req)  # one look-up for a request seen before
        if k is None:
            if req not in self._normalized:
                self._normalize(req)
            k = self._class_cache.get(req)
            if k is None:
                k = self._size_class(req)
            self._arrival_class[req] = k
        self.arrivals += 1  # _held_arrival
        if self._first_arrival is None:
            self._first_arrival = now
        self._last_arrival = now
        if self._dynamic:
            self._stale = True
        self._known.add(jid)
        q = self.queues[k]
        q.append(job)  # _put
        self._waiting[jid] = job
        self._seq += 1
        ages = self._ages
        if self._fifo and (not ages or job.submit >= ages[-1][0]):  # _push_age
            ages.append((job.submit, self._seq, job, k))
        else:
            self._push_age((job.submit, self._seq, job, k))
        self._count += 1
        self._arrival_k = k
        dirty = self._dirty
        dirty.add(k)
        if len(dirty) == 1 and self._plain_pass and not self._all_dirty and not self.stop_alloc:
            # What _schedule would do, without its set-up: Q_k is the one queue that changed,
            # so the pass allocates heads of Q_k while |Q_k| > N_k (_fill, as _schedule does),
            # and then stops (a start releases nothing and changes no queue).
            dirty.clear()
            N = self.N
            if len(q) <= N[k]:
                return []
            started = []
            self._fill(k, now, started)
            return started
        return self._schedule(now)

    def depart(self, job_id, now):
        if type(now) is float and self.now <= now < _INF:  # _advance's hot path
            self.now = now
        else:
            self._advance(now)
        start = self.running.pop(job_id, None)
        if start is None:
            raise JobError(f"job {job_id} is not running")
        self._known.discard(job_id)
        alloc = start.allocation
        k = self._alloc_class.pop(job_id)
        N = self.N
        N[k] -= 1
        started = []
        # step 1 (both modes): _check_threshold, inlined
        if not self.stop_alloc and self._count:
            if self._stale:  # _current_threshold, with _update_threshold's arithmetic
                self._stale = False
                n, a = self.allocated, self.arrivals
                if n and a >= 2 and self._last_arrival > self._first_arrival:
                    d = self.total_delay / n
                    self._threshold = d * d * ((a - 1) / (self._last_arrival - self._first_arrival))
                else:
                    self._threshold = None
            t = self._threshold
            if t is not None:
                ages, waiting = self._ages, self._waiting
                while True:  # _oldest: the count says a job waits
                    _, _, job, jk = ages[0]
                    if waiting.get(job.id) is job:
                        break
                    if self._fifo:  # _drop_age
                        ages.popleft()
                    else:
                        heapq.heappop(ages)
                if now >= job.submit + t:
                    self.stop_alloc, self.Q_j, self.priority_job = True, jk, job.id
        q = self.queues[k]
        if q and not self.stop_alloc:  # step 2: hand the subsystem over
            head = q[0]
            if self._reusable(alloc, head):
                # _pop_head, _start_on and _record_start inlined; the allocation's class
                # is k, the class it was counted in
                q.popleft()
                hid = head.id
                del self._waiting[hid]
                self._count -= 1
                if hid == self.priority_job:
                    self.stop_alloc, self.Q_j, self.priority_job = False, None, None
                s = self.running[hid] = new_start(head, alloc, now)
                self._alloc_class[hid] = k
                N[k] += 1
                self.allocated += 1
                self.total_delay += now - head.submit
                if self._dynamic:
                    self._stale = True
                started.append(s)
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
            self.allocator.release(alloc)  # _release
            self._releases += 1
            self._all_dirty = True
        elif not self._dirty and self._plain_pass and not self._all_dirty and not self.stop_alloc:
            return started  # handed over: nothing released, no queue changed, _schedule starts nothing
        return started + self._schedule(now)

    def _reusable(self, alloc, head) -> bool:
        """Whether the departing allocation serves ``head`` as it is: unfolded, the very
        request the allocator would make for the head, and (under the live daemon's
        quarantine) no node of it down."""
        if alloc.folds:
            return False
        r = self._normalized.get(head.request)
        if r is None:
            r = self._normalize(head.request)
        if r is not alloc.request and r != alloc.request:
            return False
        down = getattr(self.allocator, "down", None)
        return not down or down.isdisjoint(alloc.nodes)

    def _schedule(self, now):
        if not self._plain_pass or self.stop_alloc:
            return self._schedule_general(now)
        # The retry pass alone (no threshold check, stop_alloc not set): _schedule_general's
        # loop reduced to what it does then -- one pass over the queues that may start
        # something, after which nothing it did (starts release nothing and change no
        # queue) could start more.
        if not self._count:
            return []
        queues, N = self.queues, self.N
        if self._all_dirty:
            over = [(q[0].submit, k) for k, q, n in zip(self._ks, queues, N) if len(q) > n]
            self._all_dirty = False
        elif self._dirty:
            over = [(queues[k][0].submit, k) for k in self._dirty if len(queues[k]) > N[k]]
        else:
            return []
        self._dirty.clear()
        if not over:
            return []
        if len(over) > 1:
            over.sort()
        started = []
        for _, k in over:
            self._fill(k, now, started)
        return started

    def _fill(self, k, now, started) -> bool:
        """Start heads of Q_k while |Q_k| > N_k and they fit (_start_head, _pop_head and
        _record_start inlined: the retry pass makes most allocation attempts); whether any
        started. Called once per queue that may start something, not per job."""
        q, N = self.queues[k], self.N
        failed, waiting = self._failed, self._waiting
        n0 = len(started)
        while len(q) > N[k]:
            head = q[0]
            hid = head.id
            key = (self._releases, hid)
            if failed[k] == key:
                break  # nothing released since this head failed: it would fail again
            alloc = self.allocator.allocate(head.request)
            if alloc is None:
                failed[k] = key
                break
            q.popleft()
            del waiting[hid]
            self._count -= 1
            if hid == self.priority_job:
                self.stop_alloc, self.Q_j, self.priority_job = False, None, None
            s = self.running[hid] = new_start(head, alloc, now)
            rk = self._class_cache.get(alloc.request)
            if rk is None:
                rk = self._size_class(alloc.request)
            self._alloc_class[hid] = rk
            N[rk] += 1
            self.allocated += 1
            self.total_delay += now - head.submit
            if self._dynamic:
                self._stale = True
            started.append(s)
        return len(started) > n0

    def _schedule_general(self, now):
        if self.literal:
            return self._literal_request(now)
        started = []
        queues, N, ages, waiting = self.queues, self.N, self._ages, self._waiting
        check_events = self._check_events
        while self._count:
            if check_events and not self.stop_alloc and (
                    self._current_threshold() if self._stale else self._threshold) is not None:
                # _check_threshold, inlined: it runs once or twice per event.
                while True:
                    _, _, job, k = ages[0]
                    if waiting.get(job.id) is job:
                        break
                    self._drop_age()
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
                progressed = self._fill(k, now, started) or progressed
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
            "threshold_check": self.threshold_check,
            "next_wakeup": self.next_wakeup(),
            "running": sorted(self.running, key=str),
        }


__all__ = ["Lazy"]
