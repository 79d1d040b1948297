"""What the interconnect knows about the jobs whose tasks talk: their nodes, which task
connection plays which rank, the messages waiting for a task that has not connected yet, and
the statistics of their messages (reported to the daemon as ``comm``).

**Membership is ordered by the hello itself.** A task's ``net_hello`` carries its job, attempt
and rank and the job's node list (the agent puts MCEMU_NODES and MCEMU_ATTEMPT in every task's
environment), so the first hello of an attempt makes the job known: no task can speak before
its job is, and there is no replica of the daemon's job table to wait for. The claims are
checked: the rank lies in the node list, the nodes are the machine's and distinct, every rank
of an attempt names the same list, an attempt at or below one that has ENDED is refused, and a
hello for a newer attempt replaces the old one (a requeued job's new tasks may say hello before
the old attempt's end event arrives). What is not membership still comes from the daemon's
events: a job's end or requeue (its connections are forgotten, its statistics reported), and
down nodes.

**A claim carries the task's secret** (issue 30, emulator.live.secret): given a key, a hello is
refused (``bad-secret``) unless it carries the secret of its (job, attempt, rank), which only
the task placed there was given, before anything else is checked or said about the job. A
process that can reach the interconnect (over tcp, a remote node's; on this host, anything
that opens net.sock) but was not given the secret cannot take a rank from its task or play one
its task has not claimed yet. A process of the cluster's own user could read the key and the
tasks' memory: that user is the cluster's owner.

Pure bookkeeping (no sockets, no clock): emulator.live.interconnect drives it.
"""
from __future__ import annotations

from emulator.live import secret as secretmod
from scheduler.network.stats import MessageStats

# Flow control (issue 30): what one rank may have in the network, sent and not yet delivered.
# Past it a send is refused (``flow``), so no task can grow the interconnect without bound (a
# task sending 4,000 x 64 KiB took it from 30 to 287 MB). nodes.comm keeps its own tasks well
# inside it (nodes.comm.WINDOW: a send waits for deliveries), so only a task that ignores its
# notices meets it.
FLOW_MESSAGES, FLOW_BYTES = 1024, 16 << 20
# job event states after which a job's tasks no longer run (a requeued job starts a new attempt)
FINISHED = ("completed", "failed", "cancelled", "requeued", "queued")


class JobAttempt:
    """One attempt of a running job as its tasks declared it: rank i on ``nodes[i]``."""

    __slots__ = ("id", "attempt", "nodes", "ranks", "inbox", "waiting", "stats", "dirty", "barrier", "gbarrier",
                 "group", "held")

    def __init__(self, id: int, attempt: int, nodes):
        self.id, self.attempt, self.nodes = id, attempt, tuple(nodes)
        self.ranks: dict[int, bytes] = {}  # rank -> routing id of the task that said hello
        self.inbox: dict[int, list] = {}  # rank -> frames delivered before its task connected
        self.waiting: list = []  # (ident, welcome fields) of ``sync`` hellos: sent when every rank is in
        self.stats = MessageStats()  # flit times
        self.dirty = False
        self.barrier: dict[int, list] = {}  # rank -> request ids of the barriers it entered, not done
        self.gbarrier: dict[int, list] = {}  # the same for its group's barriers
        self.group: str | None = None  # a group of jobs whose group barriers wait for each other
        self.held: dict[int, tuple[int, int]] = {}  # rank -> (messages, bytes) it has in the network, undelivered

    @property
    def size(self) -> int:
        return len(self.nodes)

    def hold(self, rank: int, size: int) -> str | None:
        """Count a message of ``size`` bytes against ``rank``'s share of the network; the reason
        when that share is used up (and nothing counted)."""
        n, b = self.held.get(rank, (0, 0))
        if n >= FLOW_MESSAGES or b + size > FLOW_BYTES:
            return (f"rank {rank} of job {self.id} has {n} messages ({b} bytes) in the network, not yet "
                    f"delivered: a rank may hold at most {FLOW_MESSAGES} messages or {FLOW_BYTES >> 20} MiB "
                    f"(flow control: wait for deliveries)")
        self.held[rank] = (n + 1, b + size)
        return None

    def unhold(self, rank: int, size: int) -> None:
        """A message of ``rank`` left the network (delivered, dropped or withdrawn)."""
        n, b = self.held[rank]
        self.held[rank] = (n - 1, b - size)

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


