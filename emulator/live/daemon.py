"""The processor-manager daemon: the live clock driving the policy objects.

Shape (the ZeroMQ guide's broker, with Paranoid Pirate liveness): one ROUTER serves the node
agents and the clients (all DEALERs), one PUB sends events (``job``, ``node`` and a periodic
``snapshot`` with ``discipline.snapshot()``) for the monitor. One poll loop: poll with a
timeout of at most the heartbeat interval, drain and dispatch the messages by type, run the
discipline's timer (``next_wakeup``), purge nodes whose heartbeats stopped, send heartbeats,
commit the journal, and only then send the replies, task messages and events that the
iteration produced (a state change is on disk before anyone hears of it).

Handlers translate messages into calls on the policy objects and decisions into messages.
The policy stack is ``discipline(reduction(quarantine(allocator)))``: scheduler.quarantine
keeps down nodes out of every allocation.

Model time ``now = (monotonic() - t0) / time_unit``; t0 is kept in the journal, and the
monotonic clock is system-wide, so a restarted daemon continues the same model time.

Gang scheduling (``--gang G``, issue 7): the daemon drives ``scheduler.gang.create(G, topology,
allocator, mpl=..., **params)`` instead of a discipline, in the same loop and through the same
calls (arrive / depart / cancel / tick at ``next_wakeup``). The choices:

* A Start places a job in a row of the Ousterhout matrix: its tasks are launched at once,
  created suspended (SIGSTOP right after the spawn) unless the job is in the current slot,
  as the office's processes are created and checked in, then kept in until dispatched. A
  sequential (one-node) job runs at once on its node, never suspended.
* A SlotSwitch is broadcast as one ``switch`` message to every node that hosts a gang job:
  the node SIGSTOPs the outgoing tasks, then SIGCONTs the incoming ones (os.killpg) and
  answers ``switched`` with monotonic stamps; the daemon keeps the last switches' skew
  (``status()["gang_switches"]``, used by scripts/bench_gang_live.py).
* Run time: a synthetic gang task progresses only while dispatched because the node agent
  accounts its dispatched time and ends it after ``runtime`` units of it (nodes.agent).
* Recovery: the journal already holds every policy input with its model time, ticks
  included, and a gang policy is a deterministic function of them, so the replay rebuilds
  the rows, the office, the levels and the current slot. Tasks keep running on their nodes
  meanwhile (the dispatched ones keep running while the daemon is away); a node that
  registers again is sent the current slot (``switch``) after its tasks are reconciled.
* Down nodes: the gang's rows are its own allocators, so the quarantine does not keep a down
  node out of a gang placement; a job with a task on a node that goes down is requeued as
  without gang.

Decisions of this implementation (documented in the issue's terms):

* A job ends when every one of its tasks has reported (its real exit), not at the model run
  time: for a synthetic task the two coincide up to process start-up; for a real
  ``--command`` only the exit is meaningful. ``discipline.depart`` is called then, at the
  model time of the last report. The job is ``completed`` when all tasks exited 0, else
  ``failed``.
* A node that misses ``liveness`` heartbeats of ``heartbeat`` seconds (default 3 x 200 ms)
  is ``down``: every running job with a task there is requeued (same id, same submit time;
  its other tasks are killed) until it has met ``max_requeue`` node faults (default 1); the
  next fault fails it. A node that registers again is ``idle``. A node that registers with
  another pid than before is a new incarnation: its tasks are lost (same as a fault).
* Nodes start ``down`` and come up when they register, so a job never waits for a node
  that does not exist yet.
* Recovery: the journal's policy inputs are replayed (see emulator.live.journal) to rebuild the
  allocator and discipline; nodes that were up get ``grace`` seconds to register again and
  report their tasks (alive ones are re-adopted, finished ones are counted once); a task a
  node does not report is re-sent to the same node incarnation (the agent ignores a task it
  already ran) and is lost on a new incarnation.
"""
from __future__ import annotations

import argparse
import json
import logging
import math
import os
import signal
import sys
import time
from collections import deque
from pathlib import Path

import zmq

from emulator.live import home as homemod
from emulator.live import protocol as P
from emulator.live.journal import Journal
from scheduler import allocators, disciplines, quarantine
from scheduler import gang as gangmod
from scheduler.decisions import Finish, SlotSwitch
from scheduler.jobs import Job, JobError
from scheduler.topology import Request, RequestError, TopologyError, parse_topology

log = logging.getLogger("mcemu.daemon")

DEFAULTS = {"topology": "hypercube:4", "allocator": "buddy", "scheduler": "lazy", "reduction": None,
            "time_unit": 1.0, "heartbeat": 0.2, "liveness": 3, "max_requeue": 1, "gang": None, "mpl": None,
            "gang_params": None}
POLICY_KEYS = ("topology", "allocator", "scheduler", "reduction", "time_unit", "gang", "mpl", "gang_params")
SWITCH_LOG = 512  # slot switches whose node reports are kept for status()
ACTIVE = ("queued", "running")
BATCH = 4096  # messages drained per iteration before the loop services timers
HB_GROUPS = 8  # heartbeats go to one eighth of the nodes every hb / 8 (see Daemon._heartbeats)
# While a job's tasks are starting (its ``run`` messages sent, not every ``task_started`` back
# yet), the heartbeat waves and snapshots wait, at most this many seconds: on two cores a
# 64-node start takes ~10-15 ms of both cores, and a wave in the middle wakes 32 other nodes
# (and the daemon 32 times) for nothing urgent. The nodes answer the daemon's heartbeat rather
# than keep their own interval (nodes.agent.OWN_HEARTBEAT), so a late wave costs no extra
# wake-ups; liveness (hb x liveness, 600 ms by default) is far above it.
START_QUIET = 0.05
_MORE = int(zmq.SNDMORE | zmq.NOBLOCK)  # plain ints: pyzmq's flag enums cost more than the send
_LAST = int(zmq.NOBLOCK)
_POLLIN = int(zmq.POLLIN)
HEARTBEAT = P.heartbeat_frame()


