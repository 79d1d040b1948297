"""The discipline (job scheduler) contract.

A discipline decides which waiting job is tried next. It owns an allocator (possibly wrapped
by size reduction) and is driven by three calls, each with the current time as an argument:

    arrive(job, now)    -> [Start, ...]   a job is submitted
    depart(job_id, now) -> [Start, ...]   a running job finished; its allocation is released
    tick(now)           -> [Start, ...]   a timer the discipline asked for (next_wakeup())

plus ``cancel(job_id, now)`` and ``retry(now)`` (nodes came back): the policy interface of
:mod:`scheduler.decisions`, which the gang policies implement too. Each returns the jobs to start now. Times must not go
backwards; a job that can never fit is refused at arrival with a RequestError and changes
nothing. The same object runs under the simulator (virtual time) and the daemon (wall clock
divided by the time unit), so nothing here may assume which.

Subclasses implement ``_enqueue(job, now)`` (put a new job in its queue),
``_schedule(now) -> list[Start]`` (start what the policy allows), ``_dequeue(job_id)``
(take a waiting job out, for cancel) and ``waiting()``; they may override ``_on_release``
to act on the freed allocation before the general pass (lazy hands it to the head of Q_k).
"""
from __future__ import annotations

from scheduler.decisions import Start
from scheduler.jobs import Job, JobError, check_time

_INF = float("inf")


class DisciplineError(ValueError):
    pass


class Discipline:
    kinds: tuple[str, ...] = ("hypercube", "mesh")
    registry_name = ""

    def __init__(self, topology, allocator, **params):
        if topology.kind not in self.kinds:
            raise DisciplineError(
                f"discipline {self.name!r} works on {' or '.join(self.kinds)}, not {topology}"
            )
        if params:
            raise TypeError(f"discipline {self.name!r} takes no parameters {sorted(params)}")
        self.topology = topology
        self.allocator = allocator
        self.now = 0.0
        self.running: dict = {}  # job id -> Start
        self._known: set = set()  # ids of waiting or running jobs
        # request -> allocator.normalize(request), successes only (a refusal raises every
        # time): normalize is a pure function of the request, asked at every arrival.
        self._normalized: dict = {}
        self._class_cache: dict = {}  # request -> topology.size_class(request)

    @property
    def name(self) -> str:
        return type(self).registry_name or type(self).__name__

    # ------------------------------------------------------------------ driver API

    def arrive(self, job: Job, now: float) -> list[Start]:
        self._admit(job, now)
        self._known.add(job.id)
        self._enqueue(job, now)
        return self._schedule(now)

    def depart(self, job_id, now: float) -> list[Start]:
        self._advance(now)
        start = self.running.pop(job_id, None)
        if start is None:
            raise JobError(f"job {job_id} is not running")
        self._known.discard(job_id)
        self.allocator.release(start.allocation)
        return self._on_release(start, now) + self._schedule(now)

    def cancel(self, job_id, now: float) -> list[Start]:
        """Remove a waiting job, or stop a running one and release its nodes."""
        self._advance(now)
        if job_id in self.running:
            return self.depart(job_id, now)
        if job_id not in self._known:
            raise JobError(f"job {job_id} is neither waiting nor running")
        self._dequeue(job_id)
        self._known.discard(job_id)
        return self._schedule(now)

    def tick(self, now: float) -> list[Start]:
        self._advance(now)
        return self._schedule(now)

    def retry(self, now: float) -> list[Start]:
        """Nodes came back into service (scheduler.quarantine): a scheduling pass, as at a
        timer."""
        return self.tick(now)

    def next_wakeup(self) -> float | None:
        """The earliest time the discipline wants ``tick`` called, if any (a waiting-time
        threshold that expires with no arrival or departure)."""
        return None

    # ------------------------------------------------------------------ views

    def waiting(self) -> list[Job]:
        """Waiting jobs in the order the discipline would consider them."""
        raise NotImplementedError

    def snapshot(self) -> dict:
        """A JSON-able view of the queues as this discipline sees them (for the monitor)."""
        return {
            "discipline": self.name,
            "queues": [{"name": "queue", "jobs": [j.id for j in self.waiting()]}],
            "running": sorted(self.running, key=str),
        }

    # ------------------------------------------------------------------ helpers

    def _admit(self, job: Job, now: float) -> None:
        """The checks of an arrival, before any change: time moves on, the id is new, the
        request can fit (RequestError otherwise)."""
        self._advance(now)
        if job.id in self._known:
            raise JobError(f"job {job.id} is already known to the scheduler")
        if job.request not in self._normalized:
            self._normalize(job.request)

    def _advance(self, now: float) -> None:
        if type(now) is float and self.now <= now < _INF:  # the hot path: a valid, later time
            self.now = now
            return
        check_time(now, "now")
        if now < self.now:
            raise JobError(f"time went backwards: {now} < {self.now}")
        self.now = now

    def normalize(self, request):
        """The request as the policy would allocate it (a count rounded up to its cube or
        submesh), remembered; RequestError when it can never fit (nothing changes)."""
        r = self._normalized.get(request)
        if r is None:
            r = self._normalized[request] = self.allocator.normalize(request)
        return r

    _normalize = normalize  # the name the policies call it by

    def _size_class(self, request) -> int:
        """``topology.size_class(request)``, remembered: the per-size queue of scan, static
        and lazy."""
        k = self._class_cache.get(request)
        if k is None:
            k = self._class_cache[request] = self.topology.size_class(request)
        return k

    def _try_start(self, job: Job, now: float) -> Start | None:
        """Allocate for ``job``; on success record it running and return the decision."""
        alloc = self.allocator.allocate(job.request)
        if alloc is None:
            return None
        s = Start(job, alloc, now)
        self.running[job.id] = s
        return s

    def _start_on(self, job: Job, allocation, now: float) -> Start:
        """Record ``job`` running on an allocation the policy obtained itself."""
        s = Start(job, allocation, now)
        self.running[job.id] = s
        return s

    # ------------------------------------------------------------------ policy hooks

    def _enqueue(self, job: Job, now: float) -> None:
        raise NotImplementedError

    def _dequeue(self, job_id) -> None:
        raise NotImplementedError

    def _schedule(self, now: float) -> list[Start]:
        raise NotImplementedError

    def _on_release(self, start: Start, now: float) -> list[Start]:
        return []


def remove_job(queue, job_id, paired: bool = False) -> int | None:
    """Delete waiting job ``job_id`` from ``queue`` (a deque or list of jobs, or of (seq, job)
    pairs when ``paired``); the index it had, None when it is not there (for cancel)."""
    for i, e in enumerate(queue):
        if (e[1] if paired else e).id == job_id:
            del queue[i]
            return i
    return None


__all__ = ["Discipline", "DisciplineError", "remove_job"]
