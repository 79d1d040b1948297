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

**Held jobs.** Under the live daemon some nodes may be down (scheduler.quarantine). A job that
cannot be allocated at all while they are out (``allocator.unavailable(request)``: the
allocator's own structures, not a count of nodes) is *held*: set aside with a reason (Slurm's
``ReqNodeNotAvail``) instead of being queued, so it never blocks smaller jobs through a
discipline's blocking state (FCFS's head of line, lazy's stop_alloc). Jobs already waiting
when a node goes down are set aside at the next call; when the down set changes again the
held jobs that fit are given back to the discipline (``_reinstate``, by submit time) and
tried in the same pass. ``held()`` lists them with their reasons, ``snapshot()`` adds them.
While no node is down and nothing is held (a simulation, always), none of this runs: the
driver calls are the discipline's own methods, wrapped only while the down set is not
empty (instance attributes, as the quarantine does), so a simulation pays nothing.

Subclasses implement ``_enqueue(job, now)`` (put a new job in its queue),
``_schedule(now) -> list[Start]`` (start what the policy allows), ``_dequeue(job_id)``
(take a waiting job out, for cancel) and ``waiting()``; they may override ``_on_release``
to act on the freed allocation before the general pass (lazy hands it to the head of Q_k).
"""
from __future__ import annotations

from scheduler.decisions import Start, new_start
from scheduler.jobs import Job, JobError, check_time
from scheduler.quarantine import DownSet, held_reason

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
        # held jobs (see the module docstring): id -> Job, in the order they were held
        self._held: dict = {}
        self._recheck = False  # the down set changed since the held jobs were last sorted out
        down = getattr(allocator, "down", None)
        self._down = down if isinstance(down, DownSet) else None
        if self._down is not None:
            self._down._watchers.append(self._down_changed)
            if self._down:
                self._down_changed()

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
        """The down set changed (scheduler.quarantine; ``Stack.mark_up``, ``mark_down`` with a
        time): held jobs are sorted out and a scheduling pass runs, as at a timer."""
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

    # ------------------------------------------------------------------ held jobs

    _GUARDED = ("arrive", "depart", "cancel", "tick", "snapshot")

    def held(self) -> dict:
        """Held jobs: id -> (job, reason), in the order they were held."""
        return {jid: (job, self._held_reason(job)) for jid, job in self._held.items()}

    def _held_reason(self, job: Job) -> str:
        return held_reason(job.request, self._down)

    def _down_changed(self) -> None:
        """The quarantine's down set changed (a DownSet watcher): sort the held jobs out at
        the next driver call, and wrap the driver calls while anything is down or held."""
        self._recheck = True
        self._guard()

    def _guard(self) -> None:
        d = self.__dict__
        if self._down or self._held:
            if "arrive" not in d:
                for name in self._GUARDED:
                    d[name] = getattr(self, "_held_" + name)
        else:
            for name in self._GUARDED:
                d.pop(name, None)

    def _sort_held(self, now: float) -> None:
        """After a change of the down set: hold the waiting jobs that cannot be allocated any
        more, give back (by submit time) the held ones that can."""
        if not self._recheck:
            return
        self._advance(now)  # a time that went backwards raises here, before any change
        self._recheck = False
        down, held = self._down, self._held
        unavailable = self._unavailable
        if down:
            for job in self.waiting():
                if unavailable(job.request):
                    self._dequeue(job.id)
                    held[job.id] = job
        back = [j for j in held.values() if not down or not unavailable(j.request)]
        back.sort(key=lambda j: j.submit)
        for job in back:
            del held[job.id]
            self._reinstate(job, now)
        self._guard()

    def _reinstate(self, job: Job, now: float) -> None:
        """A held job fits again: back into the discipline's queues (a discipline that keeps
        an order of its own may put it back in its place)."""
        self._enqueue(job, now)

    def _held_arrive(self, job: Job, now: float) -> list[Start]:
        self._sort_held(now)
        if self._down and self._unavailable(job.request):  # a refusal raises first
            self._admit(job, now)
            self._held_arrival(job, now)
            self._known.add(job.id)
            self._held[job.id] = job
            return self._schedule(now)
        return type(self).arrive(self, job, now)

    def _unavailable(self, request) -> bool:
        """Whether ``request`` cannot be allocated at all while the down nodes are out (the
        allocator's ``unavailable``: scheduler.quarantine, size reduction, static's
        partitions); an allocator that cannot tell never holds a job."""
        check = getattr(self.allocator, "unavailable", None)
        return bool(check and check(request))

    def _held_arrival(self, job: Job, now: float) -> None:
        """A job held at its arrival (a discipline that measures arrivals counts it here)."""

    def _held_depart(self, job_id, now: float) -> list[Start]:
        self._sort_held(now)
        return type(self).depart(self, job_id, now)

    def _held_cancel(self, job_id, now: float) -> list[Start]:
        self._sort_held(now)
        if job_id in self._held and job_id not in self.running:
            self._advance(now)
            del self._held[job_id]
            self._known.discard(job_id)
            self._guard()
            return self._schedule(now)
        return type(self).cancel(self, job_id, now)

    def _held_tick(self, now: float) -> list[Start]:
        self._sort_held(now)
        return type(self).tick(self, now)

    def _held_snapshot(self) -> dict:
        snap = type(self).snapshot(self)
        if self._held:
            snap["held"] = [{"id": jid, "request": str(job.request), "reason": reason}
                            for jid, (job, reason) in self.held().items()]
        return snap

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
        s = self.running[job.id] = new_start(job, alloc, now)
        return s

    def _start_on(self, job: Job, allocation, now: float) -> Start:
        """Record ``job`` running on an allocation the policy obtained itself."""
        s = self.running[job.id] = new_start(job, allocation, now)
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