class JobRec:
    __slots__ = ("id", "job", "name", "request", "runtime", "command", "burn", "state", "attempt", "faults",
                 "submit", "start", "end", "nodes", "allocation", "exit", "usage", "reason", "done",
                 "started", "exec_time", "submit_wall", "all_started_wall", "pids", "local")

    def __init__(self, id, request: dict, runtime: float, name="", command=None, burn=False, submit=0.0):
        self.id = id
        self.request, self.runtime, self.name, self.command, self.burn = request, runtime, name, command, burn
        self.job = Job(id, submit, Request.from_dict(request), runtime, name)
        self.state, self.attempt, self.faults = "queued", 0, 0
        self.submit, self.start, self.end = submit, None, None
        self.nodes: list[int] = []
        self.allocation = None
        self.exit, self.usage, self.reason = None, None, None
        self.done: dict[int, int] = {}
        self.started: set[int] = set()
        self.exec_time = runtime
        self.submit_wall = self.all_started_wall = None
        self.pids: dict[int, int] = {}  # rank -> task pid
        self.local = False  # a gang policy's sequential job (never suspended)

    def row(self) -> dict:
        return {"id": self.id, "name": self.name, "request": self.request, "runtime": self.runtime,
                "command": self.command, "burn": int(self.burn), "state": self.state,
                "attempt": self.attempt, "faults": self.faults, "submit": self.submit,
                "start": self.start, "end": self.end, "nodes": self.nodes or None,
                "allocation": self.allocation, "exit": self.exit, "usage": self.usage,
                "reason": self.reason}

    def view(self) -> dict:
        d = self.row()
        d["request_text"] = str(self.job.request)
        d["exec_time"] = self.exec_time
        return d


class NodeRec:
    __slots__ = ("id", "ident", "pid", "host", "last", "sent", "jobs", "gang_sent", "report", "hb")

    def __init__(self, id):
        self.id = id
        self.ident: bytes | None = None
        self.pid = self.host = None
        self.last = 0.0
        self.sent = 0.0
        self.jobs: set[int] = set()
        self.gang_sent = None  # (run, stop) last sent in a switch
        self.report: dict | None = None  # the node's last ``switched`` report
        # a frame equal to this node's heartbeat needs no decoding (256 nodes send 1280 a second)
        self.hb = P.heartbeat_frame(id)


