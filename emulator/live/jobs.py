"""Job records: what the daemon knows about one job, as ``mcemu queue`` and the journal show it.

A job is ``queued`` until the policy starts it, then ``running`` with one task per node of its
allocation (rank i on the i-th node in ascending order), then ``completed`` (every task exited
0), ``failed`` (a task exited otherwise, or it met more faults than ``max_requeue``: nodes
lost, the interconnect) or ``cancelled``. A job whose node goes down is requeued: same id,
same submit time, a new ``attempt``. The records are changed by emulator.live.manager and its handler mixins only; the
journal's ``jobs`` table holds ``JobRec.row()`` of each.
"""
from __future__ import annotations

from emulator.live import protocol as P
from scheduler.jobs import Job
from scheduler.topology import Request

# Seconds a failing job's other tasks get to end by themselves before they are killed (the daemon's
# ``_abort``): time to write what they were writing (the deadlock error's traceback), not to compute
# on. The interconnect reports a deadlock on a rank that ended only after it (ic_virtual ``check``).
ABORT_GRACE = 1.0

ACTIVE = ("queued", "running")
TAIL_LINES, TAIL_CHARS = 5, 400  # of a failed task's output, in its job's ``failure`` and reason
# control characters (C0, DEL, C1) but the newline that separates a tail's lines
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7f, 0xa0)) if c != 0x0a}
_CONTROLS.update({0x09: "\\t", 0x0d: "\\r"})


def escape_controls(text: str) -> str:
    """``text`` with its control characters written as escapes (``\\x1b``, ``\\t``): a task's
    output shown in another user's terminal cannot move its cursor or change its colours."""
    return text.translate(_CONTROLS)


def failure_reason(f: dict) -> str:
    """One line for ``mcemu queue``'s reason column: which task exited how, and its tail."""
    head = f"rank {f['rank']} on node {f['node']} exited {f['status']}"
    return head + (": " + f["tail"].replace("\n", " | ") if f.get("tail") else "")


class JobRec:
    __slots__ = ("id", "job", "name", "request", "runtime", "command", "burn", "state", "attempt", "faults",
                 "submit", "start", "end", "nodes", "allocation", "exit", "usage", "reason", "done",
                 "started", "exec_time", "all_started_wall", "pids", "local", "owner", "user", "comm", "failure",
                 "abort", "spare", "cwd", "stdin")

    def __init__(self, id, request: dict, runtime: float, name="", command=None, burn=False, submit=0.0,
                 owner=None, user=None, cwd=None, stdin=None):
        self.id = id
        # a command's working directory and rank 0's stdin on its nodes (None: the node agent's
        # directory, /dev/null): kept in the journal's submit event, not in a column of its own
        self.cwd, self.stdin = cwd, stdin
        # the principal that submitted it (emulator.live.auth) and the local account its tasks
        # run as (None: the daemon's own)
        self.owner, self.user = owner, user
        self.request, self.runtime, self.name, self.command, self.burn = request, runtime, name, command, burn
        self.job = Job(id, submit, Request.from_dict(request), runtime, name)
        self.state, self.attempt, self.faults = "queued", 0, 0
        self.submit, self.start, self.end = submit, None, None
        self.nodes: list[int] = []  # where its tasks run, rank by rank
        self.spare: list[int] = []  # the rest of its allocation: held, no task (``task_nodes``)
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
        # its first task of this attempt that exited non-zero: rank, node, status and the tail
        # of its output (``failure_reason`` makes the reason of it)
        self.failure = None
        # why this attempt cannot succeed any more while its other tasks are given time to end
        # (a task failed, the interconnect found it deadlocked: the manager's ``_abort``)
        self.abort = None

    @property
    def allocated(self) -> list[int]:
        """Every node of its allocation: its tasks' and the spare ones (node-time is counted on
        these, as the simulator's utilization counts the allocation)."""
        return self.nodes + self.spare if self.spare else self.nodes

    def requeue(self) -> None:
        """Back to the queue for another attempt (its node failed): same id and submit time."""
        self.state, self.nodes, self.spare, self.allocation = "queued", [], [], None
        self.failure = self.abort = None
        self.job = Job(self.id, self.submit, self.job.request, self.runtime, self.name)

    def task_done(self, rank: int, status: int, usage: dict | None, error: str | None, node=None) -> bool:
        """Count one task's end; True when it was the job's last task (``exit`` is then set). A
        task that exited non-zero is the job's ``failure`` (the first one), with ``error`` (what
        its node said: the tail of its output, or why it could not start) as its tail."""
        self.done[rank] = status
        if usage:
            self.usage = merge_usage(self.usage, usage)
        if status and self.failure is None:
            tail = escape_controls(error)[-TAIL_CHARS:] if error else None
            self.failure = {"rank": rank, "node": node, "status": status, "tail": tail}
            self.reason = failure_reason(self.failure)
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
                "reason": self.reason, "owner": self.owner, "user": self.user, "comm": self.comm,
                "failure": self.failure}

    def view(self) -> dict:
        """One row of ``mcemu queue --json``."""
        d = self.row()
        d["request_text"] = str(self.job.request)
        d["exec_time"] = self.exec_time
        d["cwd"] = self.cwd
        return d


