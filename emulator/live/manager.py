"""The processor manager: the wall clock driving the policy objects, without the sockets.

Composed of parts with one job each:

==================  =================================================================================
``registry``        the node table (emulator.live.nodes.NodeRegistry): processes, liveness, heartbeats
``book``            the job book (emulator.live.jobs.JobBook): the records; ``transition`` is the one
                    place a job's state changes (journal row and event, once each)
``port``            the policy port (emulator.live.policy_port.PolicyPort): the one place the policy
                    is called, live and while the journal is replayed; model time
``slots``           the gang's slots (emulator.live.gang), inert without a gang policy
``from_nodes``      what the nodes send (emulator.live.node_handlers.NodeHandlers), node faults
``from_clients``    the clients' requests (emulator.live.client_handlers.ClientHandlers)
==================  =================================================================================

The manager itself carries out the policy's decisions (``_started``: a Start starts the job's
tasks, a SlotSwitch goes to the slots, a Finish confirms what the manager already did) and
the job lifecycle (``_finish``, ``_fault``, ``_abort``, ``_kill_tasks``); replies, task messages and events
go into ``outbox`` and ``events``, which the daemon (emulator.live.daemon) sends after the
journal commit (a state change is on disk before anyone hears of it). Tests drive a daemon's
handlers in memory without binding its sockets (tests/test_protocol.py, on a fake clock:
tests/test_daemon_clock.py).

The policy is built by ``scheduler.stack.build`` from the cluster's configuration
(emulator.live.config): ``discipline(reduction(quarantine(allocator)))``, or a gang policy
over quarantined rows.

A queued job that cannot be allocated at all while the down nodes are out (a 2-cube on a
3-cube with nodes 1 and 5 down) is *held* by the discipline (scheduler.disciplines.base): it
blocks no one, and ``mcemu queue`` shows it ``held`` with the reason (``ReqNodeNotAvail:
...``) until a node comes back and it is queued again. The record stays ``queued``;
``held`` is the policy's view, added by emulator.live.views.
"""
from __future__ import annotations

from pathlib import Path

from bisect import insort

from emulator.live import auth
from emulator.live import config as configmod
from emulator.live import home as homemod
from emulator.live import protocol as P
from emulator.live import recovery, views
from emulator.live import secret as secretmod
from emulator.live.admission import Admission
from emulator.live.client_handlers import ClientHandlers
from emulator.live.policy_port import PolicyPort
from emulator.live.gang import slots_for
from emulator.live.jobs import ABORT_GRACE, ACTIVE, KEEP, JobBook, JobRec, task_nodes
from emulator.live.kernel import WallClock
from emulator.live.node_handlers import NodeHandlers
from emulator.live.nodes import NodeRegistry
from scheduler.decisions import SlotSwitch, Start
from scheduler.stack import build
from scheduler.timer import next_timer

# While a job's tasks are starting (its ``run`` messages sent, not every ``task_started`` back
# yet), the heartbeat waves and snapshots wait, at most this many seconds: on two cores a
# 64-node start takes ~10-15 ms of both cores, and a wave in the middle wakes 32 other nodes
# (and the daemon 32 times) for nothing urgent. The nodes answer the daemon's heartbeat rather
# than keep their own interval (nodes.agent.OWN_HEARTBEAT), so a late wave costs no extra
# wake-ups; liveness (hb x liveness, 600 ms by default) is far above it.
START_QUIET = 0.05


class ViewedBook(JobBook):
    """The job book, keeping what the daemon's answers need without a scan of every record
    (issue 30: a listing of 20,000 rows rebuilt for each request stalled the loop): the ids in
    order (a page of ``queue`` starts at a cursor), each owner's jobs queued or running (the
    quota) and each record's ``queue`` row, dropped by every change of the record (all of
    them are written to the journal through ``record``)."""

    def __init__(self, journal, events: list):
        super().__init__(journal, events)
        self.ids: list[int] = []
        self.active: dict = {}  # owner -> jobs queued or running
        self.rows: dict[int, dict] = {}

    def add(self, jr: JobRec) -> None:
        if jr.id not in self.jobs:
            if not self.ids or jr.id > self.ids[-1]:
                self.ids.append(jr.id)
            else:
                insort(self.ids, jr.id)
            if jr.state in ACTIVE:
                self.active[jr.owner] = self.active.get(jr.owner, 0) + 1
        super().add(jr)

    def transition(self, jr: JobRec, state: str, t: float, reason=KEEP, event: str | None = None) -> None:
        change = (state in ACTIVE) - (jr.state in ACTIVE)
        super().transition(jr, state, t, reason, event)
        if change:
            self.active[jr.owner] = self.active.get(jr.owner, 0) + change

    def record(self, jr: JobRec) -> None:
        self.rows.pop(jr.id, None)
        super().record(jr)

    def row(self, jr: JobRec) -> dict:
        """``jr``'s row of ``mcemu queue``; shared: a caller that changes it changes a copy."""
        r = self.rows.get(jr.id)
        if r is None:
            r = self.rows[jr.id] = jr.view()
        return r

    def recount(self) -> None:
        self.active = {}
        for jr in self.jobs.values():
            if jr.state in ACTIVE:
                self.active[jr.owner] = self.active.get(jr.owner, 0) + 1
        self.rows.clear()