class Daemon:
    def __init__(self, home: Path, config: dict | None = None, listen: str | None = None,
                 grace: float = 5.0, snapshot_every: float = 1.0, fsync: bool = False):
        self.home = Path(home)
        jpath = homemod.journal_path(self.home)
        self.journal = Journal(jpath, fsync=fsync)
        meta = self.journal.get_meta()
        if meta.get("closed"):
            # the last daemon stopped cleanly (`mcemu down`): nothing to recover; keep its
            # journal as history and start a new cluster, with new settings if asked
            self.journal.db.close()
            stamp = time.strftime("%Y%m%d-%H%M%S")
            os.replace(jpath, jpath.with_name(f"journal.{stamp}.{os.getpid()}.db"))
            for suffix in ("-wal", "-shm"):
                try:
                    os.unlink(str(jpath) + suffix)
                except FileNotFoundError:
                    pass
            self.journal = Journal(jpath, fsync=fsync)
            meta = {}
        given = {k: v for k, v in (config or {}).items() if v is not None}
        if meta.get("config"):
            cfg = dict(meta["config"])
            clash = {k: (v, cfg.get(k)) for k, v in given.items() if k in cfg and cfg[k] != v and k in POLICY_KEYS}
            if clash:
                raise ValueError("this MCEMU_HOME's journal was started with "
                                 + ", ".join(f"{k}={old!r}" for k, (new, old) in clash.items())
                                 + "; use another MCEMU_HOME or the same settings")
            cfg.update({k: v for k, v in given.items() if k in ("heartbeat", "liveness", "max_requeue")})
        else:
            cfg = {**DEFAULTS, **given}
        self.cfg = cfg
        self.topology = parse_topology(cfg["topology"])
        self.time_unit = float(cfg["time_unit"])
        if not self.time_unit > 0:
            raise ValueError("--time-unit must be > 0")
        self.hb = float(cfg["heartbeat"])
        self.liveness = int(cfg["liveness"])
        self.expiry = self.hb * self.liveness
        self.max_requeue = int(cfg["max_requeue"])
        self.grace = grace
        self.snapshot_every = snapshot_every
        self._build_policy()
        if "t0" in meta:
            self.t0 = float(meta["t0"])
        else:
            self.t0 = time.monotonic()
        self.journal.set_meta(config=cfg, t0=self.t0)
        self.nodes = [NodeRec(i) for i in range(self.topology.size)]
        self.by_ident: dict[bytes, NodeRec] = {}
        self.jobs: dict[int, JobRec] = {}
        self.next_id = 1
        self.gang_running: frozenset = frozenset()
        self.gang_slot = 0
        self.switch_no = 0
        self.switch_log: deque = deque(maxlen=SWITCH_LOG)
        self.switch_index: dict = {}
        self.outbox: list = []
        self.starting: set[int] = set()  # jobs whose tasks are starting (see START_QUIET)
        self.quiet_until = 0.0
        self.events: list = []
        self.replaying = False
        self.running = False
        self._last_t = 0.0
        self._recover()
        self.listen = listen
        self.ctx = self.router = self.pub = None

    # ------------------------------------------------------------------ policy stack

    def _build_policy(self):
        cfg = self.cfg
        base = allocators.create(cfg["allocator"], self.topology)
        self.quarantine = quarantine.wrap(base, down=range(self.topology.size))
        alloc = self.quarantine
        if cfg.get("reduction"):
            try:
                from scheduler import reduction
            except ImportError:
                raise ValueError("size reduction is not available in this build (scheduler.reduction)") from None
            alloc = reduction.wrap(alloc, cfg["reduction"])
        self.allocator = alloc
        self.gang = None
        if cfg.get("gang") and cfg["gang"] != "none":
            if cfg.get("reduction"):
                raise ValueError("--gang does not combine with --reduction (gang rows use the allocator as is)")
            kw = dict(cfg.get("gang_params") or {})
            if cfg.get("mpl") is not None:
                kw["mpl"] = cfg["mpl"]
            try:
                self.gang = gangmod.create(cfg["gang"], self.topology, cfg["allocator"], **kw)
            except TypeError as e:  # an unknown keyword of the policy's constructor
                raise ValueError(f"gang policy {cfg['gang']!r}: {e}") from None
            # the gang policy has the discipline's driver interface (arrive/depart/cancel/tick)
            self.discipline = self.gang
            self.policy_allocator = self.gang.rows[0]
            return
        self.discipline = disciplines.create(cfg["scheduler"], self.topology, alloc)
        # a discipline may replace the allocator it was given (static: its partitions)
        self.policy_allocator = getattr(self.discipline, "allocator", alloc)

    def now(self) -> float:
        t = (time.monotonic() - self.t0) / self.time_unit
        if t < self._last_t:  # a reboot reset the monotonic clock: never go backwards
            self.t0 -= (self._last_t - t) * self.time_unit
            t = self._last_t
        self._last_t = t
        return t

    # ------------------------------------------------------------------ policy inputs
    # _apply is the only place the policy objects are called; the same code runs live and
    # while replaying the journal, which is what makes the replay rebuild the same state.

    def _apply(self, kind, t, job=None, node=None, data=None) -> list:
        d = self.discipline
        if kind == "submit":
            jr = JobRec(job, data["request"], data["runtime"], data.get("name", ""), data.get("command"),
                        data.get("burn", False), t)
            out = d.arrive(jr.job, t)  # a refusal raises here, before anything is registered
            self.jobs[job] = jr
            self.next_id = max(self.next_id, job + 1)
            return out
        if kind in ("depart", "fail"):
            return d.depart(job, t)
        if kind == "cancel":
            return d.cancel(job, t)
        if kind == "requeue":
            jr = self.jobs[job]
            starts = d.depart(job, t)
            jr.state, jr.nodes, jr.allocation = "queued", [], None
            jr.job = Job(jr.id, jr.submit, jr.job.request, jr.runtime, jr.name)
            return starts + d.arrive(jr.job, t)
        if kind == "tick":
            return d.tick(t)
        if kind == "node_down":
            self.quarantine.mark_down(node)
            return []
        if kind == "node_up":
            self.quarantine.mark_up(node)
            return d.tick(t)
        raise ValueError(f"unknown journal event {kind!r}")

    def _input(self, kind, job=None, node=None, data=None, t=None):
        t = self.now() if t is None else t
        self.journal.event(kind, t, job, node, data)
        try:
            starts = self._apply(kind, t, job, node, data)
        except BaseException:
            self.journal._events.pop()
            raise
        self._started(starts, t)
        return t

    def _started(self, starts, t):
        for s in starts:
            if isinstance(s, Finish):
                continue  # the daemon already took the job out
            if isinstance(s, SlotSwitch):
                self._slot_switch(s, t)
                continue
            jr = self.jobs[s.job.id]
            jr.state = "running"
            jr.attempt += 1
            jr.start = t
            if getattr(s, "allocation", None) is None:  # a gang policy's sequential job
                jr.nodes, jr.local = [s.node], True
                jr.allocation = f"node {s.node} (local queue)"
            else:
                jr.nodes, jr.local = sorted(s.allocation.nodes), False
                jr.allocation = s.allocation.describe()
            jr.exec_time = getattr(s, "runtime", jr.runtime)
            jr.done, jr.started, jr.pids = {}, set(), {}
            for n in jr.nodes:
                self.nodes[n].jobs.add(jr.id)
            if self.replaying:
                continue
            self.journal.event("start", t, jr.id, None, {"nodes": jr.nodes, "attempt": jr.attempt})
            self.journal.job(jr.row())
            self._emit_job(jr, t)
            jr.all_started_wall = None  # per attempt: a requeued job reports "started" again
            frames = P.encode_each("run", self._run_fields(jr),
                                   [{"rank": rank, "node": n} for rank, n in enumerate(jr.nodes)])
            for n, frame in zip(jr.nodes, frames):
                self._to_node(n, frame)
            self.starting.add(jr.id)
            self.quiet_until = time.monotonic() + START_QUIET

    def _run_fields(self, jr: JobRec) -> dict:
        """A ``run`` message's fields but rank and node (the same for every node of the job)."""
        f = dict(job=jr.id, attempt=jr.attempt, nodes=jr.nodes, runtime_s=jr.exec_time * self.time_unit,
                 command=jr.command, burn=jr.burn, name=jr.name)
        if self.gang is not None:
            f.update(gang=True, suspended=not jr.local and jr.id not in self.gang_running)
        return f

    def _send_run(self, jr: JobRec, rank: int, n: int):
        self._to_node(n, P.encode_unchecked("run", rank=rank, node=n, **self._run_fields(jr)))

    # ------------------------------------------------------------------ gang slots

    def _slot_switch(self, sw: SlotSwitch, t):
        self.gang_running = sw.running
        self.gang_slot = sw.slot
        self.switch_no += 1
        if self.replaying:
            return
        rec = {"switch": self.switch_no, "slot": sw.slot, "t": t, "primary": sw.primary,
               "running": sorted(sw.running), "sent": time.monotonic(), "nodes": {}}
        self.switch_log.append(rec)
        self.switch_index[self.switch_no] = rec
        while len(self.switch_index) > SWITCH_LOG:
            self.switch_index.pop(next(iter(self.switch_index)))
        for nr in self.nodes:
            self._switch_node(nr)

    def _switch_node(self, nr: NodeRec, force: bool = False):
        """Send node ``nr`` the current slot: which of its gang jobs run, which are kept in."""
        run, stop = [], []
        for j in sorted(nr.jobs):
            jr = self.jobs.get(j)
            if jr is None or jr.local:
                continue
            (run if j in self.gang_running else stop).append(j)
        if not run and not stop and not nr.gang_sent:
            return
        if not force and nr.gang_sent == (run, stop):
            return
        nr.gang_sent = (run, stop)
        self._to_node(nr.id, P.encode_unchecked("switch", slot=self.switch_no, stop=stop, run=run))

    def on_switched(self, nr, m):
        nr.report = {"switch": m["slot"], "running": m["running"], "stopped": m["stopped"]}
        rec = self.switch_index.get(m["slot"])
        if rec is not None and m["t_first"] is not None:
            last = max(x for x in (m["t_stop"], m["t_cont"]) if x is not None)
            rec["nodes"][nr.id] = (m["t_first"], m["t_stop"], m["t_cont"], last)

    def switch_stats(self, last: int = 100) -> list[dict]:
        """Skew of the last slot switches from the nodes' own monotonic stamps: ``skew`` from
        the first node's first signal to the last node's last one, ``cont_skew`` the spread
        of the SIGCONTs, ``latency`` from the daemon's send to the last node's last signal."""
        out = []
        for rec in list(self.switch_log)[-last:]:
            ns = rec["nodes"]
            if not ns:
                continue
            firsts = [v[0] for v in ns.values()]
            lasts = [v[3] for v in ns.values()]
            conts = [v[2] for v in ns.values() if v[2] is not None]
            stops = [v[1] for v in ns.values() if v[1] is not None]
            out.append({"switch": rec["switch"], "slot": rec["slot"], "t": rec["t"], "nodes": len(ns),
                        "skew": max(lasts) - min(firsts),
                        "cont_skew": max(conts) - min(conts) if conts else None,
                        "stop_skew": max(stops) - min(stops) if stops else None,
                        "latency": max(lasts) - rec["sent"]})
        return out

    def _finish(self, jr: JobRec, state: str, t: float, reason=None, kind="depart"):
        """A running job leaves: release its nodes through the discipline."""
        jr.state, jr.end, jr.reason = state, t, reason
        for n in jr.nodes:
            self.nodes[n].jobs.discard(jr.id)
        self.journal.job(jr.row())
        self._emit_job(jr, t)
        self._input(kind, job=jr.id, t=t)

    def _kill_tasks(self, jr: JobRec, skip=None):
        for n in jr.nodes:
            if n != skip:
                self._to_node(n, P.encode_unchecked("kill", job=jr.id, attempt=jr.attempt))

    def _fault(self, jr: JobRec, node: int, why: str):
        """A task of a running job was lost (its node went down or restarted)."""
        t = self.now()
        self._kill_tasks(jr, skip=node)
        jr.faults += 1
        for n in jr.nodes:
            self.nodes[n].jobs.discard(jr.id)
        if jr.faults > self.max_requeue:
            self._finish(jr, "failed", t, reason=f"{why}; {jr.faults} node faults", kind="fail")
            return
        jr.state, jr.reason = "queued", f"requeued: {why}"
        jr.nodes, jr.allocation = [], None
        self.journal.job(jr.row())
        self._emit_job(jr, t, state="requeued")
        self._input("requeue", job=jr.id, t=t)
        if jr.state == "queued":
            self.journal.job(jr.row())

    # ------------------------------------------------------------------ recovery

    def _recover(self):
        self.replaying = True
        pids = {}
        n_events = 0
        for kind, t, job, node, data in self.journal.events():
            n_events += 1
            self._last_t = max(self._last_t, t)
            if kind == "start":
                continue
            if kind in ("depart", "fail", "cancel") and job in self.jobs:
                jr = self.jobs[job]
                for n in jr.nodes:
                    self.nodes[n].jobs.discard(job)
            if kind == "requeue":
                jr = self.jobs[job]
                for n in jr.nodes:
                    self.nodes[n].jobs.discard(job)
            if kind == "node_up" and data:
                pids[node] = (data.get("pid"), data.get("host"))
            starts = self._apply(kind, t, job, node, data)
            self._started(starts, t)
        self.replaying = False
        # the jobs table is the authority for what the replay cannot know (exit codes, ...)
        for row in self.journal.jobs():
            jr = self.jobs.get(row["id"])
            if jr is None:
                continue
            if jr.state == "running" and row["state"] == "running" and row["attempt"] != jr.attempt:
                log.warning("journal replay: job %s attempt %s != %s", jr.id, jr.attempt, row["attempt"])
            for k in ("state", "faults", "end", "exit", "usage", "reason"):
                setattr(jr, k, row[k])
            if jr.state == "running":
                jr.nodes = sorted(jr.nodes)
        self.next_id = max(self.next_id, self.journal.max_job_id() + 1)
        wall = time.monotonic()
        for nr in self.nodes:
            if nr.id not in self.quarantine.down:
                nr.pid, nr.host = pids.get(nr.id, (None, None))
                nr.last = wall + self.grace - self.expiry  # expires after the grace unless it registers
        self.recovered = n_events
        if n_events:
            running = sum(1 for j in self.jobs.values() if j.state == "running")
            queued = sum(1 for j in self.jobs.values() if j.state == "queued")
            log.info("recovered from journal: %d events, %d queued, %d running", n_events, queued, running)

    # ------------------------------------------------------------------ sockets

    def bind(self):
        self.ctx = zmq.Context()
        if os.sched_getscheduler(0) == os.SCHED_OTHER:
            # the I/O thread at SCHED_BATCH: woken by each message the main thread queues,
            # at SCHED_NORMAL it preempted the main thread once per node of a job's ``run``
            # fan-out (64 messages: 1.1 ms, 0.2 ms without the ping-pong); under --rt-priority
            # it inherits SCHED_RR instead (a slot switch must reach every node first)
            self.ctx.set(zmq.THREAD_SCHED_POLICY, os.SCHED_BATCH)
        r = self.router = self.ctx.socket(zmq.ROUTER)
        r.setsockopt(zmq.LINGER, 0)
        r.setsockopt(zmq.ROUTER_MANDATORY, 1)
        r.setsockopt(zmq.MAXMSGSIZE, P.MAX_WIRE)
        r.setsockopt(zmq.SNDHWM, 200_000)
        r.setsockopt(zmq.RCVHWM, 200_000)
        r.setsockopt(zmq.BACKLOG, 4096)
        ctl = homemod.control_endpoint(self.home)
        ev = homemod.events_endpoint(self.home)
        for path in (ctl, ev):  # a stale socket file from a killed daemon
            try:
                os.unlink(path[len("ipc://"):])
            except FileNotFoundError:
                pass
        r.bind(ctl)
        p = self.pub = self.ctx.socket(zmq.PUB)
        p.setsockopt(zmq.LINGER, 0)
        p.setsockopt(zmq.SNDHWM, 100_000)
        p.bind(ev)
        endpoints = {"control": ctl, "events": ev}
        if self.listen:
            r.bind(self.listen)
            endpoints["control_tcp"] = r.getsockopt(zmq.LAST_ENDPOINT).decode()
            if self.listen.startswith("tcp://"):
                host, _, port = self.listen[6:].rpartition(":")
                evaddr = f"tcp://{host}:{int(port) + 1}" if port not in ("*", "0") else f"tcp://{host}:*"
                p.bind(evaddr)
                endpoints["events_tcp"] = p.getsockopt(zmq.LAST_ENDPOINT).decode()
        for path in (ctl, ev):
            os.chmod(path[len("ipc://"):], 0o600)
        self.endpoints = endpoints
        homemod.write_json(self.home / "endpoints.json", endpoints)

    def _to_node(self, n: int, frame: bytes):
        nr = self.nodes[n]
        if nr.ident is None or self.replaying:
            return  # not connected: reconciled when it registers
        self.outbox.append((nr.ident, frame))

    def _reply(self, ident, req_id, data=None):
        self.outbox.append((ident, P.encode_unchecked("ok", id=req_id, data=data)))

    def _error(self, ident, code, message, req_id=None):
        self.outbox.append((ident, P.encode_unchecked("error", id=req_id, code=code, message=message)))

    def _emit_job(self, jr: JobRec, t, state=None):
        info = {"nodes": jr.nodes, "attempt": jr.attempt, "name": jr.name, "runtime": jr.runtime,
                "submit": jr.submit, "request": str(jr.job.request)}
        if jr.reason:
            info["reason"] = jr.reason
        self.events.append((b"job", P.encode_unchecked("job", job=jr.id, state=state or jr.state, t=t, info=info)))

    def _emit_node(self, n: int, state: str, t=None):
        self.events.append((b"node", P.encode_unchecked("node", node=n, state=state,
                                                        t=self.now() if t is None else t, info=None)))

    def _flush(self):
        self.journal.commit()
        r = self.router
        now = time.monotonic()
        for ident, frame in self.outbox:
            try:
                r.send(ident, _MORE, copy=False)
                r.send(frame, _LAST, copy=False)
            except zmq.ZMQError:
                pass  # peer gone or not reading: a node is caught by liveness, a client by its timeout
            nr = self.by_ident.get(ident)
            if nr is not None:
                nr.sent = now
        self.outbox.clear()
        for topic, frame in self.events:
            try:
                self.pub.send_multipart((topic, frame), flags=zmq.NOBLOCK, copy=False)
            except zmq.ZMQError:
                pass
        self.events.clear()

    # ------------------------------------------------------------------ node state

    def node_state(self, n: int) -> str:
        nr = self.nodes[n]
        if n in self.quarantine.down:
            return "down"
        if not nr.jobs:
            return "idle"
        if self.gang is not None and not any(j in self.gang_running or self.jobs[j].local for j in nr.jobs):
            return "suspended"
        return "busy"

    def _node_down(self, nr: NodeRec, why: str):
        if nr.id in self.quarantine.down:
            return
        t = self._input("node_down", node=nr.id)
        if nr.ident is not None:
            self.by_ident.pop(nr.ident, None)
        nr.ident = None
        self._emit_node(nr.id, "down", t)
        for jid in sorted(nr.jobs):
            jr = self.jobs[jid]
            if jr.state == "running":
                self._fault(jr, nr.id, f"node {nr.id} {why}")
        nr.jobs.clear()

    def _purge(self, wall: float):
        limit = wall - self.expiry
        for nr in self.nodes:
            if nr.last < limit and nr.id not in self.quarantine.down:
                log.info("node %d missed its heartbeats: down", nr.id)
                self._node_down(nr, "missed its heartbeats")

    def _heartbeats(self, wall: float, group: int = 0, groups: int = 1):
        """Heartbeat the nodes of one group (node id mod ``groups``) that were sent nothing
        for half an interval. Called every ``hb / groups`` with the next group, so each node
        hears from the daemon at least once per interval, while the nodes' wake-ups (and their
        answers) come in small waves instead of one burst of every node: a job's ``run``
        messages arriving during a burst of 256 heartbeats waited for all of them."""
        frame = HEARTBEAT
        limit = wall - self.hb / 2
        for nr in self.nodes[group::groups]:
            if nr.ident is not None and nr.sent < limit:
                self.outbox.append((nr.ident, frame))

    # ------------------------------------------------------------------ node messages

    def on_register(self, ident, m):
        n = m["node"]
        if n >= self.topology.size:
            return self._error(ident, "bad-node", f"node {n} is not in {self.topology} (0..{self.topology.size - 1})")
        nr = self.nodes[n]
        wall = time.monotonic()
        new_incarnation = nr.pid is not None and (nr.pid, nr.host) != (m["pid"], m["host"])
        if nr.ident is not None and nr.ident != ident:
            self.by_ident.pop(nr.ident, None)
        prev = self.by_ident.get(ident)
        if prev is not None and prev is not nr:  # one connection cannot be two nodes
            prev.ident = None
        nr.ident, nr.last = ident, wall
        self.by_ident[ident] = nr
        self.outbox.append((ident, P.encode_unchecked("welcome", node=n, heartbeat=self.hb, liveness=self.liveness)))
        if new_incarnation:
            for jid in sorted(nr.jobs):
                jr = self.jobs[jid]
                if jr.state == "running":
                    self._fault(jr, n, f"node {n} restarted")
            nr.jobs.clear()
        was_down = n in self.quarantine.down
        nr.pid, nr.host = m["pid"], m["host"]
        # reconcile the tasks the node reports with what the journal says runs there
        for d in m.get("finished") or ():
            self._task_done(nr, d["job"], d["attempt"], d["rank"], d["status"], d["usage"], None)
        alive = {(d["job"], d["attempt"]): d for d in m.get("tasks") or ()}
        for (jid, att), d in alive.items():
            jr = self.jobs.get(jid)
            if jr and jr.state == "running" and jr.attempt == att and n in jr.nodes:
                jr.started.add(d["rank"])
                jr.pids[d["rank"]] = d["pid"]
            else:
                self.outbox.append((ident, P.encode_unchecked("kill", job=jid, attempt=att)))
        for jid in sorted(nr.jobs):
            jr = self.jobs[jid]
            if jr.state != "running":
                continue
            rank = jr.nodes.index(n)
            if (jid, jr.attempt) not in alive and rank not in jr.done:
                self._send_run(jr, rank, n)
        if self.gang is not None:
            nr.gang_sent = None
            self._switch_node(nr, force=True)  # adopted tasks get the current slot
        if was_down:
            t = self._input("node_up", node=n, data={"pid": nr.pid, "host": nr.host})
            self._emit_node(n, "idle", t)

    def _task_done(self, nr, jid, att, rank, status, usage, error):
        self.outbox.append((nr.ident, P.encode_unchecked("ack", job=jid, attempt=att, rank=rank)))
        jr = self.jobs.get(jid)
        if jr is None or jr.state != "running" or jr.attempt != att or rank in jr.done:
            return
        if rank >= len(jr.nodes) or jr.nodes[rank] != nr.id:
            return
        jr.done[rank] = status
        if usage:
            u = jr.usage or {}
            for k, v in usage.items():
                u[k] = max(u.get(k, 0.0), v) if k.startswith("max") else u.get(k, 0.0) + v
            jr.usage = u
        if error:
            jr.reason = error
        if len(jr.done) == len(jr.nodes):
            jr.exit = [jr.done[r] for r in range(len(jr.nodes))]
            ok = all(s == 0 for s in jr.exit)
            self._finish(jr, "completed" if ok else "failed", self.now())
        else:
            self.journal.job(jr.row())

    def on_task_done(self, nr, m):
        self._task_done(nr, m["job"], m["attempt"], m["rank"], m["status"], m["usage"], m.get("error"))

    def on_task_started(self, nr, m):
        jr = self.jobs.get(m["job"])
        if jr is None or jr.state != "running" or jr.attempt != m["attempt"]:
            return
        jr.started.add(m["rank"])
        jr.pids[m["rank"]] = m["pid"]
        if len(jr.started) == len(jr.nodes) and jr.all_started_wall is None:
            jr.all_started_wall = time.monotonic()
            self._emit_job(jr, self.now(), state="started")
            self.starting.discard(jr.id)
            if not self.starting:
                self.quiet_until = 0.0

    def on_bye(self, nr, m):
        self._node_down(nr, "left")

    # ------------------------------------------------------------------ client messages

    def on_submit(self, ident, m):
        try:
            req = Request.from_dict(m["request"])
            self.policy_allocator.normalize(req)  # refuse what can never fit before any change
        except (RequestError, TopologyError, JobError) as e:
            return self._error(ident, "bad-request", str(e), m["id"])
        jid = self.next_id
        data = {"request": m["request"], "runtime": m["runtime"], "name": m.get("name") or f"job{jid}",
                "command": m.get("command"), "burn": bool(m.get("burn", False))}
        try:
            t = self._input("submit", job=jid, data=data)
        except (RequestError, TopologyError, JobError, ValueError) as e:
            # the policy refused it at arrive: nothing was registered, the journal event dropped
            return self._error(ident, "bad-request", f"refused by {self._policy_name()}: {e}", m["id"])
        self.next_id = jid + 1
        jr = self.jobs[jid]
        jr.submit_wall = time.monotonic()
        if jr.state == "queued":
            self.journal.job(jr.row())
            self._emit_job(jr, t)
        self._reply(ident, m["id"], {"job": jid, "state": jr.state})

    def on_cancel(self, ident, m):
        jr = self.jobs.get(m["job"])
        if jr is None or jr.state not in ACTIVE:
            state = jr.state if jr else "unknown"
            return self._error(ident, "not-active", f"job {m['job']} is {state}: nothing to cancel", m["id"])
        t = self.now()
        if jr.state == "running":
            self._kill_tasks(jr)
            self._finish(jr, "cancelled", t, reason="cancelled by user", kind="cancel")
        else:
            jr.state, jr.end, jr.reason = "cancelled", t, "cancelled by user"
            self.journal.job(jr.row())
            self._emit_job(jr, t)
            self._input("cancel", job=jr.id, t=t)
        self._reply(ident, m["id"], {"job": jr.id, "state": "cancelled"})

    def on_queue(self, ident, m):
        if m.get("jobs"):
            sel = [self.jobs[j] for j in m["jobs"] if j in self.jobs]
        elif m.get("all"):
            sel = list(self.jobs.values())
        else:
            sel = [j for j in self.jobs.values() if j.state in ACTIVE]
        now = self.now()
        rows = [j.view() for j in sel]
        if self.gang is not None:
            for r in rows:
                g = self.gang.jobs.get(r["id"])
                if g is not None:
                    attained = g.attained + (self.gang.now - g.since if g.since is not None else 0.0)
                    r["gang"] = {"row": g.row, "level": g.level, "f": g.f, "slots": g.slots,
                                 "attained": attained, "state": "running" if r["id"] in self.gang_running
                                 else "suspended"}
                elif self.jobs[r["id"]].local and r["state"] == "running":
                    r["gang"] = {"row": None, "level": None, "f": None, "slots": None, "attained": None,
                                 "state": "local"}
        self._reply(ident, m["id"], {"now": now, "jobs": rows, "gang": self.gang is not None})

    def nodes_view(self) -> list[dict]:
        out = []
        for nr in self.nodes:
            d = {"node": nr.id, "state": self.node_state(nr.id), "jobs": sorted(nr.jobs),
                 "pid": nr.pid, "host": nr.host, "connected": nr.ident is not None}
            if self.gang is not None:
                tasks = []
                for j in sorted(nr.jobs):
                    jr = self.jobs[j]
                    run = jr.local or j in self.gang_running
                    rank = jr.nodes.index(nr.id) if nr.id in jr.nodes else None
                    tasks.append({"job": j, "state": "running" if run else "suspended",
                                  "pid": jr.pids.get(rank), "local": jr.local})
                d["tasks"] = tasks
                d["running"] = [x["job"] for x in tasks if x["state"] == "running"]
                d["suspended"] = [x["job"] for x in tasks if x["state"] == "suspended"]
                d["reported"] = nr.report  # what the node itself said after the last switch
            out.append(d)
        return out

    def on_nodes(self, ident, m):
        self._reply(ident, m["id"], {"nodes": self.nodes_view()})

    def status(self) -> dict:
        counts: dict[str, int] = {}
        for j in self.jobs.values():
            counts[j.state] = counts.get(j.state, 0) + 1
        states: dict[str, int] = {}
        for nr in self.nodes:
            s = self.node_state(nr.id)
            states[s] = states.get(s, 0) + 1
        return {"pid": os.getpid(), "config": self.cfg, "now": self.now(), "t0": self.t0,
                "endpoints": getattr(self, "endpoints", {}), "jobs": counts, "nodes": states,
                "size": self.topology.size, "connected": len(self.by_ident),
                "discipline": self._discipline_view(),
                "gang": _jsonable(self.gang.snapshot()) if self.gang is not None else None,
                "gang_switches": self.switch_stats() if self.gang is not None else None,
                "rt": os.sched_getscheduler(0) in (os.SCHED_RR, os.SCHED_FIFO)}

    def _policy_name(self) -> str:
        return f"gang policy {self.cfg['gang']}" if self.gang is not None else f"discipline {self.cfg['scheduler']}"

    def _discipline_view(self) -> dict:
        if self.gang is None:
            return _jsonable(self.discipline.snapshot())
        # the batch queue in front of the gang's rows, in the shape of a discipline snapshot
        return {"discipline": f"gang:{self.gang.name}",
                "queues": [{"name": "memory", "jobs": [j.id for j in self.gang.waiting()]}],
                "running": sorted(self.gang.jobs)}

    def on_status(self, ident, m):
        self._reply(ident, m["id"], self.status())

    def on_ping(self, ident, m):
        self._reply(ident, m["id"], {"pong": True})

    def on_shutdown(self, ident, m):
        self._reply(ident, m.get("id") or 0, {"stopping": True})
        self.running = False

    # ------------------------------------------------------------------ the loop

    NODE_HANDLERS = {"task_done": on_task_done, "task_started": on_task_started, "switched": on_switched,
                     "bye": on_bye}
    CLIENT_HANDLERS = {"submit": on_submit, "cancel": on_cancel, "queue": on_queue, "nodes": on_nodes,
                       "status": on_status, "ping": on_ping, "shutdown": on_shutdown}
    ALLOWED = P.NODE_TYPES | P.CLIENT_TYPES

    def handle(self, frames):
        if len(frames) != 2:
            if frames:
                self._error(frames[0], "frames", f"expected one frame per message, got {len(frames) - 1}")
            return
        ident, frame = frames
        nr = self.by_ident.get(ident)
        if nr is not None and frame == nr.hb:
            nr.last = time.monotonic()
            return
        try:
            m = P.decode(frame, allowed=self.ALLOWED)
        except P.ProtocolError as e:
            self.outbox.append((ident, P.error_frame(e)))
            return
        t = m["type"]
        if nr is not None:
            nr.last = time.monotonic()
        if t == "heartbeat":
            if nr is None:
                self._error(ident, "unregistered", "heartbeat from an unregistered peer: register first")
            return
        if t == "register":
            return self.on_register(ident, m)
        h = self.NODE_HANDLERS.get(t)
        if h is not None:
            if nr is None:
                return self._error(ident, "unregistered", f"{t} from an unregistered peer: register first")
            if m["node"] != nr.id:
                return self._error(ident, "bad-node", f"{t} names node {m['node']} but this peer is node {nr.id}")
            return h(self, nr, m)
        return self.CLIENT_HANDLERS[t](self, ident, m)

    def serve(self, ready=None):
        self.running = True
        poller = zmq.Poller()
        poller.register(self.router, zmq.POLLIN)
        r = self.router
        next_hb = next_snap = tick_floor = 0.0
        hb_group = 0
        stop = []
        for s in (signal.SIGTERM, signal.SIGINT):
            signal.signal(s, lambda *_: stop.append(1))
        if ready:
            ready()
        while self.running and not stop:
            wall = time.monotonic()
            if self.quiet_until and wall >= self.quiet_until:
                self.starting.clear()  # a start that never completed (a node lost): give up waiting
                self.quiet_until = 0.0
            timeout = max(0.0, max(min(next_hb, next_snap), self.quiet_until) - wall)
            wake = self.discipline.next_wakeup()
            if wake is not None:
                timeout = min(timeout, max(0.0, wake * self.time_unit + self.t0 - wall, tick_floor - wall))
            # pyzmq truncates the timeout to whole ms: rounded down, a wait under 1 ms would
            # spin (poll(0)) until it is over
            if poller.poll(math.ceil(timeout * 1000.0)):
                for _ in range(BATCH):
                    # EVENTS, not recv until zmq.Again: raising Again costs a strerror per wake-up
                    if not r.getsockopt(zmq.EVENTS) & _POLLIN:
                        break
                    try:
                        frames = r.recv_multipart(flags=zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    try:
                        self.handle(frames)
                    except Exception:  # a handler bug must not take the cluster down
                        log.exception("handler failed on %r", frames[-1][:200] if frames else frames)
            wake = self.discipline.next_wakeup()
            if wake is not None and wake <= self.now() and time.monotonic() >= tick_floor:
                self._input("tick")
                w2 = self.discipline.next_wakeup()
                if w2 is not None and w2 <= self.now():  # a timer that does not advance: no busy loop
                    tick_floor = time.monotonic() + self.hb
            if self.outbox or self.events:
                # what the messages caused goes out before the housekeeping below: a start
                # that has just completed ends the quiet time, with heartbeats (a group of
                # nodes) and often a snapshot (every node's state) overdue behind it
                self._flush()
            wall = time.monotonic()
            if wall >= next_hb and wall >= self.quiet_until:
                if hb_group == 0:
                    self._purge(wall)
                self._heartbeats(wall, hb_group, HB_GROUPS)
                hb_group = (hb_group + 1) % HB_GROUPS
                next_hb = wall + self.hb / HB_GROUPS
            if wall >= next_snap and wall >= self.quiet_until:
                self.events.append((b"snapshot", P.encode_unchecked("snapshot", t=self.now(), data=self.snapshot())))
                next_snap = wall + self.snapshot_every
            self._flush()
        self.stop()

    def snapshot(self) -> dict:
        return {"nodes": [self.node_state(i) for i in range(self.topology.size)],
                # string keys: the protocol decodes with strict_map_key, as a map key must be
                "running": {str(j.id): j.nodes for j in self.jobs.values() if j.state == "running"},
                "queued": [j.id for j in self.jobs.values() if j.state == "queued"],
                "discipline": self._discipline_view(), "topology": str(self.topology),
                "gang": _jsonable(self.gang.snapshot()) if self.gang is not None else None,
                "config": self.cfg}

    def stop(self):
        """Tell every node to stop (they kill their tasks), close the journal and sockets."""
        frame = P.encode_unchecked("shutdown")
        for nr in self.nodes:
            if nr.ident is not None:
                self.outbox.append((nr.ident, frame))
        self.events.append((b"snapshot", P.encode_unchecked("snapshot", t=self.now(), data={"shutdown": True})))
        try:
            self._flush()
        finally:
            self.journal.set_meta(closed=True)
            self.journal.close()
            if self.ctx is not None:
                self.router.close(linger=500)
                self.pub.close(linger=0)
                self.ctx.term()


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in x]
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    return str(x)


