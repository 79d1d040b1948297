"""The handlers of what the nodes send: the manager's ``from_nodes`` (emulator.live.manager).

A node agent registers (``on_register``, with the tasks it still runs and the ones that ended
while it was away: ``_reconcile``), reports its tasks (``on_task_started``, ``on_task_done``;
a node of another output directory also their output, ``output``: emulator.live.outsink),
answers gang slot switches (emulator.live.gang ``on_switched``) and leaves (``on_bye``); a
node whose heartbeats stop is purged by the daemon's loop (``purge``). The daemon checks
first that the peer is registered as the node it names (emulator.live.daemon ``handle``).
These handlers use the manager's parts (``book``, ``registry``, ``down``) and its core
(``_input``, ``_fault``, ``_finish``, ``_send_run``, ``_emit_node``); they call the policy
only through ``_input``. They also watch the node processes of this host (``watch``: a pidfd
on the kernel, emulator.live.nodes), so a death is known at once.

Decisions of this implementation:

* A job ends when every one of its tasks has reported (its real exit), not at the model run
  time: for a synthetic task the two coincide up to process start-up; for a real
  ``--command`` only the exit is meaningful. The policy's ``depart`` is called then, at the
  model time of the last report. The job is ``completed`` when all tasks exited 0, else
  ``failed``: at its first task that exits non-zero, whose status and output's tail are its
  reason; its other tasks then get a grace to end by themselves and are killed (mpiexec's rule:
  the manager's ``_abort``).
* A node whose process ends (a watched node: emulator.live.nodes) or that misses its heartbeats
  is ``down``: it is taken out of
  service (``stack.mark_down``) and every running job with a task there is requeued (same
  id, same submit time; its other tasks are killed) until it has met ``max_requeue`` node
  faults (default 1); the next fault fails it (the manager's ``_fault``). A node that
  registers again is in service (``stack.mark_up``: the policy retries its waiting jobs). A
  node that registers with another pid than before is a new incarnation: its tasks are lost
  (same as a fault), and the change is journaled (``incarnation``) so that a recovered daemon
  does not count it again.
* A node key bound to ids (emulator.live.keys) registers only those; a node id held by a live
  connection of another principal is not taken over (``forbidden``, nothing changed); a node
  whose key is revoked is told to stop and is down (``revoked``).
* Before a node of this host is faulted (its process ended, it hung, it came back as a new
  process), what its tasks started is ended and waited for (``contain_dead``, nodes.contain):
  a requeued attempt never runs beside its predecessor; nor beside the job's tasks on this host's
  other nodes (``_end_attempt``).
"""
from __future__ import annotations

import logging
import select

from emulator.live import auth
from emulator.live import keys as keysmod
from emulator.live import protocol as P
from emulator.live.nodes import HOST
from emulator.live.outsink import OutputSink
from nodes import contain

log = logging.getLogger("mcemu.daemon")


def contain_dead(pid) -> None:
    """End every task (with all it started) of the node process ``pid`` of this host that is
    gone, and wait until they have ended (nodes.contain: its cgroup; milliseconds)."""
    if contain.base() is not None and not contain.kill_agent(pid):
        log.warning("node process %s: its tasks' cgroup is not empty after %g s", pid, contain.KILL_WAIT)


