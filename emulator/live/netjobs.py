"""What the interconnect knows about the jobs whose tasks talk: their nodes, which task
connection plays which rank, the messages waiting for a task that has not connected yet, and
the statistics of their messages (reported to the daemon as ``comm``).

Pure bookkeeping (no sockets, no clock): emulator.live.interconnect drives it.
"""
from __future__ import annotations

import math

# a task's ``net_hello`` for a job the interconnect has not heard of yet waits this long for
# the job's event (the daemon publishes it in the same flush as the ``run`` messages, so it
# nearly always comes first) before it is refused as an unknown job
HELLO_WAIT = 2.0
# job event states after which a job's tasks no longer run (a requeued job starts a new attempt)
FINISHED = ("completed", "failed", "cancelled", "requeued", "queued")


class NetJob:
    """One attempt of a running job: rank i on ``nodes[i]`` (the daemon's order)."""

    __slots__ = ("id", "attempt", "nodes", "ranks", "inbox", "waiting", "delays", "baseline", "total",
                 "dirty", "barrier", "gbarrier", "group")

    def __init__(self, id: int, attempt: int, nodes: list[int]):
        self.id, self.attempt, self.nodes = id, attempt, list(nodes)
        self.ranks: dict[int, bytes] = {}  # rank -> routing id of the task that said hello
        self.inbox: dict[int, list] = {}  # rank -> frames delivered before its task connected
        self.waiting: list = []  # (ident, rank) of ``sync`` hellos: welcomed when every rank is in
        self.delays: list[float] = []  # network us of the measured messages
        self.baseline = 0.0  # sum of their contention-free times (us)
        self.total = 0  # every delivered message, measured or not
        self.dirty = False
        self.barrier: dict[int, list] = {}  # rank -> request ids of the barriers it entered, not done
        self.gbarrier: dict[int, list] = {}  # the same for its group's barriers
        self.group: str | None = None  # a group of jobs whose group barriers wait for each other

    def enter_barrier(self, rank: int, req_id: int) -> list | None:
        """Rank ``rank`` enters its next barrier; when that completes one for every rank,
        returns [(rank, request id)] to answer (out of band: a barrier is not a message of
        the model, like an MPI implementation's own control traffic)."""
        self.barrier.setdefault(rank, []).append(req_id)
        if not self.ready(self.barrier):
            return None
        return self.take(self.barrier)

    def ready(self, entered: dict) -> bool:
        return len(entered) == self.size and all(entered.values())

    @staticmethod
    def take(entered: dict) -> list:
        return [(r, ids.pop(0)) for r, ids in entered.items()]

    @property
    def size(self) -> int:
        return len(self.nodes)

    def record(self, delay_us: float, free_us: float, measured: bool) -> None:
        self.total += 1
        if measured:
            self.delays.append(delay_us)
            self.baseline += free_us
        self.dirty = True

    def stats(self) -> dict:
        """The ``comm`` statistics: count, mean and p95 delay, the contention-free baseline
        (the mean of each message's ``(hops + L - 1) x T_t + startup``) and the slowdown
        (mean / baseline), over the measured messages; ``messages`` counts every one."""
        d = self.delays
        n = len(d)
        if not n:
            return {"count": 0, "messages": self.total, "mean_delay_us": None, "p95_delay_us": None,
                    "baseline_us": None, "slowdown": None}
        mean = sum(d) / n
        base = self.baseline / n
        return {"count": n, "messages": self.total, "mean_delay_us": mean, "p95_delay_us": p95(d),
                "baseline_us": base, "slowdown": mean / base if base > 0 else None}


def p95(values) -> float:
    """The 95th percentile (nearest rank): what scheduler.network.traffic reports as p95 too."""
    s = sorted(values)
    return s[max(0, math.ceil(0.95 * len(s)) - 1)]