class ProcessorManager:
    def __init__(self, home: Path, config: dict | None = None, grace: float = 5.0, snapshot_every: float = 1.0,
                 fsync: bool = False, clock=None):
        self.home = Path(home)
        # the injected clock (seconds, monotonic): the live kernel's; a fake one in tests
        self.clock = clock if clock is not None else WallClock.now
        self.journal, meta = recovery.open_journal(self.home, fsync)
        try:
            self.cfg = cfg = configmod.resolve(meta.get("config"), config or {})
            configmod.check_format(meta, cfg)
            self.stack = build(configmod.stack_config(cfg))
        except BaseException:
            self.journal.db.close()
            raise
        self.policy = self.stack.policy
        self.topology = self.stack.topology
        self.down = self.stack.down  # nodes out of service: all of them until they register
        self.time_unit = float(cfg["time_unit"])
        self.max_requeue = int(cfg["max_requeue"])
        self.grace = grace
        self.snapshot_every = snapshot_every
        self.registry = NodeRegistry(self.topology, self.down, float(cfg["heartbeat"]), int(cfg["liveness"]),
                                     float(cfg["hang"]))
        self.hb, self.liveness, self.expiry = self.registry.hb, self.registry.liveness, self.registry.expiry
        # the registry's containers, read by the hot paths without a hop
        self.nodes = self.registry.nodes
        self.by_ident = self.registry.by_ident
        self.slots = slots_for(self)
        self.outbox: list = []  # (ident, frame) to send after the journal commit
        self.events: list = []  # (topic, frame) to publish after it
        self.book = ViewedBook(self.journal, self.events)
        self.jobs: dict[int, JobRec] = self.book.jobs
        self.port = PolicyPort(self.stack, self.journal, self.book, self.clock,
                               float(meta["t0"]) if "t0" in meta else self.clock(), self.time_unit)
        self.timer_at = self.last_tick = None  # the policy's pending timer (model time) and last tick
        self.tick_floor = 0.0  # no tick before this: a policy timer that does not advance (see _tick)
        self.starting: set[int] = set()  # jobs whose tasks are starting (see START_QUIET)
        self.quiet_until = 0.0
        self.replaying = False
        self.running = False
        self.kernel = None  # the live kernel serving this manager (emulator.live.daemon), if any
        self.endpoints: dict = {}  # the sockets' addresses, once the daemon has bound them
        # routing id -> auth.Principal of the tcp peers (emulator.live.daemon fills it from the
        # ZAP handler's User-Id); a peer not in it is LOCAL (ipc, or tcp with --insecure)
        self.peers: dict = {}
        self.from_nodes = NodeHandlers(self)
        self.from_clients = ClientHandlers(self)
        self.recovered = recovery.replay(self, grace)
        self.book.recount()  # the replay set states directly
        for jr in [j for j in self.jobs.values() if j.state == "running" and j.failure is not None]:
            self._abort(jr, jr.reason)  # a task failed just before the daemon died: its job ends now
        self.from_clients.cancel_pending(bool(self.recovered))  # Ctrl-C of `mcemu run` while it was down
        self.admission = Admission(cfg, self.clock)
        # after the replay: a journal it failed on keeps its own settings
        self.journal.set_meta(config=cfg, t0=self.t0, format=configmod.FORMAT)

    def now(self) -> float:
        return self.port.now()

    @property
    def t0(self) -> float:
        return self.port.t0

    @property
    def next_id(self) -> int:
        return self.book.next_id

    # ------------------------------------------------------------------ policy inputs and decisions

    def _input(self, kind, job=None, node=None, data=None, t=None):
        """Journal a policy input, apply it and carry out its decisions; returns its model time."""
        t, decisions = self.port.input(kind, job, node, data, t)
        self._started(decisions, t)
        return t

    def _started(self, decisions, t):
        """Carry out the policy's decisions: start tasks, switch slots (a Finish confirms a
        job the manager already took out)."""
        for s in decisions:
            if isinstance(s, SlotSwitch):
                self.slots.switch(s, t)
                continue
            if not isinstance(s, Start):
                continue
            jr = self.jobs[s.job.id]
            jr.state = "running"
            jr.attempt += 1
            jr.start = t
            jr.nodes = task_nodes(jr.job.request, s.nodes)
            jr.spare = list(s.nodes[len(jr.nodes):])
            jr.local = s.sequential
            jr.allocation = f"node {s.node} (local queue)" if s.sequential else s.allocation.describe()
            jr.exec_time = s.runtime
            jr.done, jr.started, jr.pids = {}, set(), {}
            for n in jr.nodes:
                self.nodes[n].jobs.add(jr.id)
            if self.replaying:
                continue
            # this attempt's messages only, from its first hello on: an earlier attempt's would make it one
            # the interconnect carried (emulator.live.netkeeper) before its tasks said hello
            jr.comm = None
            self.journal.event("start", t, jr.id, None, {"nodes": jr.nodes, "attempt": jr.attempt})
            self.book.transition(jr, "running", t)
            if jr.command and self.cfg.get("network"):  # a program that may write a trace
                homemod.clear_trace(self.home, jr.id)
            jr.all_started_wall = None  # per attempt: a requeued job reports "started" again
            each = [{"rank": rank, "node": n, "secret": self._secret(jr, rank)} for rank, n in enumerate(jr.nodes)]
            frames = P.encode_each("run", self._run_fields(jr), each)
            for n, frame in zip(jr.nodes, frames):
                self._to_node(n, frame)
            self.starting.add(jr.id)
            self.quiet_until = self.clock() + START_QUIET

    def _run_fields(self, jr: JobRec) -> dict:
        """A ``run`` message's fields but rank, node and secret (the same for every node of the job)."""
        f = dict(job=jr.id, attempt=jr.attempt, nodes=jr.nodes, runtime_s=jr.exec_time * self.time_unit,
                 command=jr.command, burn=jr.burn, name=jr.name)
        if jr.user:
            f["user"] = jr.user
        if jr.cwd:
            f["cwd"] = jr.cwd
        if jr.stdin:
            f["stdin"] = jr.stdin
        self.slots.run_fields(jr, f)
        return f

    def _secret(self, jr: JobRec, rank: int) -> str:
        """Rank ``rank``'s claim to the interconnect (emulator.live.secret): only its node hears it."""
        return secretmod.task_secret(secretmod.cluster_key(self.home), jr.id, jr.attempt, rank)

    def _send_run(self, jr: JobRec, rank: int, n: int):
        self._to_node(n, P.encode_unchecked("run", rank=rank, node=n, secret=self._secret(jr, rank),
                                            **self._run_fields(jr)))

    # ------------------------------------------------------------------ the policy's timer

    def _tick_due(self):
        """When the policy's timer is due, in the kernel's clock (None: no timer)."""
        self._retime(self.now())  # an input outside a turn (recovery, a test) may have moved it
        if self.timer_at is None:
            return None
        return max(self.port.wall(self.timer_at), self.tick_floor)

    def _retime(self, now: float) -> None:
        self.timer_at = next_timer(self.policy.next_wakeup(), now, self.timer_at, self.last_tick)

    def _tick(self):
        """The engine's timer rule (scheduler.timer), in live time: after the turn's events the
        pending timer is asked afresh, and fired once the clock reaches it. The one live
        addition: a timer that does not advance past its own tick is not taken again for one
        heartbeat interval (the "same instant" of the rule, where no two instants are equal)."""
        now = self.now()
        self._retime(now)
        if self.timer_at is None or self.timer_at > now or self.clock() < self.tick_floor:
            return
        self.last_tick = now
        self._input("tick", t=now)
        w = self.policy.next_wakeup()
        if w is not None and w <= now:
            self.tick_floor = self.clock() + self.hb
        self._retime(now)

    # ------------------------------------------------------------------ job lifecycle

    def _finish(self, jr: JobRec, state: str, t: float, reason=None, kind="depart"):
        """A running job leaves: release its nodes through the policy."""
        for n in jr.nodes:
            self.nodes[n].jobs.discard(jr.id)
        self.book.transition(jr, state, t, reason)
        self._input(kind, job=jr.id, t=t)

    def _kill_tasks(self, jr: JobRec, skip=None):
        for n in jr.nodes:
            if n != skip:
                self._to_node(n, P.encode_unchecked("kill", job=jr.id, attempt=jr.attempt))

    def _abort(self, jr: JobRec, why: str) -> None:
        """``jr`` cannot succeed any more (one of its tasks failed, or the interconnect found it
        deadlocked): mpiexec's rule, one bad rank ends the job, since its other ranks would wait
        for it for ever (a rank killed in a barrier held its job until it was cancelled). They
        get ABORT_GRACE seconds to end by themselves first: a rank that got the deadlock's error
        is still writing its traceback, and a job whose tasks all fail at once ends as it always
        did, with every task's status. The first cause is the job's reason."""
        if jr.abort is not None:
            return
        jr.abort = why
        if self.kernel is None:
            return self._abort_now(jr, jr.attempt)
        self.kernel.call_later(ABORT_GRACE, lambda att=jr.attempt: self._abort_now(jr, att))

    def _abort_now(self, jr: JobRec, attempt: int) -> None:
        if jr.state != "running" or jr.attempt != attempt:
            return  # its tasks all ended in the grace, or it was cancelled or requeued meanwhile
        jr.exit = [jr.done.get(r) for r in range(len(jr.nodes))]  # None: ended by the abort
        self._kill_tasks(jr)
        self._finish(jr, "failed", self.now(), reason=f"{jr.abort}; its other ranks were ended")

    def _fault(self, jr: JobRec, node: int, why: str):
        """A task of a running job was lost (its node went down or restarted, or the interconnect
        died under it). Its other tasks on this host end, and are waited for, before the job can
        be placed again (``from_nodes._end_attempt``): a ``kill`` message is only read when the
        node's agent gets to it, which under load can be after the next attempt started."""
        t = self.now()
        self.from_nodes._end_attempt(jr, node)
        self._kill_tasks(jr, skip=node)
        jr.faults += 1
        for n in jr.nodes:
            self.nodes[n].jobs.discard(jr.id)
        if jr.faults > self.max_requeue:
            # a fault is a node's or the interconnect's: "node faults" misled after the latter
            self._finish(jr, "failed", t, reason=f"{why}; {jr.faults} faults, more than --max-requeue "
                                                 f"{self.max_requeue}", kind="fail")
            return
        jr.nodes, jr.allocation = [], None
        self.book.transition(jr, "queued", t, f"requeued: {why}", event="requeued")
        self._input("requeue", job=jr.id, t=t)
        if jr.state == "queued":
            self.book.record(jr)

    # ------------------------------------------------------------------ who sent it, the views

    def principal_of(self, ident) -> auth.Principal:
        return self.peers.get(ident, auth.LOCAL) if self.peers else auth.LOCAL

    def status(self) -> dict:
        return views.status(self)

    def snapshot(self) -> dict:
        return views.snapshot(self)

    def nodes_view(self) -> list[dict]:
        return views.node_rows(self)

    def node_state(self, n: int) -> str:
        """down, idle, busy, or (a gang's node whose jobs are all kept in) suspended."""
        nr = self.nodes[n]
        if n in self.down:
            return "down"
        if not nr.jobs:
            return "idle"
        return self.slots.busy_state(nr)

    # ------------------------------------------------------------------ outgoing

    def _to_node(self, n: int, frame: bytes):
        nr = self.nodes[n]
        if nr.ident is None or self.replaying:
            return  # not connected: reconciled when it registers
        self.outbox.append((nr.ident, frame))

    def _reply(self, ident, req_id, data=None):
        self.outbox.append((ident, P.encode_unchecked("ok", id=req_id, data=data)))

    def _error(self, ident, code, message, req_id=None):
        self.outbox.append((ident, P.encode_unchecked("error", id=req_id, code=code, message=message)))

    def _emit_node(self, n: int, state: str, t=None):
        self.events.append((b"node", P.encode_unchecked("node", node=n, state=state,
                                                        t=self.now() if t is None else t, info=None)))


__all__ = ["START_QUIET", "ProcessorManager", "ViewedBook"]
