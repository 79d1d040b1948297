"""``bwq``: the BWQ multi-queue search of dissertation chapter 7, section 7.3.

Jobs are grouped by size into q queues Q0 (smallest jobs) .. Q_{q-1} (7.3.1, Figure 7.3);
the Between Queue (BQ) policy chooses the queue, the Within Queue (WQ) policy the job.

* BQ (7.3.1): start at Q0; a queue whose jobs have all been scheduled hands the turn to the
  next non-empty queue "in circular-right pattern". If no job of the current queue can be
  allocated, the scheduler "moves back to a non-empty queue that holds smaller jobs"; each
  such return raises the priority P of the passed jobs by 1, and when a passed job's P has
  reached its queue's BQSL (Between Queue Search Limit) the scheduler "is blocked to schedule
  the starving job". A BQSL of 0 makes the queue blocking FCFS (7.3.3: Q0 "is designed as a
  FCFS queue", BQSL 0).
* WQ (7.3.2): a lookahead window of the first n jobs of the queue; the first job in it that
  fits is started and the window is taken again from the head.
* Qboundary (7.3.3): set when the scheduler first considers a queue, at its last job; jobs
  arriving later are not candidates until every job below the boundary has been scheduled
  (the pass), so a stream of arrivals to one queue cannot hold the turn for ever.

Parameters (keyword, defaults from the dissertation's tuned values):
``queues=3`` (7.3.3: "3 queues are enough"); ``limits`` (see ``_size_classes``; default the
``rect-unrestricted`` quantiles, chapter 7's input, so that each queue expects the same number
of arrivals); ``bqsl`` per queue (default Q0 = 0, the last queue 1, any middle queue 10:
Figure 7.9's "Q1 with BQSL = 10 and Q2 with BQSL = 1"; one queue is plain FCFS);
``window`` per queue (default 1 for Q0, 4 for the others); ``back`` = ``"smallest"`` or
``"previous"``.

Readings where the text leaves a gap:

* **Returning to smaller queues is a side trip.** The pointer stays on the blocked queue
  (which keeps its Qboundary: "only the current queue ... has a Qboundary ... it remains
  until all jobs below the Qboundary have been scheduled"); the scheduler serves the smaller
  non-empty queues with their own WQ policy and no boundary, non-blocking, then waits for
  the next event, at which the blocked queue is tried first again. ``back="smallest"``
  visits Q0 upward, ``"previous"`` the nearest smaller queue downward (the text allows both:
  "may move to the queue with the smallest jobs or to the previous non-empty queue").
* **What counts as a pass.** P counts "the number of times the scheduler can return to
  queues holding smaller jobs": every job in the failed window gets +1 at each return. When
  no smaller queue holds a job there is nothing to return to: the scheduler just waits and
  P is unchanged.
* **Blocking.** When the window fails and a window job already has P >= BQSL, the scheduler
  blocks on the first such job: until it starts only it is tried, and nothing else in any
  queue is started ("the scheduler is blocked to schedule the 'starving' job").
* **The window anchors at the head.** After a start the window is again the first n jobs
  (of the current pass): "looks to the next n jobs" read so that no passed job falls out of
  the window behind it.
* **Figure 7.8's window sizes were lost with the figure**; 4 is our choice ("large
  lookahead windows improve the performance"). Windows are measured in jobs of the pass.
"""
from __future__ import annotations

from itertools import islice

from scheduler.disciplines import register
from scheduler.disciplines._size_classes import ClassQueues, MemoStart, SizeClasses, check_params, per_queue
from scheduler.disciplines.base import Discipline, DisciplineError, remove_job

_NO_BOUND = float("inf")


def _default_bqsl(q: int) -> tuple[int, ...]:
    if q == 1:
        return (0,)
    return (0,) + (10,) * (q - 2) + (1,)