class Jobs:
    """The running jobs by id, their task connections, and the down nodes."""

    def __init__(self):
        self.jobs: dict[int, NetJob] = {}
        self.by_ident: dict[bytes, tuple[NetJob, int]] = {}
        self.down: set[int] = set()
        self.pending: list = []  # (deadline, ident, hello message) for jobs not heard of yet
        self.groups: dict[str, set[int]] = {}  # group -> its running jobs (named by their tasks' hello)

    def start(self, jid: int, attempt: int, nodes) -> NetJob | None:
        """A job is running on ``nodes`` (an event or the start-up listing); a new attempt
        replaces the old one. Returns the job ended by that, if any."""
        j = self.jobs.get(jid)
        if j is not None and j.attempt == attempt:
            return None
        old = self.end(jid) if j is not None else None
        self.jobs[jid] = NetJob(jid, attempt, nodes)
        return old

    def end(self, jid: int) -> NetJob | None:
        """The job left (finished, cancelled, requeued): its connections are forgotten."""
        j = self.jobs.pop(jid, None)
        if j is not None:
            for ident in j.ranks.values():
                self.by_ident.pop(ident, None)
            if j.group is not None:
                self.groups.get(j.group, set()).discard(jid)
        return j

    def event(self, topic: bytes, m: dict) -> tuple[list, list]:
        """A daemon event (``job``: nodes of a running attempt, or its end; ``node``: down or
        back): the jobs whose statistics to report, and the group barriers it completes."""
        if topic == b"node":
            if m["state"] == "down":
                self.down.add(m["node"])
            else:
                self.down.discard(m["node"])
            return [], []
        info = m.get("info") or {}
        jid, state = m["job"], m["state"]
        if state in ("running", "started") and info.get("nodes"):
            old = self.start(jid, info.get("attempt", 1), info["nodes"])
            return ([old] if old is not None else []), []
        if state in FINISHED:
            j = self.end(jid)
            if j is not None:  # the others of its group may wait for it no longer
                return [j], (self.group_barrier(j.group) if j.group is not None else [])
        return [], []

    def join(self, j: NetJob, group: str | None) -> None:
        if group is not None and j.group is None:
            j.group = group
            self.groups.setdefault(group, set()).add(j.id)

    def group_barrier(self, group: str) -> list:
        """[(job, rank, request id)] to answer when every rank of every running job of
        ``group`` has entered its next barrier (the jobs' ranks enter with ``group``)."""
        members = [self.jobs[i] for i in sorted(self.groups.get(group, ())) if i in self.jobs]
        if not members or not all(j.ready(j.gbarrier) for j in members):
            return []
        return [(j, r, rid) for j in members for r, rid in j.take(j.gbarrier)]

    def hello(self, ident: bytes, m: dict) -> tuple[NetJob | None, str | None, str]:
        """Check a task's claim (job, attempt, rank): (job, None, "") when accepted, else
        (None, code, reason); code ``wait`` means the job is not known yet."""
        j = self.jobs.get(m["job"])
        if j is None:
            return None, "wait", ""
        if m["attempt"] != j.attempt:
            return None, "stale-attempt", f"job {j.id} runs attempt {j.attempt}, not {m['attempt']}"
        rank = m["rank"]
        if rank >= j.size:
            return None, "bad-rank", f"job {j.id} has ranks 0-{j.size - 1}, not {rank}"
        had = self.by_ident.get(ident)
        if had is not None and (had[0] is not j or had[1] != rank):
            return None, "already-bound", f"this connection is rank {had[1]} of job {had[0].id}"
        owner = j.ranks.get(rank)
        if owner is not None and owner != ident:
            return None, "rank-claimed", f"rank {rank} of job {j.id} is played by another connection"
        j.ranks[rank] = ident
        self.by_ident[ident] = (j, rank)
        return j, None, ""


__all__ = ["FINISHED", "HELLO_WAIT", "Jobs", "NetJob", "p95"]
