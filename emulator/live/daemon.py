"""The processor-manager daemon: ``python -m emulator.live.daemon`` (started by ``mcemu up``).

Shape (the ZeroMQ guide's broker): one ROUTER serves the node agents and the clients (all
DEALERs), one PUB sends events (``job``, ``node`` and a periodic ``snapshot`` with the policy's
queues) for the monitor. It runs on the live kernel (emulator.live.kernel), with its clock:
readers (the ROUTER: drain and dispatch the messages by type; the ZAP socket; a pidfd per node
process of this host, readable when it ends), timers (heartbeat waves, which purge the nodes
that fell silent, and snapshots), a deadline (the policy's timer, ``next_wakeup``), and at the
end of every turn the policy's tick when due, the journal's commit and only then the replies,
task messages and events the turn produced (a state change is on disk before anyone hears of
it). Liveness: emulator.live.nodes.
No client can stall it (issue 30): a turn's handlers and listings are bounded (TURN_BUDGET,
SLICE_BUDGET), a client's quota and rate are emulator.live.admission's.

Where the rest is (emulator/live/):

==================  ==================================================================================
daemon.py           this: the sockets, the kernel's readers and timers, message dispatch, ``main``
kernel.py           the live kernel: readers, timers, deadlines, signals, the clock, the one wait
manager.py          ProcessorManager, composed of the parts below; decisions and the job lifecycle
policy_port.py      PolicyPort: the one place the policy is called; model time
node_handlers.py    what the nodes send (register, task reports, bye); node faults; watched processes
outsink.py          the output of nodes of another output directory, into this home's ``output/``
client_handlers.py  the clients' requests (submit, cancel, queue, nodes, status, comm, ...)
admission.py        what a principal may ask, and how much: quotas, request rates, job names
config.py           the settings: defaults, the journal's configuration, ``--param``
jobs.py             JobRec: one job's record; JobBook: the records, ``transition``
nodes.py            NodeRegistry: node processes, liveness, heartbeat waves
gang.py             GangSlots (time sharing) or NoSlots (a discipline): the only gang-aware code
recovery.py         the journal replay after a crash
views.py            status, snapshot, queue and node rows
journal.py          the SQLite journal; protocol.py the messages; client.py the client side
==================  ==================================================================================
"""
from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from pathlib import Path

import zmq

from emulator.live import auth
from emulator.live import config as configmod
from emulator.live import home as homemod
from emulator.live import keys as keysmod
from emulator.live import protocol as P
from emulator.live import secret as secretmod
from emulator.live import sockets
from emulator.live.kernel import Kernel
from emulator.live.manager import ProcessorManager
from emulator.live.views import _jsonable  # noqa: F401  (tests and tools import it from here)

log = logging.getLogger("mcemu.daemon")

BATCH = 4096  # messages drained per iteration before the loop services timers
# seconds of handlers per drain, and of listings' slices per turn (issue 30): past them the turn
# ends (its replies and heartbeats go out, timers run) and the rest waits for the next
TURN_BUDGET = 0.02
SLICE_BUDGET = 0.01
HB_GROUPS = 8  # heartbeats go to one eighth of the nodes every hb / 8 (NodeRegistry.heartbeat_wave)
_MORE = int(zmq.SNDMORE | zmq.NOBLOCK)  # plain ints: pyzmq's flag enums cost more than the send
_LAST = int(zmq.NOBLOCK)
_POLLIN = int(zmq.POLLIN)


