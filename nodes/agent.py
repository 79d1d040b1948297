"""The node agent: one OS process that plays one processor.

It talks to the daemon over a DEALER socket (Paranoid Pirate, ZeroMQ guide ch. 4):

* on (re)connection it sends ``register`` (node id, pid, host, the tasks still alive and
  the results the daemon has not acknowledged) and waits for ``welcome``;
* any message counts as a heartbeat; it answers a message from the daemon with a
  ``heartbeat`` when it has sent nothing for half an interval, and sends one on its own
  after OWN_HEARTBEAT (1.5) intervals of sending nothing (the daemon sends its heartbeats
  every interval, so the node's follow them); the agent's threads run at SCHED_BATCH
  (set_batch); when nothing has come from the daemon for ``liveness`` intervals it closes
  the socket, waits (backoff doubling up to ``max_backoff``), opens a new one and registers
  again, so a restarted daemon gets every node back with its tasks;
* each ``run`` starts one task as a child process in its own session (posix_spawn of
  setpriv --pdeathsig KILL, i.e. vfork+exec; os.fork when setpriv is missing or for burn): a synthetic task
  (sleep for ``runtime_s``, or burn CPU with ``burn``) or ``/bin/sh -c COMMAND`` with
  MCEMU_JOB_ID, MCEMU_NODE, MCEMU_NODES (comma-separated) and MCEMU_RANK in its environment;
  a task is identified by (job, attempt) and a ``run`` for a task it has already started is
  ignored, so the daemon may re-send safely;
* a finished task is reported with ``task_done`` (exit status, or -signal; resource usage
  from ``wait4``: user/system CPU seconds, max RSS, wall seconds) and re-reported until the
  daemon sends ``ack``;
* ``suspend`` / ``resume`` / ``kill`` send SIGSTOP / SIGCONT / SIGKILL to the task's process
  group; ``switch`` (a gang slot switch) first SIGSTOPs the tasks of the outgoing jobs, then
  SIGCONTs those of the incoming ones (plain os.killpg: ~7 us, where psutil's suspend costs ~2
  ms under contention) and reports ``switched`` with CLOCK_MONOTONIC stamps of its signals;
* gang tasks (``run`` with ``gang``): a task may be created suspended (SIGSTOP right after the
  spawn, before it is dispatched). A synthetic gang task must progress only while it is
  dispatched, and a sleeping process does not stop its clock under SIGSTOP, so the AGENT
  accounts its dispatched time: the task is a sleep (or a CPU burn) without an end of its
  own, and when it has been continued for ``runtime_s`` in total the agent SIGKILLs it and
  reports exit status 0 (``usage.dispatched`` holds the accounted seconds). A ``--command``
  task runs until it exits, as without gang; ``shutdown``, SIGTERM, or the death of the parent launcher kill every task and end
  the agent. Tasks get PR_SET_PDEATHSIG, and every process a task starts is contained
  (:mod:`nodes.contain`: a cgroup per task, else the agent as subreaper and the task's
  session): it ends with the task, a ``kill``, the agent, and (through the daemon or the
  launcher, which end a dead agent's cgroups) a SIGKILLed agent.

The agent is composed of parts, one module each: ``table`` (:mod:`nodes.tasks`: the task
messages and the task table), ``spawner`` (:mod:`nodes.spawn`: starting a task cold), ``warm``
(:mod:`nodes.warm`: the pre-started warm child, which a ``run`` hands out), ``fwd``
(:mod:`nodes.outfwd`: its command tasks' output sent to the daemon, from an output directory
that is not the daemon's; a task's ``task_done`` follows its output), and :mod:`nodes.sched`
(scheduling policy, PR_SET_PDEATHSIG). This module keeps the socket, the registration and the loop.

The loop is the live kernel's (emulator.live.kernel): the socket is a reader, SIGCHLD, SIGTERM
and SIGINT come through its wake-up pipe (a task's end is reported within milliseconds: the
live-vs-simulator agreement depends on it), and the timers (heartbeat, the daemon's liveness,
tasks' dispatched time, the warm child, reports, reconnection, the parent check) are one
deadline (:meth:`Agent._due`) looked at after every turn (:meth:`Agent._after`).
"""
from __future__ import annotations

import argparse
import os
import random
import signal
import socket
import sys

import zmq