class Membership:
    """The jobs whose tasks said hello, by id, their task connections, the attempts that ended
    and the down nodes (module docstring). ``nodes``: how many nodes the machine has; ``key``:
    the cluster's task key (emulator.live.secret.cluster_key), None to take claims unproven (a
    membership driven in memory)."""

    def __init__(self, nodes: int, key: bytes | None = None):
        self.machine = nodes
        self.key = key
        self.jobs: dict[int, JobAttempt] = {}
        self.by_ident: dict[bytes, tuple[JobAttempt, int]] = {}
        self.ended: dict[int, int] = {}  # job id -> its highest attempt known to have ended
        self.down: set[int] = set()
        self.groups: dict[str, set[int]] = {}  # group -> its running jobs (named by their tasks' hello)

    # ------------------------------------------------------------------ hello

    def hello(self, ident: bytes, m: dict) -> tuple[JobAttempt | None, list, str | None, str]:
        """Check a task's claim (job, attempt, rank, nodes) and bind the connection to it:
        (job, [attempts it replaced], None, "") when accepted, else (None, [], code, reason)
        and nothing changed."""
        jid, attempt, rank, nodes = m["job"], m["attempt"], m["rank"], m["nodes"]
        why = secretmod.refusal(self.key, m) or self._refusal(ident, jid, attempt, rank, nodes)
        if why is not None:
            return (None, [], *why)
        j = self.jobs.get(jid)
        replaced = []
        if j is None or attempt > j.attempt:  # the attempt's first hello makes it known
            if j is not None:
                replaced.append(self.end(jid, j.attempt))
            j = self.jobs[jid] = JobAttempt(jid, attempt, nodes)
        j.ranks[rank] = ident
        self.by_ident[ident] = (j, rank)
        return j, replaced, None, ""

    def _refusal(self, ident, jid, attempt, rank, nodes) -> tuple[str, str] | None:
        """Why a hello is refused, as (code, reason); None when it is accepted."""
        if attempt <= self.ended.get(jid, 0):
            return "stale-attempt", f"attempt {attempt} of job {jid} has ended"
        j = self.jobs.get(jid)
        if j is not None and attempt < j.attempt:
            return "stale-attempt", f"job {jid} runs attempt {j.attempt}, not {attempt}"
        if j is not None and attempt == j.attempt and tuple(nodes) != j.nodes:
            return "bad-nodes", f"attempt {attempt} of job {jid} runs on other nodes than this task says"
        if not nodes or len(set(nodes)) != len(nodes) or max(nodes) >= self.machine:
            return "bad-nodes", f"a job's nodes are distinct nodes of the machine (0-{self.machine - 1})"
        if rank >= len(nodes):
            return "bad-rank", f"job {jid} has ranks 0-{len(nodes) - 1}, not {rank}"
        had = self.by_ident.get(ident)
        if had is not None and (had[0].id != jid or had[0].attempt != attempt or had[1] != rank):
            return "already-bound", f"this connection is rank {had[1]} of job {had[0].id}"
        owner = j.ranks.get(rank) if j is not None and attempt == j.attempt else None
        if owner is not None and owner != ident:
            return "rank-claimed", f"rank {rank} of job {jid} is played by another connection"
        return None

    # ------------------------------------------------------------------ ends, nodes, groups

    def end(self, jid: int, attempt: int) -> JobAttempt | None:
        """Attempt ``attempt`` of job ``jid`` (and any before it) ended: its connections are
        forgotten and a later hello for it is refused. Returns the attempt ended, if known."""
        if attempt > self.ended.get(jid, 0):
            self.ended[jid] = attempt
        j = self.jobs.get(jid)
        if j is None or j.attempt > attempt:  # a newer attempt already said hello
            return None
        del self.jobs[jid]
        for ident in j.ranks.values():
            self.by_ident.pop(ident, None)
        if j.group is not None:
            self.groups.get(j.group, set()).discard(jid)
        return j

    def event(self, topic: bytes, m: dict) -> list:
        """A daemon event (``job``: an attempt's end; ``node``: down or back): the attempts it
        ended (their statistics to report, their group barriers to look at again)."""
        if topic == b"node":
            if m["state"] == "down":
                self.down.add(m["node"])
            else:
                self.down.discard(m["node"])
            return []
        if m["state"] not in FINISHED:
            return []
        info = m.get("info") or {}
        j = self.jobs.get(m["job"])
        j = self.end(m["job"], info.get("attempt") or (j.attempt if j is not None else 0))
        return [] if j is None else [j]

    def join(self, j: JobAttempt, group: str | None) -> None:
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


__all__ = ["FINISHED", "JobAttempt", "Membership"]
