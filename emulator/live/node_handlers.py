"""The handlers of what the nodes send: a mixin of emulator.live.manager.ProcessorManager.

A node agent registers (``on_register``, with the tasks it still runs and the ones that ended
while it was away: ``_reconcile``), reports its tasks (``on_task_started``, ``on_task_done``),
answers gang slot switches (emulator.live.gang ``on_switched``) and leaves (``on_bye``); a
node whose heartbeats stop is purged by the daemon's loop (``_purge``). The daemon checks
first that the peer is registered as the node it names (emulator.live.daemon ``handle``).
These handlers use the manager's state (``jobs``, ``nodes``, ``registry``, ``down``) and its
core (``_input``, ``_fault``, ``_finish``, ``_send_run``, ``_emit_*``); they call the policy
only through ``_input``.

Decisions of this implementation:

* A job ends when every one of its tasks has reported (its real exit), not at the model run
  time: for a synthetic task the two coincide up to process start-up; for a real
  ``--command`` only the exit is meaningful. The policy's ``depart`` is called then, at the
  model time of the last report. The job is ``completed`` when all tasks exited 0, else
  ``failed``.
* A node whose process ends (a watched node: emulator.live.nodes) or that misses its heartbeats
  is ``down``: it is taken out of
  service (``stack.mark_down``) and every running job with a task there is requeued (same
  id, same submit time; its other tasks are killed) until it has met ``max_requeue`` node
  faults (default 1); the next fault fails it (the manager's ``_fault``). A node that
  registers again is in service (``stack.mark_up``: the policy retries its waiting jobs). A
  node that registers with another pid than before is a new incarnation: its tasks are lost
  (same as a fault).
"""
from __future__ import annotations

import logging

from emulator.live import protocol as P

log = logging.getLogger("mcemu.daemon")


class NodeHandlers:
    """``on_*(nr, m)`` for a registered node's messages (``on_register(ident, m)`` before that),
    task reports, node faults and the nodes' states."""

    # ------------------------------------------------------------------ tasks

    def _task_done(self, nr, jid, att, rank, status, usage, error):
        self.outbox.append((nr.ident, P.encode_unchecked("ack", job=jid, attempt=att, rank=rank)))
        jr = self.jobs.get(jid)
        if jr is None or jr.state != "running" or jr.attempt != att or rank in jr.done:
            return
        if rank >= len(jr.nodes) or jr.nodes[rank] != nr.id:
            return
        if jr.task_done(rank, status, usage, error):
            self._finish(jr, "completed" if all(s == 0 for s in jr.exit) else "failed", self.now())
        else:
            self.book.record(jr)

    # ------------------------------------------------------------------ nodes

    def node_state(self, n: int) -> str:
        """down, idle, busy, or (a gang's node whose jobs are all kept in) suspended."""
        nr = self.nodes[n]
        if n in self.down:
            return "down"
        if not nr.jobs:
            return "idle"
        return self.slots.busy_state(nr)

    def _node_down(self, nr, why: str):
        if nr.id in self.down:
            return
        t = self._input("node_down", node=nr.id)
        self.registry.detach(nr)
        self._emit_node(nr.id, "down", t)
        for jid in sorted(nr.jobs):
            jr = self.jobs[jid]
            if jr.state == "running":
                self._fault(jr, nr.id, f"node {nr.id} {why}")
        nr.jobs.clear()

    def _purge(self, wall: float):
        for nr in self.registry.expired(wall):
            if nr.id not in self.down:  # an earlier node's faults may not have changed that
                log.info("node %d missed its heartbeats: down", nr.id)
                self._node_down(nr, "missed its heartbeats")

    # ------------------------------------------------------------------ node messages

    def on_register(self, ident, m):
        n = m["node"]
        if n >= self.topology.size:
            return self._error(ident, "bad-node", f"node {n} is not in {self.topology} (0..{self.topology.size - 1})")
        nr = self.nodes[n]
        p = self.principal_of(ident)
        if (nr.ident is not None and nr.ident != ident and nr.principal is not None and nr.principal != p
                and self.clock() - nr.last < self.expiry):
            return self._error(ident, "forbidden", f"node {n} is played by a live connection of another "
                                                   f"principal ({nr.principal.name!r})")
        nr.principal = p
        new_incarnation = self.registry.attach(ident, nr, m["pid"], m["host"], self.clock())
        self._watch(nr, ident)
        self.outbox.append((ident, P.encode_unchecked("welcome", node=n, heartbeat=self.hb, liveness=self.liveness)))
        if new_incarnation:
            for jid in sorted(nr.jobs):
                jr = self.jobs[jid]
                if jr.state == "running":
                    self._fault(jr, n, f"node {n} restarted")
            nr.jobs.clear()
        self._reconcile(nr, ident, m)
        self.slots.resend(nr)  # adopted tasks get the current slot
        if n in self.down:
            t = self._input("node_up", node=n, data={"pid": nr.pid, "host": nr.host})
            self._emit_node(n, "idle", t)

    def _reconcile(self, nr, ident, m):
        """The tasks a (re)registering node reports against what runs there: finished ones are
        counted once, alive ones adopted, unknown ones killed, missing ones sent again."""
        n = nr.id
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

    def on_task_done(self, nr, m):
        self._task_done(nr, m["job"], m["attempt"], m["rank"], m["status"], m["usage"], m.get("error"))

    def on_task_started(self, nr, m):
        jr = self.jobs.get(m["job"])
        if jr is None or jr.state != "running" or jr.attempt != m["attempt"]:
            return
        if m["rank"] >= len(jr.nodes) or jr.nodes[m["rank"]] != nr.id:
            return  # a node reports only on the tasks placed on it
        jr.started.add(m["rank"])
        jr.pids[m["rank"]] = m["pid"]
        if len(jr.started) == len(jr.nodes) and jr.all_started_wall is None:
            jr.all_started_wall = self.clock()
            self.book.publish(jr, self.now(), "started")
            self.starting.discard(jr.id)
            if not self.starting:
                self.quiet_until = 0.0

    def on_bye(self, nr, m):
        self._unwatch(nr)
        self._node_down(nr, "left")


__all__ = ["NodeHandlers"]
