"""The registration office and its manager (Zhou, Brent and Qu 1997, section 2).

On every processor the parallel queue is a linked list, the *registration office*: a parallel
job checks in when it starts (a node holding a pointer to its process is added to the list of
every processor it runs on) and checks out when it finishes. Because a job is always inserted
at the same place everywhere, the lists of all processors stay in identical relative order.
A *servant* holds a pointer P; the process P points to is dispatched, every other registered
process is kept in. An *office manager* owns a timer (when P moves: the end of the scheduling
slot) and an algorithm (where P moves: the gang policy).

:class:`RegistrationOffice` is that list, kept per node for real (``list_on(node)``) next to
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
from scheduler.jobs import Job, JobError, check_time
from scheduler.topology import parse_topology


class GangError(ValueError):
    """Bad gang-policy parameters or a malformed call."""


class OfficeError(ValueError):
    """Checking in a job twice, checking out or pointing at an unregistered job."""


HEAD = object()  # ``check_in(..., after=HEAD)`` inserts at the head of the list


class RegistrationOffice:
    """The per-node linked lists of registered parallel jobs and the servant pointer P."""

    def __init__(self):
        self._order: list = []
        self._nodes: dict = {}  # job id -> tuple of node ids
        self._lists: dict = {}  # node -> list of job ids, in global order
        self.pointer = None

    def check_in(self, job_id, nodes, after=None) -> None:
        """Register ``job_id`` on ``nodes``: at the tail (``after=None``), at the head
        (``after=HEAD``) or right after the registered job ``after``."""
        if job_id in self._nodes:
            raise OfficeError(f"job {job_id} is already registered")
        nodes = tuple(nodes)
        if not nodes:
            raise OfficeError(f"job {job_id} has no nodes to register on")
        if after is None:
            idx = len(self._order)
        elif after is HEAD:
            idx = 0
        elif after in self._nodes:
            idx = self._order.index(after) + 1
        else:
            raise OfficeError(f"cannot insert after job {after}: it is not registered")
        self._order.insert(idx, job_id)
        self._nodes[job_id] = nodes
        rank = {j: i for i, j in enumerate(self._order)}
        mine = rank[job_id]
        for n in nodes:
            lst = self._lists.setdefault(n, [])
            # the nearest predecessor present on this node: count the ones that rank before us
            pos = 0
            while pos < len(lst) and rank[lst[pos]] < mine:
                pos += 1
            lst.insert(pos, job_id)

    def check_out(self, job_id) -> int:
        """Remove ``job_id`` from every node's list; returns the global index it had."""
        nodes = self._nodes.pop(job_id, None)
        if nodes is None:
            raise OfficeError(f"job {job_id} is not registered")
        idx = self._order.index(job_id)
        del self._order[idx]
        for n in nodes:
            lst = self._lists[n]
            lst.remove(job_id)
            if not lst:
                del self._lists[n]
        if self.pointer == job_id:
            self.pointer = None
        return idx

    def move(self, job_id, after=None) -> None:
        """Re-insert a registered job elsewhere, on all its nodes at once; P is kept."""
        if after is not None and after is not HEAD and after not in self._nodes:
            raise OfficeError(f"cannot move after job {after}: it is not registered")
        if after == job_id:
            raise OfficeError("cannot move a job after itself")
        p = self.pointer
        nodes = self._nodes.get(job_id)
        if nodes is None:
            raise OfficeError(f"job {job_id} is not registered")
        self.check_out(job_id)
        self.check_in(job_id, nodes, after)
        self.pointer = p

    def arrange(self, order) -> None:
        """Bring the list into ``order`` (a permutation of the registered jobs) by moves."""
        order = list(order)
        if sorted(map(repr, order)) != sorted(map(repr, self._order)) or len(set(order)) != len(order):
            raise OfficeError("arrange needs a permutation of the registered jobs")
        prev = HEAD
        for i, j in enumerate(order):
            if self._order[i] != j:
                self.move(j, prev)
            prev = j

    def point(self, job_id) -> None:
        if job_id is not None and job_id not in self._nodes:
            raise OfficeError(f"P cannot point at job {job_id}: it is not registered")
        self.pointer = job_id

    # ------------------------------------------------------------------ views

    @property
    def order(self) -> tuple:
        return tuple(self._order)

    def list_on(self, node) -> tuple:
        return tuple(self._lists.get(node, ()))

    def nodes_of(self, job_id) -> tuple:
        return self._nodes[job_id]

    def index(self, job_id) -> int:
        return self._order.index(job_id)

    def nodes_with_lists(self) -> list:
        return sorted(self._lists)

    def __contains__(self, job_id) -> bool:
        return job_id in self._nodes

    def __len__(self) -> int:
        return len(self._order)