from emulator.live import auth
from emulator.live import config as configmod
from emulator.live import keys as keysmod
from emulator.live import protocol as P
from emulator.live.kernel import Kernel
from nodes.sched import (  # noqa: F401 - also importable from nodes.agent, as before the split
    PR_SET_PDEATHSIG, SCHED_IDLE, may_leave_idle, set_batch, set_pdeathsig, set_rt_priority,
)
from nodes.taskenv import remote_env
from nodes.contain import TaskBox
from nodes.outfwd import OutputForwarder
from nodes.spawn import SETPRIV, SLEEP, Spawner  # noqa: F401
from nodes.tasks import REPORT_DELAY, Task, TaskTable  # noqa: F401
from nodes.warm import WARM_DELAY, WARM_FIRST, WARM_MAX_SCRIPT, WarmChild  # noqa: F401

HEARTBEAT_IN = P.heartbeat_frame()  # an equal frame needs no decoding (five a second when idle)
_NOBLOCK, _EVENTS, _POLLIN = int(zmq.NOBLOCK), int(zmq.EVENTS), int(zmq.POLLIN)
QUICK = frozenset({"run", "ack"})  # messages that move only the timers their handler reports
# A node answers each daemon heartbeat (any message) in the same wake-up, so its heartbeats
# follow the daemon's waves; its own timer only fires after OWN_HEARTBEAT intervals without
# sending (a silent daemon). At one interval it fired just before a wave the daemon held back
# (emulator.live.manager.START_QUIET) and the node woke twice per interval from then on.
OWN_HEARTBEAT = 1.5
# seconds between checks that the launcher is still the parent (its death also sends SIGTERM,
# PR_SET_PDEATHSIG): a timer of its own, so every idle node wakes for it; rarely, then
PARENT_CHECK = 5.0
TIDY_EVERY = 0.05  # seconds between tries to remove a killed task's cgroup that is not empty yet


