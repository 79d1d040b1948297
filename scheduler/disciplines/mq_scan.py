"""``mq-scan``: MQ-SCAN, the multiple-queue c-scan that dissertation chapter 8 compares HELM
with (sections 8.2.1 and 8.3).

The text gives only this: "MQ-SCAN is the job scheduling algorithm using Multiple Queues in
which jobs are scanned similarly to the c-scan algorithm for disk scheduling. This algorithm
is a variation of the 'scan' algorithm in [15] [Krueger et al.], that is originally designed
for hypercube multicomputers"; 5 queues are used from 8.2.1 on; "as the number of queues
increases ... a greater number of small jobs can be considered for allocation" (8.2.1); and
8.3.2 credits MQ-SCAN and HELM with a "non-blocking aspect". Chapter 7's introduction
describes scan as "job arrivals are placed in multiple queues corresponding to the sizes ...
Jobs are scheduled by scanning through the non-empty queues".

Our reading, chosen to match those statements:

* q FCFS queues by size (``_size_classes``; default 5 queues with the ``processors``
  quantiles, chapter 8's uniform processor-count input, so each queue expects the same
  number of arrivals). On a hypercube the preset groups cube dimensions instead.
* **c-scan pointer.** One queue is in service. The scheduler starts its head jobs in FCFS
  order; when the queue has no job of the current pass left, the turn moves to the next
  non-empty queue of larger jobs, wrapping from the largest to the smallest (c-scan, one
  direction only, like ``scan-up``).
* **Pass boundary** (``boundary=True``, default): the pass of a queue holds the jobs present
  when the scan reached it; later arrivals wait for the next visit, Krueger et al.'s
  starvation-free scan (lazy journal 2.3). ``boundary=False`` serves arrivals during service.
* **Non-blocking** (``nonblocking=True``, default). The text never says what MQ-SCAN does
  when the head of the queue in service does not fit: Krueger's scan (lazy journal 2.3, our
  ``scan-up``) waits, and only 8.3.2's "non-blocking aspect of the schemes", said of MQ-SCAN
  and HELM together, suggests otherwise. ``nonblocking=False`` is the plain c-scan over q
  queues: a blocked head waits for a departure and nothing else starts.
  docs/results/helm-compare runs both: the chapter's claims (8.3) favour the non-blocking
  reading (4 of 10 sub-claims hold against 3 with the blocking one).
  Default: when the head of the queue in service does not fit, the scheduler does not wait: it sweeps the other queues once in scan order (the next larger ones, then round
  to the smallest), starting each one's head jobs FCFS until its head does not fit (all jobs
  of a swept queue are eligible). The pointer stays on the blocked queue, which is tried first
  at the next event. More queues thus offer more heads to a sweep, which is 8.2.1's "greater
  number of small jobs can be considered" and its rising L/S ratio.
"""
from __future__ import annotations

from scheduler.disciplines import register
from scheduler.disciplines._size_classes import ClassQueues, MemoStart, SizeClasses, check_params
from scheduler.disciplines.base import Discipline, DisciplineError, remove_job

_NO_BOUND = float("inf")


@register("mq-scan")
class MQScan(ClassQueues, MemoStart, Discipline):
    """MQ-SCAN: per-size FCFS queues served in c-scan order, non-blocking sweep when blocked."""

    PARAMS = ("queues", "limits", "boundary", "nonblocking")

    def __init__(self, topology, allocator, **params):
        check_params("mq-scan", params, self.PARAMS)
        super().__init__(topology, allocator)
        self._memo_failed: dict = {}
        self.classes = SizeClasses("mq-scan", topology, allocator, params.get("queues"),
                                   params.get("limits"), 5, "processors")
        self.use_boundary = params.get("boundary", True)
        if not isinstance(self.use_boundary, bool):
            raise DisciplineError(
                f"mq-scan parameter boundary must be true or false, got {self.use_boundary!r}")
        self.nonblocking = params.get("nonblocking", True)
        if not isinstance(self.nonblocking, bool):
            raise DisciplineError(
                f"mq-scan parameter nonblocking must be true or false, got {self.nonblocking!r}")
        self._init_queues()  # boundary: _NO_BOUND for a pass without one

    def _enqueue(self, job, now):
        self._put(job)

    def _dequeue(self, job_id):
        remove_job(self.queues[self._where.pop(job_id)], job_id, paired=True)

    def _serve(self, c: int, now: float, bound: float, started: list) -> bool:
        """Start queue c's head jobs (seq <= bound) while they fit; True if the head blocked."""
        q = self.queues[c]
        while q and q[0][0] <= bound:
            s = self._attempt(q[0][1], now)
            if s is None:
                return True
            q.popleft()
            del self._where[s.job.id]
            started.append(s)
        return False

    def _schedule(self, now):
        started: list = []
        qs, nq = self.queues, len(self.queues)
        while self._where:
            if self.boundary is None:
                c = self._next_nonempty(self.current)
                if c is None:
                    break
                self.current = c
                self.boundary = qs[c][-1][0] if self.use_boundary else _NO_BOUND
            c = self.current
            if not self._serve(c, now, self.boundary, started):
                self.current, self.boundary = (c + 1) % nq, None  # pass done: c-scan onward
                continue
            if self.nonblocking:
                for d in range(1, nq):
                    self._serve((c + d) % nq, now, _NO_BOUND, started)
            break
        return started

    def snapshot(self):
        queues = []
        for i, q in enumerate(self.queues):
            queues.append(self._mark_pass(
                i, {"name": f"Q{i}", "sizes": self.classes.bounds(i), "jobs": [j.id for _, j in q]}))
        snap = {
            "discipline": self.name,
            "queues": queues,
            "current": f"Q{self.current}",
            "boundary": self.use_boundary,
            "nonblocking": self.nonblocking,
            **self.classes.describe(),
            "running": sorted(self.running, key=str),
        }
        q = self.queues[self.current]
        if q and self.boundary is not None and q[0][0] <= self.boundary:
            head = q[0][1]
            snap["blocked"] = (
                f"Q{self.current} head job {head.id} ({head.request}) does not fit: "
                f"{self.allocator.free_count} of {self.topology.size} nodes free"
            )
        return snap


__all__ = ["MQScan"]