# --------------------------------------------------------------------------- decisions


@dataclass(frozen=True, slots=True)
class Start:
    """``job`` checked in at ``time``: a parallel job placed in ``row`` on ``allocation``
    (its processes are created suspended until a SlotSwitch dispatches them), or a
    sequential job put on ``node``'s conventional queue (it runs at once)."""

    job: Job
    time: float
    allocation: object = None
    row: int | None = None
    node: int | None = None

    @property
    def sequential(self) -> bool:
        return self.node is not None


@dataclass(frozen=True, slots=True)
class Finish:
    """``job_id`` checked out at ``time`` (its nodes are released)."""

    job_id: object
    time: float


@dataclass(frozen=True, slots=True)
class SlotSwitch:
    """From ``time`` until ``until`` (inf: until something changes) the jobs in ``running``
    are dispatched and every other registered job in ``suspended`` is kept in. ``primary`` is
    the job P points to (None: nothing runs), ``by_row`` the running jobs of each row,
    ``level`` the primary's level (multilevel policies) and ``slot`` the slot's number."""

    time: float
    until: float
    primary: object
    running: frozenset
    suspended: frozenset
    by_row: tuple = ()
    level: int | None = None
    slot: int = 0


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
                 local_sequential: bool = True, **params):
        if params:
            raise GangError(f"gang policy {self.name!r} takes no parameters {sorted(params)}")
        self.topology = parse_topology(topology)
        if self.fixed_mpl is not None and mpl not in (None, self.fixed_mpl):
            raise GangError(f"gang policy {self.name!r} has MPL {self.fixed_mpl}; got mpl={mpl!r}")
        self.mpl = self.fixed_mpl or _count(4 if mpl is None else mpl, "mpl (rows of the Ousterhout matrix)")
        if not isinstance(allocator, str):
            raise GangError(f"allocator must be a registered name, got {allocator!r}")
        self.allocator_name = allocator
        self.rows = [allocators.create(allocator, self.topology)]
        self.row_jobs: list[list] = [[]]
        self.alternate = bool(alternate)
        self.local_sequential = bool(local_sequential)
        self.office = RegistrationOffice()
        self.batch: deque = deque()
        self.jobs: dict = {}
        self.local: dict = {}  # job id -> (Job, node)
        self.local_count = [0] * self.topology.size
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
        if job.id in self.jobs or job.id in self.local or any(j.id == job.id for j in self.batch):
            raise JobError(f"job {job.id} is already known to the gang scheduler")
        self.rows[0].normalize(job.request)  # never fits: RequestError, nothing changed
        if self.local_sequential and job.request.processors_needed == 1:
            counts = self.local_count
            node = min(range(len(counts)), key=counts.__getitem__)
            counts[node] += 1
            self.local[job.id] = (job, node)
            return [Start(job, now, node=node)]
        self.batch.append(job)
        return self._place(now)

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
        for j in self.batch:
            if j.id == job_id:
                self.batch.remove(j)
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

    def waiting(self) -> list:
        """Jobs not yet placed in a row (memory is full), in FCFS order."""
        return list(self.batch)

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
            "waiting": [job.id for job in self.batch],
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

    def _place(self, now: float) -> list:
        out = []
        while self.batch:
            job = self.batch[0]
            alloc, row = None, None
            for r in range(self.mpl):
                if r == len(self.rows):
                    self.rows.append(allocators.create(self.allocator_name, self.topology))
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
            out.append(Start(job, now, allocation=alloc, row=row))
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


__all__ = ["Finish", "GangError", "GangJob", "HEAD", "OfficeError", "OfficeManager",
           "RegistrationOffice", "SlotSwitch", "Start"]
