"""Job records: what the daemon knows about one job, as ``mcemu queue`` and the journal show it.

A job is ``queued`` until the policy starts it, then ``running`` with one task per node of its
allocation (rank i on the i-th node in ascending order), then ``completed`` (every task exited
0), ``failed`` (a task exited otherwise, or it met more node faults than ``max_requeue``) or
``cancelled``. A job whose node goes down is requeued: same id, same submit time, a new
``attempt``. The records are changed by emulator.live.manager and its handler mixins only; the
journal's ``jobs`` table holds ``JobRec.row()`` of each.
"""
from __future__ import annotations

from scheduler.jobs import Job
from scheduler.topology import Request

ACTIVE = ("queued", "running")


class JobRec:
    __slots__ = ("id", "job", "name", "request", "runtime", "command", "burn", "state", "attempt", "faults",
                 "submit", "start", "end", "nodes", "allocation", "exit", "usage", "reason", "done",
                 "started", "exec_time", "all_started_wall", "pids", "local", "owner", "user", "comm")

    def __init__(self, id, request: dict, runtime: float, name="", command=None, burn=False, submit=0.0,
                 owner=None, user=None):
        self.id = id
        # the principal that submitted it (emulator.live.auth) and the local account its tasks
        # run as (None: the daemon's own)
        self.owner, self.user = owner, user
        self.request, self.runtime, self.name, self.command, self.burn = request, runtime, name, command, burn
        self.job = Job(id, submit, Request.from_dict(request), runtime, name)
        self.state, self.attempt, self.faults = "queued", 0, 0
        self.submit, self.start, self.end = submit, None, None
        self.nodes: list[int] = []
        self.allocation = None  # its description (text) while running
        self.exit, self.usage, self.reason = None, None, None
        self.done: dict[int, int] = {}  # rank -> exit status, this attempt
        self.started: set[int] = set()  # ranks whose task reported started, this attempt
        self.exec_time = runtime  # the run time on the nodes given (longer when folded)
        self.all_started_wall = None
        self.pids: dict[int, int] = {}  # rank -> task pid
        # a gang policy's sequential job (decisions.Start.sequential): it runs on its node's
        # local queue, never suspended by a slot switch
        self.local = False
        # message statistics of its tasks (emulator.live.interconnect; None: no messages)
        self.comm = None

    def requeue(self) -> None:
        """Back to the queue for another attempt (its node failed): same id and submit time."""
        self.state, self.nodes, self.allocation = "queued", [], None
        self.job = Job(self.id, self.submit, self.job.request, self.runtime, self.name)

    def task_done(self, rank: int, status: int, usage: dict | None, error: str | None) -> bool:
        """Count one task's end; True when it was the job's last task (``exit`` is then set)."""
        self.done[rank] = status
        if usage:
            self.usage = merge_usage(self.usage, usage)
        if error:
            self.reason = error
        if len(self.done) < len(self.nodes):
            return False
        self.exit = [self.done[r] for r in range(len(self.nodes))]
        return True

    def row(self) -> dict:
        """The journal's ``jobs`` row (emulator.live.journal.JOB_COLUMNS)."""
        return {"id": self.id, "name": self.name, "request": self.request, "runtime": self.runtime,
                "command": self.command, "burn": int(self.burn), "state": self.state,
                "attempt": self.attempt, "faults": self.faults, "submit": self.submit,
                "start": self.start, "end": self.end, "nodes": self.nodes or None,
                "allocation": self.allocation, "exit": self.exit, "usage": self.usage,
                "reason": self.reason, "owner": self.owner, "user": self.user, "comm": self.comm}

    def view(self) -> dict:
        """One row of ``mcemu queue --json``."""
        d = self.row()
        d["request_text"] = str(self.job.request)
        d["exec_time"] = self.exec_time
        return d


def merge_usage(total: dict | None, usage: dict) -> dict:
    """A job's resource usage over its tasks: ``max*`` keys take the maximum, the rest add up."""
    u = total or {}
    for k, v in usage.items():
        u[k] = max(u.get(k, 0.0), v) if k.startswith("max") else u.get(k, 0.0) + v
    return u


__all__ = ["ACTIVE", "JobRec", "merge_usage"]
