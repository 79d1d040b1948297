"""The processor-manager daemon: ``python -m emulator.live.daemon`` (started by ``mcemu up``).

Shape (the ZeroMQ guide's broker, with Paranoid Pirate liveness): one ROUTER serves the node
agents and the clients (all DEALERs), one PUB sends events (``job``, ``node`` and a periodic
``snapshot`` with the policy's queues) for the monitor. One poll loop: poll with a timeout
of at most the heartbeat interval, drain and dispatch the messages by type, run the policy's
timer (``next_wakeup``), purge nodes whose heartbeats stopped, send heartbeats, commit the
journal, and only then send the replies, task messages and events that the iteration
produced (a state change is on disk before anyone hears of it).

Where the rest is (emulator/live/):

==================  ==================================================================================
daemon.py           this: the sockets, the loop, message dispatch, ``main``
manager.py          ProcessorManager, the core: policy inputs and decisions, the job lifecycle
node_handlers.py    what the nodes send (register, task reports, bye); node faults
client_handlers.py  the clients' requests (submit, cancel, queue, nodes, status, comm, ...)
config.py           the settings: defaults, the journal's configuration, ``--param``
jobs.py             JobRec: one job's record
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
import math
import os
import signal
import sys
import time
from pathlib import Path

import zmq

from emulator.live import auth
from emulator.live import config as configmod
from emulator.live import home as homemod
from emulator.live import protocol as P
from emulator.live import sockets
from emulator.live.manager import ProcessorManager
from emulator.live.views import _jsonable  # noqa: F401  (tests and tools import it from here)

log = logging.getLogger("mcemu.daemon")

BATCH = 4096  # messages drained per iteration before the loop services timers
HB_GROUPS = 8  # heartbeats go to one eighth of the nodes every hb / 8 (NodeRegistry.heartbeat_wave)
_MORE = int(zmq.SNDMORE | zmq.NOBLOCK)  # plain ints: pyzmq's flag enums cost more than the send
_LAST = int(zmq.NOBLOCK)
_POLLIN = int(zmq.POLLIN)


class Daemon(ProcessorManager):
    ALLOWED = P.NODE_TYPES | P.CLIENT_TYPES | P.LOCAL_TYPES

    def __init__(self, home: Path, config: dict | None = None, listen: str | None = None,
                 grace: float = 5.0, snapshot_every: float = 1.0, fsync: bool = False, insecure: bool = False):
        super().__init__(home, config, grace=grace, snapshot_every=snapshot_every, fsync=fsync)
        self.listen = listen
        self.insecure = insecure
        self.ctx = self.router = self.pub = self.zap = None
        self.secure = bool(listen) and not insecure  # tcp peers are CURVE principals (emulator.live.auth)
        # bound once: a message costs one dict lookup and one call, as before the split
        self.node_handlers = {"task_done": self.on_task_done, "task_started": self.on_task_started,
                              "switched": self.slots.on_switched, "bye": self.on_bye}
        self.client_handlers = {"submit": self.on_submit, "cancel": self.on_cancel, "queue": self.on_queue,
                                "nodes": self.on_nodes, "status": self.on_status, "ping": self.on_ping,
                                "shutdown": self.on_shutdown, "comm": self.on_comm}

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

    # ------------------------------------------------------------------ the loop

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
        if self.peers:
            why = auth.forbidden(self.principal_of(ident), t, P.NODE_TYPES, P.CLIENT_TYPES)
            if why:
                return self._error(ident, "forbidden", why, m.get("id"))
        if nr is not None:
            nr.last = time.monotonic()
        if t == "heartbeat":
            if nr is None:
                self._error(ident, "unregistered", "heartbeat from an unregistered peer: register first")
            return
        if t == "register":
            return self.on_register(ident, m)
        h = self.node_handlers.get(t)
        if h is not None:
            if nr is None:
                return self._error(ident, "unregistered", f"{t} from an unregistered peer: register first")
            if m["node"] != nr.id:
                return self._error(ident, "bad-node", f"{t} names node {m['node']} but this peer is node {nr.id}")
            return h(nr, m)
        return self.client_handlers[t](ident, m)

    def _drain(self):
        r = self.router
        for _ in range(BATCH):
            # EVENTS, not recv until zmq.Again: raising Again costs a strerror per wake-up
            if not r.getsockopt(zmq.EVENTS) & _POLLIN:
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

    def _principal(self, frames: list) -> list:
        """Record who sent a message (its frame's ZAP User-Id; none over ipc) the first time a
        connection speaks; returns the frames as bytes."""
        ident = frames[0].bytes
        if ident not in self.peers:
            try:
                uid = frames[-1].get("User-Id")
            except zmq.ZMQError:
                uid = None  # ipc: no security mechanism, the owner's socket
            if len(self.peers) > 100_000:  # ids of connections long gone
                self.peers.clear()
            self.peers[ident] = auth.from_user_id(uid)
        return [ident] + [f.bytes for f in frames[1:]]

    def serve(self, ready=None):
        self.running = True
        poller = zmq.Poller()
        poller.register(self.router, zmq.POLLIN)
        if self.zap is not None:
            poller.register(self.zap.sock, zmq.POLLIN)
        policy = self.policy
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
            wake = policy.next_wakeup()
            if wake is not None:
                timeout = min(timeout, max(0.0, wake * self.time_unit + self.t0 - wall, tick_floor - wall))
            # pyzmq truncates the timeout to whole ms: rounded down, a wait under 1 ms would
            # spin (poll(0)) until it is over
            if poller.poll(math.ceil(timeout * 1000.0)):
                if self.zap is not None:
                    self.zap.handle()
                self._drain()
            wake = policy.next_wakeup()
            if wake is not None and wake <= self.now() and time.monotonic() >= tick_floor:
                self._input("tick")
                w2 = policy.next_wakeup()
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
                self.registry.heartbeat_wave(wall, self.outbox, hb_group, HB_GROUPS)
                hb_group = (hb_group + 1) % HB_GROUPS
                next_hb = wall + self.hb / HB_GROUPS
            if wall >= next_snap and wall >= self.quiet_until:
                self.events.append((b"snapshot", P.encode_unchecked("snapshot", t=self.now(), data=self.snapshot())))
                next_snap = wall + self.snapshot_every
            self._flush()
        self.stop()

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
            from emulator.live import keys as keysmod

            keysmod.server(home)  # the keys exist and read, before anything changes
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