class NodeHandlers:
    """``on_*(nr, m)`` for a registered node's messages (``on_register(ident, m)`` before that),
    task reports, node faults and the watching of node processes."""

    def __init__(self, manager):
        self.m = manager
        # the watched processes' pidfds, in one epoll set that is ONE reader of the kernel: with
        # 256 pidfds in the poll set itself every wake-up of the daemon polled 256 more fds
        # (a job's start took 0.6-0.9 ms longer, scripts/bench_live.py)
        self._epoll = None
        self._watched: dict = {}  # pidfd -> NodeRec
        # the output of nodes whose output directory is not the daemon's (``mcemu run`` follows it)
        self.output = OutputSink(manager, manager.home / "output")
    # ------------------------------------------------------------------ tasks

    def _task_done(self, nr, jid, att, rank, status, usage, error):
        m = self.m
        m.outbox.append((nr.ident, P.encode_unchecked("ack", job=jid, attempt=att, rank=rank)))
        jr = m.jobs.get(jid)
        if jr is None or jr.state != "running" or jr.attempt != att or rank in jr.done:
            return
        if rank >= len(jr.nodes) or jr.nodes[rank] != nr.id:
            return
        if jr.task_done(rank, status, usage, error, nr.id):
            if jr.failure is not None or jr.abort is not None:
                m._finish(jr, "failed", m.now(), reason=jr.abort or jr.reason)
            else:
                m._finish(jr, "completed", m.now())
            return
        m.book.record(jr)
        if status:  # its other ranks would wait for this one for ever: the job ends (manager._abort)
            m._abort(jr, jr.reason)

    def on_task_done(self, nr, msg):
        self._task_done(nr, msg["job"], msg["attempt"], msg["rank"], msg["status"], msg["usage"], msg.get("error"))

    def on_task_started(self, nr, msg):
        m = self.m
        jr = m.jobs.get(msg["job"])
        if jr is None or jr.state != "running" or jr.attempt != msg["attempt"]:
            return
        if msg["rank"] >= len(jr.nodes) or jr.nodes[msg["rank"]] != nr.id:
            return  # a node reports only on the tasks placed on it
        jr.started.add(msg["rank"])
        jr.pids[msg["rank"]] = msg["pid"]
        if len(jr.started) == len(jr.nodes) and jr.all_started_wall is None:
            jr.all_started_wall = m.clock()
            m.book.publish(jr, m.now(), "started")
            m.starting.discard(jr.id)
            if not m.starting:
                m.quiet_until = 0.0

    # ------------------------------------------------------------------ nodes down

    def node_down(self, nr, why: str):
        if self._out(nr):
            self._lost(nr, why)

    def _out(self, nr) -> bool:
        """Node ``nr`` out of service and its connection forgotten; False if it was out already."""
        m = self.m
        if nr.id in m.down:
            return False
        t = m._input("node_down", node=nr.id)
        m.registry.detach(nr)
        m._emit_node(nr.id, "down", t)
        return True

    def _lost(self, nr, why: str):
        """The tasks on node ``nr`` are lost: fault their running jobs. The node forgets them
        first: a requeued job may be placed on this node again at once (a restarted node is in
        service), and that placement is the node's."""
        m, jids = self.m, sorted(nr.jobs)
        nr.jobs.clear()
        for jid in jids:
            jr = m.jobs[jid]
            if jr.state == "running" and nr.id in jr.nodes:
                m._fault(jr, nr.id, f"node {nr.id} {why}")

    def _end_attempt(self, jr, skip: int | None) -> None:
        """The tasks of ``jr``'s attempt on this host's other (watched) nodes end, with all they
        started, and are waited for, before the job can be placed again: its ``kill`` messages
        would only arrive beside the new attempt's ``run``s. Nodes elsewhere get the message."""
        if contain.base() is None:
            return
        dirs = []
        for rank, n in enumerate(jr.nodes):
            nr = self.m.nodes[n]
            if n != skip and nr.pidfd is not None and isinstance(nr.pid, int):
                dirs.append(contain.task_dir(nr.pid, jr.id, jr.attempt, rank))
        for d in dirs:  # all killed first, then waited for: the loop waits for the slowest, not the sum
            contain.kill_cgroup(d)
        for d in dirs:
            contain.kill_tree(d)

    def purge(self, wall: float):
        """Down the nodes that fell silent (emulator.live.nodes.NodeRegistry.expired)."""
        for nr in self.m.registry.expired(wall):
            if nr.id not in self.m.down:  # an earlier node's faults may not have changed that
                log.info("node %d missed its heartbeats: down", nr.id)
                if nr.pidfd is not None:  # hung, on this host: its tasks end before they are requeued
                    contain_dead(nr.pid)
                self.node_down(nr, "missed its heartbeats")

    def on_bye(self, nr, msg):
        self.unwatch(nr)
        self.node_down(nr, "left")

    def revoked(self, idents) -> None:
        """The keys of connections ``idents`` were revoked (emulator.live.auth.Zap.revoked): the
        nodes they play are told to stop (an honest agent ends its tasks) and are gone, their
        jobs requeued. All of them are out before any job is requeued, so that none is placed
        again on a node about to go: the daemon sends them nothing more (no ``run``, no task
        secret)."""
        m, gone = self.m, []
        nrs = [m.by_ident[i] for i in idents if i in m.by_ident]
        for nr in nrs:
            log.warning("node %d: its key %r was revoked: down", nr.id, nr.principal.name if nr.principal else "?")
            m.outbox.append((nr.ident, P.encode_unchecked("shutdown")))
            self.unwatch(nr)
            m.registry.detach(nr)
            nr.principal = None
        for nr in nrs:
            if self._out(nr):
                gone.append(nr)
        for nr in gone:
            self._lost(nr, "its key was revoked")

    # ------------------------------------------------------------------ watched node processes

    def watch(self, nr, ident) -> None:
        """Watch node ``nr``'s process when it is one of this host's (nodes.NodeRegistry.watch):
        its end is then known at once (``exited``), not after heartbeats are missed."""
        m = self.m
        self.unwatch(nr)
        if m.kernel is None:
            return
        fd = m.registry.watch(nr, local=m.principal_of(ident) is auth.LOCAL)
        if fd is None:
            return
        if self._epoll is None:
            self._epoll = select.epoll()
            m.kernel.add_reader(self._epoll.fileno(), self._ended)
        self._epoll.register(fd, select.EPOLLIN)
        self._watched[fd] = nr

    def unwatch(self, nr) -> None:
        fd = nr.pidfd
        if fd is not None:
            if self._watched.pop(fd, None) is not None:
                self._epoll.unregister(fd)  # before the fd number can be reused
            self.m.registry.unwatch(nr)

    def _ended(self) -> None:
        for fd, _ in self._epoll.poll(0):
            nr = self._watched.get(fd)
            if nr is not None:
                self.exited(nr)

    def exited(self, nr) -> None:
        pid = nr.pid
        self.unwatch(nr)
        contain_dead(pid)  # a requeued attempt never runs beside what the dead node left running
        if nr.id not in self.m.down:
            log.info("node %d: its process %s ended: down", nr.id, pid)
            self.node_down(nr, f"process {pid} ended")

    # ------------------------------------------------------------------ registration

    def on_register(self, ident, msg):
        m = self.m
        n = msg["node"]
        if n >= m.topology.size:
            return m._error(ident, "bad-node", f"node {n} is not in {m.topology} (0..{m.topology.size - 1})")
        nr = m.nodes[n]
        p = m.principal_of(ident)
        if p.nodes is not None and not keysmod.binds(p.nodes, n):
            return m._error(ident, "forbidden", f"node key {p.name!r} is bound to nodes {p.nodes}: it may not "
                                                f"register node {n}")
        if (nr.ident is not None and nr.ident != ident and nr.principal is not None and nr.principal != p
                and m.clock() - nr.last < m.expiry):
            return m._error(ident, "forbidden", f"node {n} is played by a live connection of another "
                                                f"principal ({nr.principal.name!r})")
        nr.principal = p
        old = (nr.pid, nr.host)
        new_incarnation = m.registry.attach(ident, nr, msg["pid"], msg["host"], m.clock())
        if old != (nr.pid, nr.host):
            # every incarnation change is journaled (not only a node_up's): a recovered daemon
            # must not take the incarnation it already faulted for a new one (recovery.replay)
            m.journal.event("incarnation", m.now(), None, n, {"pid": nr.pid, "host": nr.host})
        if new_incarnation and old[1] == HOST and p is auth.LOCAL:
            contain_dead(old[0])  # the previous process's tasks end before theirs are requeued
        self.watch(nr, ident)
        oid = {"output_id": self.output.id} if self.output.id else {}  # a node forwards only when told the id
        m.outbox.append((ident, P.encode_unchecked("welcome", node=n, heartbeat=m.hb, liveness=m.liveness, **oid)))
        if new_incarnation:
            self._lost(nr, "restarted")
        self._reconcile(nr, ident, msg)
        m.slots.resend(nr)  # adopted tasks get the current slot
        if n in m.down:
            t = m._input("node_up", node=n, data={"pid": nr.pid, "host": nr.host})
            m._emit_node(n, "idle", t)

    def _reconcile(self, nr, ident, msg):
        """The tasks a (re)registering node reports against what runs there: finished ones are
        counted once, alive ones adopted, unknown ones killed, missing ones sent again."""
        m, n = self.m, nr.id
        for d in msg.get("finished") or ():
            self._task_done(nr, d["job"], d["attempt"], d["rank"], d["status"], d["usage"], d.get("error"))
        alive = {(d["job"], d["attempt"]): d for d in msg.get("tasks") or ()}
        for (jid, att), d in alive.items():
            jr = m.jobs.get(jid)
            if jr and jr.state == "running" and jr.attempt == att and n in jr.nodes:
                jr.started.add(d["rank"])
                jr.pids[d["rank"]] = d["pid"]
            else:
                m.outbox.append((ident, P.encode_unchecked("kill", job=jid, attempt=att)))
        for jid in sorted(nr.jobs):
            jr = m.jobs[jid]
            if jr.state != "running":
                continue
            rank = jr.nodes.index(n)
            if (jid, jr.attempt) not in alive and rank not in jr.done:
                m._send_run(jr, rank, n)


__all__ = ["NodeHandlers"]