class Agent:
    def __init__(self, node: int, endpoint: str, heartbeat: float = 0.2, liveness: int = 3,
                 max_backoff: float = 1.0, parent_pid: int | None = None, output_dir: str | None = None,
                 rt_priority: int | None = None, sched: str = "batch", key: str | None = None, clock=None):
        self.node, self.endpoint = node, endpoint
        self.kernel = Kernel(clock)
        self.clock = self.kernel.now
        self.sock = None
        # a node joining over tcp authenticates with a node credential (emulator.live.keys),
        # read now: a bad file is an error before anything starts
        path = auth.key_for(endpoint, key)
        self.credential = keysmod.credential(path) if path else None
        # over tcp its tasks reach the interconnect's tcp port with this credential (every task
        # and the warm child inherit this process's environment)
        os.environ.update(remote_env(endpoint, path))
        self.hb, self.liveness, self.max_backoff = heartbeat, liveness, max_backoff
        self.own_hb, self.expiry = heartbeat * OWN_HEARTBEAT, heartbeat * liveness
        self.parent_pid = parent_pid
        self.output_dir = output_dir
        self.rt_priority = rt_priority
        if sched not in ("batch", "normal"):
            raise ValueError(f"sched must be batch or normal, not {sched!r}")
        self.sched = sched
        # the agent's threads run at SCHED_RR or SCHED_BATCH: its tasks are set back to
        # SCHED_NORMAL (they must not inherit a real-time priority, nor batch's lack of
        # wake-up preemption)
        self.reset_policy = False
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.box = TaskBox(sweep_dead=parent_pid is None)  # a cgroup per task, or the agent as subreaper
        self.table = TaskTable(self)
        self.warm = WarmChild(self)
        self.spawner = Spawner(self)
        self.fwd = OutputForwarder(self)  # its tasks' output to the daemon, from another output directory
        self.stopping = False
        self.registered = False
        self.wake_at = 0.0    # the loop's next look at its timers (see run)
        self.reconnect_at = None  # while disconnected: when to open a new socket
        self.next_check = 0.0     # when to check that the launcher is still the parent
        self.umask = os.umask(0)
        os.umask(self.umask)

    # ------------------------------------------------------------------ socket

    def _open(self):
        s = self.ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.RECONNECT_IVL, 100)
        s.setsockopt(zmq.RECONNECT_IVL_MAX, 1000)
        if self.credential is not None:
            auth.use_credential(s, self.credential)
        s.connect(self.endpoint)
        self.sock = s
        self.kernel.add_reader(s, self._on_socket)
        self.registered = False
        self._register()
        self.last_recv = self.clock()

    def _close(self, linger: int = 0):
        self.kernel.remove_reader(self.sock)
        self.sock.close(linger=linger)

    def _register(self):
        self.fwd.registering()  # before the list of finished tasks: those waiting for their output are not in it
        self._send("register", node=self.node, pid=self.pid, host=self.host,
                   tasks=[{"job": t.job, "attempt": t.attempt, "rank": t.rank, "pid": t.pid}
                          for t in self.table.tasks.values()],
                   # a task_done held for its output (nodes.outfwd) comes after that output
                   finished=[r for k, r in self.table.unacked.items() if k not in self.fwd.held])

    def _send(self, type_, **fields) -> bool:
        return self._send_frame(P.encode_unchecked(type_, **fields))

    def _send_frame(self, frame) -> bool:
        """False when the frame was not queued (queue full, no peer: liveness takes over)."""
        try:
            self.sock.send(frame, flags=_NOBLOCK)
            sent = True
        except zmq.ZMQError:
            sent = False
        self.last_send = self.clock()
        return sent

    # ------------------------------------------------------------------ loop

    def run(self) -> int:
        self._setup()
        try:
            self.kernel.run()
        finally:
            self._teardown()
        return 0

    def _setup(self) -> None:
        """Signals, the scheduling policy, the ZeroMQ context, the first registration, the
        kernel's deadline and end-of-turn work."""
        k = self.kernel
        k.on_signal(signal.SIGCHLD, self._on_child)
        k.on_signal(signal.SIGTERM, self._on_term)
        k.on_signal(signal.SIGINT, self._on_term)
        if self.rt_priority:
            # before the ZeroMQ context: its I/O thread inherits the policy
            why = set_rt_priority(self.rt_priority)
            if why:
                print(f"node {self.node}: {why}; running at normal priority", file=sys.stderr, flush=True)
            else:
                self.reset_policy = True
        if not self.reset_policy and self.sched == "batch":
            self.reset_policy = set_batch() is None
        # a warm child waits at SCHED_IDLE where it may be set back to SCHED_NORMAL when handed
        # out; elsewhere at SCHED_BATCH (unprivileged: leaving SCHED_IDLE is refused)
        idle = SCHED_IDLE is not None and may_leave_idle()
        self.warm.policy = SCHED_IDLE if idle else getattr(os, "SCHED_BATCH", None)
        self.ctx = zmq.Context(io_threads=1)
        self.ctx.setsockopt(zmq.LINGER, 0)
        self._open()
        self.backoff = self.hb
        self.reconnect_at = None
        self.next_check = 0.0
        self.tend = True
        self.hb_frame = P.heartbeat_frame(self.node)
        tt = self.table
        self.handlers = {"run": tt.on_run, "kill": lambda m: tt.send_signal(m, signal.SIGKILL),
                         "suspend": lambda m: tt.send_signal(m, signal.SIGSTOP),
                         "resume": lambda m: tt.send_signal(m, signal.SIGCONT), "switch": tt.on_switch,
                         "welcome": self.on_welcome, "ack": self.on_ack, "shutdown": self.on_shutdown,
                         "error": self.on_error, "output_at": self.fwd.rewind}
        k.add_deadline(self._due)
        k.after_turn(self._after)

    def _due(self) -> float:
        """The next time the loop must look at its timers: the task and agent timers
        (``wake_at``, kept by :meth:`_tend`), the own heartbeat and the daemon's liveness."""
        if self.tend:
            return self.clock()
        if self.reconnect_at is not None:
            return self.wake_at
        return min(self.wake_at, self.last_send + self.own_hb, self.last_recv + self.expiry)

    def _on_socket(self) -> None:
        """The hot path (a 64-node job wakes 64 agents on two cores, each from cold caches,
        ~150 us of CPU per wake-up): ``run``s, ``ack``s and heartbeats are handled here; any
        other message has the timers looked at again (``tend``)."""
        sock, decode, handlers = self.sock, P.decode, self.handlers
        # EVENTS, not recv until zmq.Again: raising Again costs a strerror per wake-up
        while not self.stopping and sock.getsockopt(_EVENTS) & _POLLIN:
            try:
                frame = sock.recv(_NOBLOCK)
            except zmq.Again:
                break
            now = self.last_recv = self.clock()
            if frame != HEARTBEAT_IN:
                try:
                    m = decode(frame, max_size=P.MAX_WIRE, allowed=P.TO_NODE_TYPES)
                except P.ProtocolError:
                    continue
                t = m["type"]
                h = handlers.get(t)
                if h is not None:
                    h(m)
                if t not in QUICK:
                    self.tend = True
                if self.sock is not sock:
                    break
            if now - self.last_send >= self.hb / 2:
                # answering in the same wake-up as the daemon's heartbeat halves the
                # wake-ups of an idle node (1024 of them share two cores)
                self._send_frame(self.hb_frame)

    def _on_child(self) -> None:
        self.tend = True  # a task ended: reaped by _tend

    def _after(self) -> None:
        if self.stopping:
            self.kernel.stop()
            return
        now = self.clock()
        if self.reconnect_at is None and now - self.last_send >= self.own_hb:
            self._send_frame(self.hb_frame)  # the daemon has been quiet: a heartbeat of our own
        if self.tend or now >= self.wake_at or (self.reconnect_at is None and now - self.last_recv >= self.expiry):
            self.tend = False
            if self._tend() is None:
                self.stopping = True
                self.kernel.stop()

    def _tend(self) -> float | None:
        """Signals' work, the task and warm-child timers, reconnection: after a signal, a timer,
        or a message other than run/ack; not on the wake-ups of ``run``s and heartbeats (the hot
        path, :meth:`_on_socket`). Returns when the loop must look at the timers again (also set
        as ``wake_at``), or None to stop."""
        now = self.clock()
        if now >= self.next_check:
            # the launcher's death is signalled (PR_SET_PDEATHSIG); this is the fallback
            self.next_check = now + PARENT_CHECK
            if self.parent_pid is not None and os.getppid() != self.parent_pid:
                return None  # the launcher is gone
        if self.stopping:
            return None
        due = self.table.next_due()
        if due is not None and due <= now:
            self.table.expire()
        if self.warm.at is not None and now >= self.warm.at:
            self.warm.start()
        tidy = self.box.pending and self.box.tidy()  # killed task cgroups to remove once empty
        if self.reconnect_at is None:
            self.table.reap()
            if self.fwd.due is not None and self.clock() >= self.fwd.due:
                self.fwd.poll()  # after reap: a task_done held for its output goes with the last of it
            if self.table.report_at is not None and now >= self.table.report_at:
                self.table.send_reports()
            now = self.clock()
            if now - self.last_recv >= self.hb * self.liveness:
                self._close()  # Paranoid Pirate: the daemon is gone
                self.reconnect_at = now + self.backoff
                self.backoff = min(self.backoff * 2, self.max_backoff)
        else:
            self.table.reap(send=False)  # reported on registration
            if now >= self.reconnect_at:
                self.reconnect_at = None
                self._open()
        wake = self.next_check
        if self.reconnect_at is not None:
            wake = min(wake, self.reconnect_at)
        elif self.table.report_at is not None:
            wake = min(wake, self.table.report_at)
        if self.reconnect_at is None and self.fwd.due is not None:
            wake = min(wake, self.fwd.due)
        due = self.table.next_due()
        if due is not None:
            wake = min(wake, due)
        if self.warm.at is not None:
            wake = min(wake, self.warm.at)
        if tidy:
            wake = min(wake, now + TIDY_EVERY)
        self.wake_at = wake
        return wake

    def _teardown(self) -> None:
        """Kill every task; say ``bye`` when registered and connected; end ZeroMQ."""
        self.table.kill_all()
        if self.reconnect_at is None and self.registered:
            self._send("bye", node=self.node)
            self._close(linger=200)
        elif self.reconnect_at is None:
            self._close()
        self.kernel.close()
        self.ctx.term()

    def on_welcome(self, m):
        self.registered, self.backoff = True, self.hb
        self.fwd.welcome(m)
        if self.warm.child is None and self.warm.at is None:
            self.warm.at = self.clock() + WARM_FIRST[0] + random.random() * WARM_FIRST[1]

    def on_ack(self, m):
        self.table.ack((m["job"], m["attempt"]))
        self.fwd.acked((m["job"], m["attempt"]))

    def on_shutdown(self, m):
        self.stopping = True

    def on_error(self, m):
        if m["code"] == "unregistered":
            self._register()

    def _wake(self, when):
        """A handler that sets a timer the loop does not look at again (the hot path) says so."""
        if when is not None and when < self.wake_at:
            self.wake_at = when

    def _on_term(self, *_):
        self.stopping = True


def run_node(node: int, endpoint: str, **kw) -> int:
    kw = {k: v for k, v in kw.items() if v is not None or k not in ("rt_priority", "sched")}
    return Agent(node, endpoint, **kw).run()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="mcemu-node", description="one mcemu node agent")
    ap.add_argument("--connect", required=True, help="daemon endpoint, e.g. tcp://HOST:PORT or ipc://PATH")
    ap.add_argument("--id", type=int, required=True, help="node id in the topology")
    configmod.add_arguments(ap, configmod.NODE)  # heartbeat, liveness, ...: emulator.live.config
    ap.add_argument("--output-dir")
    ap.add_argument("--key", help="node credential for a tcp daemon (default: MCEMU_KEY)")
    a = ap.parse_args(argv)
    return run_node(a.id, a.connect, output_dir=a.output_dir, key=a.key, **configmod.node_keywords(a))


if __name__ == "__main__":
    sys.exit(main())