@register("bwq")
class BWQ(ClassQueues, MemoStart, Discipline):
    """BWQ: size-class queues, circular-right BQ policy with BQSL, lookahead windows, Qboundary."""

    PARAMS = ("queues", "limits", "bqsl", "window", "back")

    def __init__(self, topology, allocator, **params):
        check_params("bwq", params, self.PARAMS)
        super().__init__(topology, allocator)
        self._memo_failed: dict = {}
        self.classes = SizeClasses("bwq", topology, allocator, params.get("queues"),
                                   params.get("limits"), 3, "rect-unrestricted")
        q = self.classes.count
        self.bqsl = per_queue("bwq", "bqsl", params.get("bqsl"), q, _default_bqsl(q), 0)
        self.window = per_queue("bwq", "window", params.get("window"), q, (1,) + (4,) * (q - 1), 1)
        self.back = params.get("back", "smallest")
        if self.back not in ("smallest", "previous"):
            raise DisciplineError(f"bwq parameter back must be 'smallest' or 'previous', got {self.back!r}")
        self._init_queues()
        self.blocked_on = None  # id of the starving job the scheduler waits for
        self.priority: dict = {}  # waiting job id -> P (times passed)

    # ------------------------------------------------------------------ hooks

    def _enqueue(self, job, now):
        self._put(job)
        self.priority[job.id] = 0

    def _dequeue(self, job_id):
        remove_job(self.queues[self._where[job_id]], job_id, paired=True)
        self._forget(job_id)

    def _forget(self, job_id):
        del self._where[job_id]
        del self.priority[job_id]
        if self.blocked_on == job_id:
            self.blocked_on = None

    def _window_start(self, c: int, now: float, bound: float):
        """Start the first job of queue c's lookahead window (jobs with seq <= bound) that
        fits; None when none does."""
        q = self.queues[c]
        for k, (seq, job) in enumerate(islice(q, self.window[c])):
            if seq > bound:
                break
            s = self._attempt(job, now)
            if s is not None:
                del q[k]
                self._forget(job.id)
                return s
        return None

    def _schedule(self, now):
        started: list = []
        qs = self.queues
        while self._where:
            if self.boundary is None:
                c = self._next_nonempty(self.current)
                if c is None:
                    break
                self.current, self.boundary = c, qs[c][-1][0]
            c, q = self.current, qs[self.current]
            if not q or q[0][0] > self.boundary:
                # Every job below the Qboundary is scheduled: circular right.
                self.current, self.boundary = (c + 1) % len(qs), None
                continue
            if self.blocked_on is not None:
                k = next((k for k, (_, j) in enumerate(q) if j.id == self.blocked_on), None)
                if k is None:  # cannot happen: the starving job stays in the current pass
                    self.blocked_on = None
                    continue
                job = q[k][1]
                s = self._attempt(job, now)
                if s is None:
                    break
                del q[k]
                self._forget(job.id)
                started.append(s)
                continue
            s = self._window_start(c, now, self.boundary)
            if s is not None:
                started.append(s)
                continue
            win = [job for seq, job in islice(q, self.window[c]) if seq <= self.boundary]
            limit = self.bqsl[c]
            starving = next((j for j in win if self.priority[j.id] >= limit), None)
            if starving is not None:
                self.blocked_on = starving.id
                break
            smaller = [i for i in range(c) if qs[i]]
            if not smaller:
                break  # nowhere to return to: wait for a departure
            for j in win:
                self.priority[j.id] += 1
            if self.back == "previous":
                smaller.reverse()
            for i in smaller:
                while qs[i]:
                    s = self._window_start(i, now, _NO_BOUND)
                    if s is None:
                        break
                    started.append(s)
            break
        return started

    # ------------------------------------------------------------------ views

    def snapshot(self):
        queues = []
        for i, q in enumerate(self.queues):
            queues.append(self._mark_pass(i, {
                "name": f"Q{i}",
                "sizes": self.classes.bounds(i),
                "bqsl": self.bqsl[i],
                "window": self.window[i],
                "jobs": [j.id for _, j in q],
                "priority": {str(j.id): self.priority[j.id] for _, j in q if self.priority[j.id]},
            }))
        snap = {
            "discipline": self.name,
            "queues": queues,
            "current": f"Q{self.current}",
            "boundary": None,
            "blocked_on": self.blocked_on,
            "back": self.back,
            **self.classes.describe(),
            "running": sorted(self.running, key=str),
        }
        q = self.queues[self.current]
        if self.boundary is not None:
            in_pass = [j.id for seq, j in q if seq <= self.boundary]
            snap["boundary"] = {"queue": f"Q{self.current}", "last_job": in_pass[-1] if in_pass else None}
        if self.blocked_on is not None:
            snap["blocked"] = (
                f"Q{self.current} is blocked on starving job {self.blocked_on} "
                f"(P reached BQSL {self.bqsl[self.current]})"
            )
        return snap


__all__ = ["BWQ"]