class Daemon(ProcessorManager):
    ALLOWED = P.NODE_TYPES | P.CLIENT_TYPES | P.LOCAL_TYPES

    def __init__(self, home: Path, config: dict | None = None, listen: str | None = None,
                 grace: float = 5.0, snapshot_every: float = 1.0, fsync: bool = False, insecure: bool = False,
                 clock=None):
        kernel = Kernel(clock)
        super().__init__(home, config, grace=grace, snapshot_every=snapshot_every, fsync=fsync, clock=kernel.now)
        self.kernel = kernel
        self.wire: list = []  # what was sent, when serving without sockets (a test's in-memory transport)
        self.hb_group = 0
        self.caught_up = 0.0  # when the daemon last had read every message that had come (see _read_by)
        self.listen = listen
        self.insecure = insecure
        self.ctx = self.router = self.pub = self.zap = None
        self.secure = bool(listen) and not insecure  # tcp peers are CURVE principals (emulator.live.auth)
        # bound once: a message costs one dict lookup and one call, as before the split
        fn, fc = self.from_nodes, self.from_clients
        self.node_dispatch = {"task_done": fn.on_task_done, "task_started": fn.on_task_started,
                              "switched": self.slots.on_switched, "bye": fn.on_bye, "output": fn.output.on_output}
        self.client_dispatch = {"submit": fc.on_submit, "cancel": fc.on_cancel, "queue": fc.on_queue,
                                "nodes": fc.on_nodes, "status": fc.on_status, "ping": fc.on_ping,
                                "shutdown": fc.on_shutdown, "comm": fc.on_comm, "tail": fc.on_tail}

    # ------------------------------------------------------------------ sockets

    def bind(self):
        self.ctx = sockets.server_context()
        r = self.router = sockets.router(self.ctx, 200_000)
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
        endpoints = {"control": ctl, "events": ev, "insecure": bool(self.listen) and self.insecure}
        if self.listen:
            if self.secure:
                # libzmq copies a socket's options into each bind: the ipc endpoints above stay
                # plain, the tcp ones below are CURVE; the ZAP handler exists before them (without
                # one libzmq lets every key in)
                self.zap = auth.Zap(self.ctx, self.home)
                auth.curve_server(r, self.home)
                auth.curve_server(p, self.home)
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

    def _flush(self):
        self.journal.commit()
        r = self.router
        if r is None:  # not bound: a test reads what would have gone out
            self.wire.extend(self.outbox)
            self.wire.extend(self.events)
            self.outbox.clear()
            self.events.clear()
            return
        now = self.clock()
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

    # ------------------------------------------------------------------ the loop

    def handle(self, frames):
        if len(frames) != 2:
            if frames:
                self._error(frames[0], "frames", f"expected one frame per message, got {len(frames) - 1}")
            return
        ident, frame = frames
        nr = self.by_ident.get(ident)
        if nr is not None and frame == nr.hb:
            self.registry.heard(nr, self.clock())
            return
        try:
            m = P.decode(frame, allowed=self.ALLOWED)
        except P.ProtocolError as e:
            self.outbox.append((ident, P.error_frame(e)))
            return
        t = m["type"]
        if self.peers:
            p = self.principal_of(ident)
            why = auth.forbidden(p, t, P.NODE_TYPES, P.CLIENT_TYPES)
            if why:
                return self._error(ident, "revoked" if p.role == "revoked" else "forbidden", why, m.get("id"))
            if t in P.CLIENT_TYPES:
                why = self.admission.spend(p)
                if why:
                    return self._error(ident, "rate-limited", why, m.get("id"))
        if nr is not None:
            self.registry.heard(nr, self.clock())
        if t == "heartbeat":
            if nr is None:
                self._error(ident, "unregistered", "heartbeat from an unregistered peer: register first")
            return
        if t == "register":
            return self.from_nodes.on_register(ident, m)
        h = self.node_dispatch.get(t)
        if h is not None:
            if nr is None:
                return self._error(ident, "unregistered", f"{t} from an unregistered peer: register first")
            if m["node"] != nr.id:
                return self._error(ident, "bad-node", f"{t} names node {m['node']} but this peer is node {nr.id}")
            return h(nr, m)
        return self.client_dispatch[t](ident, m)

    def _drain(self):
        """The messages waiting, for at most TURN_BUDGET seconds of handlers, so that a flood
        cannot hold the turn's replies, heartbeats and timers; the ROUTER reads its connections
        in turn, so the admin's request is among the first of the next turn."""
        r = self.router
        clock = self.clock
        until = clock() + TURN_BUDGET
        for _ in range(BATCH):
            # EVENTS, not recv until zmq.Again: raising Again costs a strerror per wake-up
            if not r.getsockopt(zmq.EVENTS) & _POLLIN:
                self.caught_up = clock()
                break
            try:
                frames = r.recv_multipart(flags=zmq.NOBLOCK, copy=not self.secure)
            except zmq.Again:
                break
            if self.secure:
                frames = self._principal(frames)
            try:
                self.handle(frames)
            except Exception:  # a handler bug must not take the cluster down
                log.exception("handler failed on %r", frames[-1][:200] if frames else frames)
            if clock() > until:
                break
        # what the messages caused goes out before this turn's timers (a heartbeat wave, a
        # snapshot of every node): a start's run messages and a job's "started" wait for neither
        self._turn()

    def _read_by(self, now: float) -> float:
        """The last moment the daemon had read every message that had come to it: a node's
        silence counts up to there, never through a stretch when the daemon itself was late
        (a long turn, a backlog), whose messages may wait unread (issue 30)."""
        r = self.router
        if r is None or not r.getsockopt(zmq.EVENTS) & _POLLIN:
            self.caught_up = now
        return self.caught_up

    def _principal(self, frames: list) -> list:
        """Record who sent a message (its frame's ZAP User-Id; none over ipc) the first time a
        connection speaks; returns the frames as bytes."""
        ident = frames[0].bytes
        if ident not in self.peers:
            if len(self.peers) > 100_000:  # ids of connections long gone
                self.peers.clear()
            p = auth.from_frame(frames[-1])
            p = self.peers[ident] = self.zap.vet(p) if self.zap is not None else p  # revoked since its handshake?
            if p.role == "revoked":
                self.from_nodes.revoked([ident])  # a node's heartbeats must not keep it
        return [ident] + [f.bytes for f in frames[1:]]

    def serve(self, ready=None):
        """Serve on the kernel until ``shutdown``, SIGTERM or SIGINT."""
        k = self.kernel
        self.attach()
        k.on_signal(signal.SIGTERM, self._stop_serving)
        k.on_signal(signal.SIGINT, self._stop_serving)
        if ready:
            ready()
        try:
            k.run()
        finally:
            k.close()
            self.stop()

    def attach(self):
        """Put the daemon's readers, timers, deadline and end-of-turn work on its kernel."""
        k = self.kernel
        self.running = True
        if self.router is not None:
            k.add_reader(self.router, self._drain)
        if self.zap is not None:
            k.add_reader(self.zap.sock, self.zap.handle)
            self.zap.watch(k, self.peers, self.from_nodes.revoked)  # revocations end open connections
        for nr in self.nodes:  # nodes registered while the journal was replayed
            if nr.ident is not None and nr.pidfd is None:
                self.from_nodes.watch(nr, nr.ident)
        if self.cfg.get("network") and self.router is not None:  # emulator.live.netkeeper
            from emulator.live.netkeeper import NetKeeper

            self.netkeeper = NetKeeper(self, k)
            self.netkeeper.attach()
        k.add_deadline(self._tick_due)
        k.add_deadline(self._work_due)
        k.after_turn(self._turn)
        now = self.clock()
        k.call_at(now, self._wave)
        k.call_at(now, self._snapshot)

    def _stop_serving(self):
        self.running = False
        self.kernel.stop()

    def _work_due(self):
        """Now, while listings are being built (their slices go on in the next turn)."""
        return self.clock() if self.from_clients.pending() else None

    def _turn(self):
        """The end of every turn: the policy's timer, then what the turn caused goes out."""
        if self.quiet_until and self.clock() >= self.quiet_until:
            self.starting.clear()  # a start that never completed (a node lost): give up waiting
            self.quiet_until = 0.0
        self._tick()
        if self.from_clients.listings:
            self.from_clients.work(self.clock() + SLICE_BUDGET)
        if self.outbox or self.events:
            self._flush()
        if not self.running:
            self.kernel.stop()

    def _wave(self):
        """Heartbeats to one group of nodes (every ``hb / HB_GROUPS``); the purge with group 0.
        Both wait while a job's tasks start (``quiet_until``)."""
        now = self.clock()
        if now < self.quiet_until:
            self.kernel.call_at(self.quiet_until, self._wave)
            return
        if self.hb_group == 0:
            self.from_nodes.purge(self._read_by(now))
        self.registry.heartbeat_wave(now, self.outbox, self.hb_group, HB_GROUPS)
        self.hb_group = (self.hb_group + 1) % HB_GROUPS
        self.kernel.call_at(now + self.hb / HB_GROUPS, self._wave)

    def _snapshot(self):
        now = self.clock()
        if now < self.quiet_until:
            self.kernel.call_at(self.quiet_until, self._snapshot)
            return
        self.events.append((b"snapshot", P.encode_unchecked("snapshot", t=self.now(), data=self.snapshot())))
        self.kernel.call_at(now + self.snapshot_every, self._snapshot)

    def stop(self):
        """Tell every node to stop (they kill their tasks), close the journal and sockets; an
        interconnect this daemon started itself (a restart) is stopped too: ``mcemu down`` read
        the cluster's pids before its shutdown, and would not know of one started since."""
        keeper = getattr(self, "netkeeper", None)
        if keeper is not None:
            keeper.stop()
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
                if self.zap is not None:
                    self.zap.close()
                self.ctx.term()