def task_nodes(request, nodes) -> list[int]:
    """The nodes a started job's tasks run on, rank by rank: all it was given, but a processor
    count p (``mcemu run -n 5``) runs p tasks, as mpiexec does, whatever its allocation holds (a
    3x2 submesh, a 3-cube); the rest stays allocated and idle: the internal fragmentation the
    papers count. A size reduction that gave fewer than p runs one task a node."""
    if request.kind == "processors":
        return list(nodes[:request.a])
    return list(nodes)


def merge_usage(total: dict | None, usage: dict) -> dict:
    """A job's resource usage over its tasks: ``max*`` keys take the maximum, the rest add up."""
    u = total or {}
    for k, v in usage.items():
        u[k] = max(u.get(k, 0.0), v) if k.startswith("max") else u.get(k, 0.0) + v
    return u


KEEP = object()  # transition(reason=KEEP): the record's reason stays as it is
ENDED = ("completed", "failed", "cancelled")


class JobBook:
    """Every job's record, and the one place a job's state changes: :meth:`transition` sets the
    state (and the reason, and the end of a job that ended), writes the journal's row and
    publishes the ``job`` event, once each. :meth:`record` writes a row whose state did not
    change (a task's report, message statistics); :meth:`publish` an event that is no change
    of the record (``started``: every task runs)."""

    def __init__(self, journal, events: list):
        self.jobs: dict[int, JobRec] = {}
        self.next_id = 1  # the id the next submit gets
        self.journal = journal
        self.events = events  # the manager's (topic, frame) list, published after the commit

    def add(self, jr: JobRec) -> None:
        self.jobs[jr.id] = jr
        self.next_id = max(self.next_id, jr.id + 1)

    def transition(self, jr: JobRec, state: str, t: float, reason=KEEP, event: str | None = None) -> None:
        jr.state = state
        if reason is not KEEP:
            jr.reason = reason
        if state in ENDED:
            jr.end = t
        self.record(jr)
        self.publish(jr, t, event)

    def record(self, jr: JobRec) -> None:
        self.journal.job(jr.row())

    def publish(self, jr: JobRec, t: float, state: str | None = None) -> None:
        info = {"nodes": jr.allocated, "attempt": jr.attempt, "name": jr.name,
                "runtime": jr.runtime, "submit": jr.submit, "request": str(jr.job.request)}
        if jr.reason:
            info["reason"] = jr.reason
        self.events.append((b"job", P.encode_unchecked("job", job=jr.id, state=state or jr.state, t=t, info=info)))


__all__ = ["ACTIVE", "ENDED", "KEEP", "TAIL_CHARS", "TAIL_LINES", "JobBook", "JobRec", "escape_controls",
           "failure_reason", "merge_usage", "task_nodes"]
