"""The registration office and its manager (Zhou, Brent and Qu 1997, section 2).

On every processor the parallel queue is a linked list, the *registration office*: a parallel
job checks in when it starts (a node holding a pointer to its process is added to the list of
every processor it runs on) and checks out when it finishes. Because a job is always inserted
at the same place everywhere, the lists of all processors stay in identical relative order.
A *servant* holds a pointer P; the process P points to is dispatched, every other registered
process is kept in. An *office manager* owns a timer (when P moves: the end of the scheduling
slot) and an algorithm (where P moves: the gang policy).

:class:`RegistrationOffice` (scheduler.gang.registration) is that list, kept per node for real (``list_on(node)``) next to
the global order it is the restriction of. "The same place" is defined by the global order:
a job inserted after job X lands, on each of its nodes, right after the nearest job at or
before X (in the global order) that is registered on that node.

:class:`OfficeManager` is the base of every gang policy. It is pure: time is an argument,
decisions are return values. Space sharing underneath is an Ousterhout matrix of up to
``mpl`` rows, each row an allocator of the configured name over the whole machine; a job is
placed, in FCFS order (the head of the batch queue blocks the rest), in the first row whose
allocator finds it an allocation. A slot dispatches the job P points to (the *primary*) and,
as in Ousterhout's matrix, the other jobs of its row (they sit on disjoint nodes); with
``alternate=True`` jobs of other rows whose nodes are all idle in this slot run too (taken in
office order). Only the primary is *visited* (its level and slot counters move); every
dispatched job accumulates attained service time.

Mixed workloads (the paper's local level, section 1 and [15]): a job that needs one processor
is sequential when ``local_sequential`` is true (the default). It is not registered in the
office and takes no row: it joins the conventional queue of the node with the fewest
sequential jobs (lowest id on ties) and runs there continuously, sharing the processor with
whatever parallel task the office dispatches on that node. How the processor is shared is the
driver's business (emulator.sim.gang: processor sharing; live: the OS scheduler).
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from scheduler import allocators
from scheduler.decisions import Finish, SlotSwitch, Start
from scheduler.gang.registration import HEAD, OfficeError, RegistrationOffice
from scheduler.quarantine import DownSet, Quarantine
from scheduler.jobs import Job, JobError, check_time
from scheduler.topology import parse_topology


class GangError(ValueError):
    """Bad gang-policy parameters or a malformed call."""


@dataclass(slots=True, eq=False)
class GangJob:
    """A registered parallel job as the office manager sees it."""

    job: Job
    row: int
    allocation: object
    nodes: tuple
    level: int = 0
    f: int = 0  # slots received at the current level (paper section 5)
    slots: int = 0  # times P pointed at it
    attained: float = 0.0  # time units it was dispatched
    since: float | None = None  # dispatched since (None: kept in)
    seq: int = 0  # order of entry to its level (FCFS among equals)
    extra: dict = field(default_factory=dict)

    @property
    def id(self):
        return self.job.id


def _positive(value, what: str, *, allow_inf: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or value <= 0:
        raise GangError(f"{what} must be a positive number, got {value!r}")
    if math.isinf(value) and not allow_inf:
        raise GangError(f"{what} must be finite, got {value!r}")
    return value


def _flag(value, what: str) -> bool:
    # bool("off") is True: a flag given as text would silently mean its opposite
    if not isinstance(value, bool):
        raise GangError(f"{what} must be true or false, got {value!r}")
    return value


def _count(value, what: str, *, allow_inf: bool = False):
    if allow_inf and isinstance(value, float) and math.isinf(value) and value > 0:
        return math.inf
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        more = " or math.inf" if allow_inf else ""
        raise GangError(f"{what} must be an integer >= 1{more}, got {value!r}")
    return value


class OfficeManager:
    """Base of the gang policies: the office, the Ousterhout rows, the slot timer.

    Driver contract (simulator and daemon alike): ``arrive``, ``depart`` and ``cancel``
    return Start/Finish decisions; only ``tick`` returns SlotSwitch decisions. After every
    call the driver calls ``tick(now)`` whenever ``next_wakeup()`` is not after ``now``.

    Subclasses implement ``_next(now) -> job id | None`` (where P moves) and
    ``_length(rec)`` (the slot length), and may override ``_admit(rec, now)``,
    ``_leave(rec, now)`` (called before check-out), ``_slot_ended(rec, now, completed)``,
    ``_checkin_after(rec)`` and ``_snapshot_extra()``.
    """

    registry_name = ""
    fixed_mpl: int | None = None

    def __init__(self, topology, allocator: str = "naive", *, mpl: int | None = None, alternate: bool = False,
                 local_sequential: bool = True, down=None, **params):
        if params:
            raise GangError(f"gang policy {self.name!r} takes no parameters {sorted(params)}")
        self.topology = parse_topology(topology)
        if self.fixed_mpl is not None and mpl not in (None, self.fixed_mpl):
            raise GangError(f"gang policy {self.name!r} has MPL {self.fixed_mpl}; got mpl={mpl!r}")
        self.mpl = self.fixed_mpl or _count(4 if mpl is None else mpl, "mpl (rows of the Ousterhout matrix)")
        if not isinstance(allocator, str):
            raise GangError(f"allocator must be a registered name, got {allocator!r}")
        self.allocator_name = allocator
        # nodes out of service, shared with the driver's stack (scheduler.stack): every row
        # is quarantined with it (a DownSet tells each of a change) and no sequential job is
        # put on such a node; None: every node is always in service
        self.down = down if down is None or isinstance(down, DownSet) else DownSet(down)
        self.rows = [self._new_row()]
        self.row_jobs: list[list] = [[]]
        self.alternate = _flag(alternate, "alternate")
        self.local_sequential = _flag(local_sequential, "local_sequential")
        self.office = RegistrationOffice()
        self.batch: deque = deque()
        self.jobs: dict = {}
        self.local: dict = {}  # job id -> (Job, node)
        self.local_count = [0] * self.topology.size
        self.local_wait: deque = deque()  # sequential jobs that found every node down
        self.now = 0.0
        self.primary = None
        self.slot_start: float | None = None
        self.slot_end: float | None = None
        self.running: frozenset = frozenset()
        self.slot_no = 0
        self._wake: float | None = None
        self._dirty = False

    @property
    def name(self) -> str:
        return type(self).registry_name or type(self).__name__

    # ------------------------------------------------------------------ driver API

    def arrive(self, job: Job, now: float) -> list:
        self._advance(now)
        if not isinstance(job, Job):
            raise JobError(f"arrive needs a Job, got {job!r}")
        if (job.id in self.jobs or job.id in self.local or any(j.id == job.id for j in self.batch)
                or any(j.id == job.id for j in self.local_wait)):
            raise JobError(f"job {job.id} is already known to the gang scheduler")
        self.rows[0].normalize(job.request)  # never fits: RequestError, nothing changed
        if self.local_sequential and job.request.processors_needed == 1:
            if self.local_wait:  # FCFS among sequential jobs too
                self.local_wait.append(job)
                return self._place_local(now)
            s = self._start_local(job, now)
            if s is None:
                self.local_wait.append(job)
                return []
            return [s]
        self.batch.append(job)
        return self._place(now)

    def retry(self, now: float) -> list:
        """Nodes came back into service: place the sequential jobs and the batch queue's head
        that found none."""
        self._advance(now)
        return self._place_local(now) + self._place(now)

    def depart(self, job_id, now: float) -> list:
        self._advance(now)
        if job_id in self.local:
            _, node = self.local.pop(job_id)
            self.local_count[node] -= 1
            return [Finish(job_id, now)]
        rec = self.jobs.get(job_id)
        if rec is None:
            raise JobError(f"job {job_id} is not running")
        if rec.since is not None:
            rec.attained += now - rec.since
            rec.since = None
        self._leave(rec, now)
        self.office.check_out(job_id)
        del self.jobs[job_id]
        self.rows[rec.row].release(rec.allocation)
        self.row_jobs[rec.row].remove(job_id)
        if job_id == self.primary:
            self._slot_ended(rec, now, True)
            self.primary = None
            self.slot_end = None
            self._wake = now
        if job_id in self.running:
            self.running = self.running - {job_id}
            self._dirty = True
            self._wake = now
        return [Finish(job_id, now)] + self._place(now)

    def cancel(self, job_id, now: float) -> list:
        """Take a job out wherever it is: the batch queue, a row or a node's local queue."""
        self._advance(now)
        for queue in (self.batch, self.local_wait):
            for j in queue:
                if j.id == job_id:
                    queue.remove(j)
                    return [Finish(job_id, now)] + self._place(now)
        return self.depart(job_id, now)

    def tick(self, now: float) -> list:
        self._advance(now)
        out = []
        if self.primary is not None and self.slot_end is not None and now >= self.slot_end:
            rec = self.jobs[self.primary]
            self._stop_all(now)
            self._slot_ended(rec, now, False)
            self.primary = None
            self.slot_end = None
        if self.primary is None:
            pid = self._next(now) if self.jobs else None
            if pid is None:
                self.office.point(None)
                self.slot_end = None
                if self.running or self._dirty:
                    self._stop_all(now)
                    out.append(self._switch(now, math.inf))
            else:
                rec = self.jobs[pid]
                rec.slots += 1
                self.office.point(pid)
                self.primary = pid
                self.slot_no += 1
                length = self._length(rec)
                self.slot_start = now
                self.slot_end = now + length
                self._dispatch(now)
                out.append(self._switch(now, self.slot_end))
        elif self._dirty:
            before = self.running
            self._dispatch(now)
            if self.running != before:
                out.append(self._switch(now, self.slot_end))
        self._dirty = False
        self._wake = None
        return out

    def next_wakeup(self) -> float | None:
        t = self._wake
        if self.slot_end is not None and math.isfinite(self.slot_end):
            t = self.slot_end if t is None else min(t, self.slot_end)
        return t

    # ------------------------------------------------------------------ views

    def normalize(self, request):
        """The request as a row would allocate it; RequestError when it can never fit."""
        return self.rows[0].normalize(request)

    def waiting(self) -> list:
        """Jobs not yet placed in a row (memory is full), in FCFS order, then sequential jobs
        that wait for a node in service."""
        return list(self.batch) + list(self.local_wait)

    def level_of(self, job_id) -> int:
        return self.jobs[job_id].level

    def snapshot(self) -> dict:
        def j(rec: GangJob) -> dict:
            return {"id": rec.id, "row": rec.row, "level": rec.level, "f": rec.f, "slots": rec.slots,
                    "attained": rec.attained, "state": "running" if rec.id in self.running else "suspended"}

        snap = {
            "policy": self.name,
            "mpl": self.mpl,
            "alternate": self.alternate,
            "rows": [{"row": r, "jobs": list(js)} for r, js in enumerate(self.row_jobs)],
            "office": {"order": list(self.office.order), "pointer": self.office.pointer},
            "slot": {"number": self.slot_no, "start": self.slot_start, "until": self.slot_end,
                     "primary": self.primary, "running": sorted(self.running, key=repr)},
            "jobs": [j(self.jobs[i]) for i in self.office.order],
            "waiting": [job.id for job in self.waiting()],
            "local": [{"id": i, "node": n} for i, (_, n) in self.local.items()],
        }
        if snap["slot"]["until"] is not None and math.isinf(snap["slot"]["until"]):
            snap["slot"]["until"] = None
        snap.update(self._snapshot_extra())
        return snap

    # ------------------------------------------------------------------ machinery

    def _advance(self, now: float) -> None:
        check_time(now, "now")
        if now < self.now:
            raise JobError(f"time went backwards: {now} < {self.now}")
        self.now = now

    def _new_row(self):
        a = allocators.create(self.allocator_name, self.topology)
        return a if self.down is None else Quarantine(a, self.down)

    def _start_local(self, job: Job, now: float):
        """Put a sequential job on the node with the fewest (lowest id on ties) that is in
        service; None when every node is down."""
        counts = self.local_count
        down = self.down
        if down:
            up = [n for n in range(len(counts)) if n not in down]
            if not up:
                return None
            node = min(up, key=counts.__getitem__)
        else:
            node = min(range(len(counts)), key=counts.__getitem__)
        counts[node] += 1
        self.local[job.id] = (job, node)
        return Start(job, None, now, node=node)

    def _place_local(self, now: float) -> list:
        out = []
        while self.local_wait:
            s = self._start_local(self.local_wait[0], now)
            if s is None:
                break
            self.local_wait.popleft()
            out.append(s)
        return out

    def _place(self, now: float) -> list:
        out = []
        while self.batch:
            job = self.batch[0]
            alloc, row = None, None
            for r in range(self.mpl):
                if r == len(self.rows):
                    self.rows.append(self._new_row())
                    self.row_jobs.append([])
                alloc = self.rows[r].allocate(job.request)
                if alloc is not None:
                    row = r
                    break
            if alloc is None:
                break  # FCFS: the head blocks the queue
            self.batch.popleft()
            rec = GangJob(job, row, alloc, tuple(sorted(alloc.nodes)))
            self.jobs[job.id] = rec
            self.row_jobs[row].append(job.id)
            self.office.check_in(job.id, rec.nodes, self._checkin_after(rec))
            self._admit(rec, now)
            out.append(Start(job, alloc, now, row=row))
            if self.primary is None:
                self._wake = now
            elif self.alternate or row == self.jobs[self.primary].row:
                self._dirty = True
                self._wake = now
        return out

    def _dispatch(self, now: float) -> None:
        """Run the primary's row (and alternates); keep in everything else."""
        prow = self.jobs[self.primary].row
        run = set(self.row_jobs[prow])
        if self.alternate:
            busy = set()
            for i in run:
                busy.update(self.jobs[i].nodes)
            for i in self.office.order:
                if i not in run and busy.isdisjoint(self.jobs[i].nodes):
                    run.add(i)
                    busy.update(self.jobs[i].nodes)
        for i in self.running - run:
            rec = self.jobs.get(i)
            if rec is not None and rec.since is not None:
                rec.attained += now - rec.since
                rec.since = None
        for i in run:
            if self.jobs[i].since is None:
                self.jobs[i].since = now
        self.running = frozenset(run)

    def _stop_all(self, now: float) -> None:
        for i in self.running:
            rec = self.jobs.get(i)
            if rec is not None and rec.since is not None:
                rec.attained += now - rec.since
                rec.since = None
        self.running = frozenset()

    def _switch(self, now: float, until: float) -> SlotSwitch:
        by_row = tuple(tuple(i for i in js if i in self.running) for js in self.row_jobs)
        level = self.jobs[self.primary].level if self.primary is not None else None
        return SlotSwitch(now, until, self.primary, self.running,
                          frozenset(self.jobs) - self.running, by_row, level, self.slot_no)

    # ------------------------------------------------------------------ policy hooks

    def _checkin_after(self, rec: GangJob):
        return None  # tail of the office list

    def _admit(self, rec: GangJob, now: float) -> None:
        pass

    def _leave(self, rec: GangJob, now: float) -> None:
        pass

    def _slot_ended(self, rec: GangJob, now: float, completed: bool) -> None:
        pass

    def _next(self, now: float):
        raise NotImplementedError

    def _length(self, rec: GangJob) -> float:
        raise NotImplementedError

    def _snapshot_extra(self) -> dict:
        return {}


__all__ = ["GangError", "GangJob", "HEAD", "OfficeError", "OfficeManager", "RegistrationOffice"]