def _arguments(argv):
    ap = argparse.ArgumentParser(prog="mcemu-daemon", description="the mcemu processor-manager daemon")
    ap.add_argument("--home", default=None)
    ap.add_argument("--fsync", action="store_true")
    configmod.add_arguments(ap, configmod.DAEMON)  # what `mcemu up` passes (emulator.live.config.SETTINGS)
    return ap.parse_args(argv)


def _realtime(priority: int):
    # before bind: the ZeroMQ I/O thread inherits the policy; one level above the nodes,
    # so that a slot switch is handed to every node before the first node's work
    prio = min(priority + 1, os.sched_get_priority_max(os.SCHED_RR))
    try:
        os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(prio))
        log.info("running at SCHED_RR priority %d", prio)
    except (OSError, AttributeError) as e:
        log.warning("--rt-priority %d not permitted (%s): running at normal priority", priority, e)


def main(argv=None) -> int:
    a = _arguments(argv)
    if a.home:
        os.environ["MCEMU_HOME"] = a.home
    home = homemod.home_dir()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s daemon %(levelname)s %(message)s")
    try:
        asked = configmod.given(**configmod.values(a, configmod.DAEMON))
        if a.listen and not a.insecure:
            keysmod.server(home)  # the keys exist and read, before anything changes
        secretmod.cluster_key(home)  # the tasks' secrets' key: a corrupt one stops the start, not a job
        d = Daemon(home, asked, listen=a.listen, grace=a.grace, fsync=a.fsync, insecure=a.insecure)
    except (ValueError, KeyError) as e:  # KeyError: scheduler.registry.UnknownPolicy
        print(f"mcemu daemon: error: {configmod.message(e)}", file=sys.stderr)
        return 2
    homemod.raise_nofile(d.topology.size + 256)
    if a.rt_priority:
        _realtime(a.rt_priority)
    d.bind()
    homemod.write_pidfile(home / "daemon.pid")
    log.info("serving %s (%s, %s %s) on %s", d.topology, d.cfg["allocator"], d.slots.kind, d.policy.name,
             d.endpoints)
    try:
        d.serve()
    finally:
        homemod.remove(home, "daemon.pid", "daemon.sock", "events.sock")
    return 0


if __name__ == "__main__":
    sys.exit(main())