def parse_params(items) -> dict:
    """``["KEY=VALUE", ...]`` -> dict; VALUE is JSON (numbers, lists, true/false), ``inf``, or
    else a string. Bad syntax raises ValueError."""
    out = {}
    for it in items:
        k, eq, v = it.partition("=")
        k = k.strip().replace("-", "_")
        if not eq or not k.isidentifier():
            raise ValueError(f"--param must be KEY=VALUE, got {it!r}")
        v = v.strip()
        if v.lower() in ("inf", "infinity"):
            out[k] = math.inf
            continue
        try:
            out[k] = json.loads(v.replace("inf", "Infinity") if "inf" in v and "Infinity" not in v else v)
        except ValueError:
            out[k] = v
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="mcemu-daemon", description="the mcemu processor-manager daemon")
    ap.add_argument("--home", default=None)
    ap.add_argument("--topology")
    ap.add_argument("--allocator")
    ap.add_argument("--scheduler")
    ap.add_argument("--reduction")
    ap.add_argument("--time-unit", type=float)
    ap.add_argument("--heartbeat", type=float)
    ap.add_argument("--liveness", type=int)
    ap.add_argument("--max-requeue", type=int)
    ap.add_argument("--listen")
    ap.add_argument("--grace", type=float, default=5.0)
    ap.add_argument("--fsync", action="store_true")
    ap.add_argument("--gang", help="gang policy (round-robin, two-queue, multilevel, fb, ...)")
    ap.add_argument("--mpl", type=int, help="rows of the gang's Ousterhout matrix")
    ap.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                    help="a gang policy parameter (VALUE as JSON, or inf, or a string)")
    ap.add_argument("--rt-priority", type=int, help="run at SCHED_RR priority P (1-99) where permitted")
    a = ap.parse_args(argv)
    if a.home:
        os.environ["MCEMU_HOME"] = a.home
    home = homemod.home_dir()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s daemon %(levelname)s %(message)s")
    cfg = {"topology": a.topology, "allocator": a.allocator, "scheduler": a.scheduler,
           "reduction": a.reduction, "time_unit": a.time_unit, "heartbeat": a.heartbeat,
           "liveness": a.liveness, "max_requeue": a.max_requeue, "gang": a.gang, "mpl": a.mpl,
           "gang_params": None}
    try:
        if a.param:
            cfg["gang_params"] = parse_params(a.param)
            if not a.gang:
                raise ValueError("--param needs --gang")
        d = Daemon(home, cfg, listen=a.listen, grace=a.grace, fsync=a.fsync)
    except (ValueError, KeyError, TopologyError, gangmod.UnknownPolicy) as e:
        print(f"mcemu daemon: error: {e.args[0] if isinstance(e, KeyError) else e}", file=sys.stderr)
        return 2
    homemod.raise_nofile(d.topology.size + 256)
    if a.rt_priority:
        # before bind: the ZeroMQ I/O thread inherits the policy; one level above the nodes,
        # so that a slot switch is handed to every node before the first node's work
        prio = min(a.rt_priority + 1, os.sched_get_priority_max(os.SCHED_RR))
        try:
            os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(prio))
            log.info("running at SCHED_RR priority %d", prio)
        except (OSError, AttributeError) as e:
            log.warning("--rt-priority %d not permitted (%s): running at normal priority", a.rt_priority, e)
    d.bind()
    homemod.write_pidfile(home / "daemon.pid")
    log.info("serving %s (%s, %s) on %s", d.topology, d.cfg["allocator"], f"gang {d.cfg['gang']}" if d.gang else d.cfg["scheduler"], d.endpoints)
    try:
        d.serve()
    finally:
        for f in ("daemon.pid", "daemon.sock", "events.sock"):
            try:
                (home / f).unlink()
            except FileNotFoundError:
                pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
