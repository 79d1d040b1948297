"""The decisions every policy returns, and the one interface every policy implements.

DESIGN's boundary: a driver (the simulator in virtual time, the live daemon on the wall
clock) calls a policy with the time as an argument and acts on the decisions it returns.
Disciplines (``scheduler.disciplines``) and gang policies (``scheduler.gang``) speak this one
vocabulary, so a driver handles both with one loop:

* :class:`Start`   a job is given nodes now (a discipline's start; a gang policy's check-in,
                   whose tasks wait for a :class:`SlotSwitch` unless the job is sequential);
* :class:`Finish`  a job has left and its nodes are free (gang policies confirm a departure
                   or a cancel with it; a discipline's caller already knows the job it
                   departed, so disciplines return none);
* :class:`SlotSwitch` from ``time`` until ``until`` these jobs run and the others are kept
                   in (gang policies only, from ``tick``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Union, runtime_checkable

from scheduler.jobs import Job, execution_time


@dataclass(frozen=True, slots=True)
class Start:
    """Start ``job`` on ``allocation`` at ``time``.

    A gang policy also says where: ``row`` of its Ousterhout matrix for a parallel job, or
    ``node`` (and no allocation) for a sequential job put on that node's local queue.
    """

    job: Job
    allocation: object  # scheduler.allocators.base.Allocation; None for a sequential gang job
    time: float
    row: int | None = None
    node: int | None = None

    @property
    def runtime(self) -> float:
        """The run time on the nodes given: longer when size reduction folded the job."""
        a = self.allocation
        if a is None or not a.folds:
            return self.job.runtime
        return execution_time(self.job.runtime, a.asked.processors_needed, a.request.processors_needed)

    @property
    def wait(self) -> float:
        return self.time - self.job.submit

    @property
    def sequential(self) -> bool:
        return self.node is not None

    @property
    def nodes(self) -> tuple:
        """The job's nodes in ascending order (its ranks)."""
        if self.allocation is None:
            return (self.node,)
        return tuple(sorted(self.allocation.nodes))


# Start(job, allocation, time) for the disciplines' hot paths (issue 18): the same frozen
# object, its five slots set through their descriptors instead of the dataclass __init__'s
# object.__setattr__ calls (about half the cost of a start). START_SETTERS are those
# descriptors' setters in field order (job, allocation, time, row, node), for a path that
# cannot afford even new_start's call (fcfs's arrival).
START_SETTERS = tuple(Start.__dict__[f].__set__ for f in ("job", "allocation", "time", "row", "node"))


def new_start(job: Job, allocation, time: float, _new=object.__new__, _cls=Start, _set=START_SETTERS) -> Start:
    """``Start(job, allocation, time)``, equal in every way, made faster."""
    s = _new(_cls)
    _set[0](s, job)
    _set[1](s, allocation)
    _set[2](s, time)
    _set[3](s, None)
    _set[4](s, None)
    return s


@dataclass(frozen=True, slots=True)
class Finish:
    """``job_id`` left at ``time``: its nodes are released."""

    job_id: object
    time: float


@dataclass(frozen=True, slots=True)
class SlotSwitch:
    """From ``time`` until ``until`` (inf: until something changes) the jobs in ``running``
    are dispatched and every other registered job in ``suspended`` is kept in. ``primary`` is
    the job the servant pointer P points to (None: nothing runs), ``by_row`` the running jobs
    of each row, ``level`` the primary's level (multilevel policies) and ``slot`` the slot's
    number."""

    time: float
    until: float
    primary: object
    running: frozenset
    suspended: frozenset
    by_row: tuple = ()
    level: int | None = None
    slot: int = 0


Decision = Union[Start, Finish, SlotSwitch]


@runtime_checkable
class Policy(Protocol):
    """What a driver may call. Times never go backwards; a request that can never fit is
    refused at ``arrive`` with RequestError and changes nothing.

    After every call the driver calls ``tick(now)`` once ``next_wakeup()`` is not after
    ``now``; ``retry(now)`` after something the policy cannot see changed its resources (a
    node came back into service, or went out of it: ``Stack.mark_down`` with a time). A
    discipline also has ``held()``: the jobs it sets aside while down nodes leave no room
    for them, with their reasons (scheduler.disciplines.base); a gang policy holds none.
    """

    topology: object
    now: float

    @property
    def name(self) -> str: ...

    def arrive(self, job: Job, now: float) -> list: ...

    def depart(self, job_id, now: float) -> list: ...

    def cancel(self, job_id, now: float) -> list: ...

    def tick(self, now: float) -> list: ...

    def retry(self, now: float) -> list: ...

    def next_wakeup(self) -> float | None: ...

    def normalize(self, request): ...

    def waiting(self) -> list: ...

    def snapshot(self) -> dict: ...


__all__ = ["Decision", "Finish", "Policy", "SlotSwitch", "Start", "new_start"]
