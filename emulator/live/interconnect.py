"""The live cluster's interconnect: ``python -m emulator.live.interconnect --home H``.

Tasks (nodes.comm, DEALER) connect to ``ipc://$MCEMU_HOME/net.sock`` (ROUTER, mode 0600),
say which rank of which job they are (``net_hello``) and send payloads to other ranks
(``net_send``). The interconnect injects each message into the wormhole model
(scheduler.network.wormhole, the one ``mcemu net simulate`` runs) at the current *dilated*
network time, and at the delivery time the model gives forwards the payload bytes to the
receiving task (``net_msg``) and tells the sender (``net_delivered``), so a path loop can
wait for its delivery (both up to AHEAD early, with the due time, which nodes.comm waits
for before handing them over). Time: one network microsecond is ``net_dilation`` wall microseconds
(a flit of 0.05 us cannot be timed by processes); the model's flit time, message length
and start-up are its defaults, the same as ``mcemu net simulate``'s. Every message is one
packet of L flits in the model whatever its byte count (the text's fixed-length messages).

It learns the running jobs (``nodes``: rank i on the i-th node) and the down nodes from the
daemon's PUB events (and one ``queue``/``nodes`` listing at start), and reports each job's
statistics to the daemon (``comm``, as a LOCAL ipc peer) for ``mcemu queue`` and the journal.

Why a process of its own and not a part of the daemon: the two loops want opposite things.
The daemon's loop keeps heartbeats, job starts and the journal's commits, and must not be
late for them while a burst of messages goes through; the interconnect's loop sleeps to the
model's next delivery and wants to be woken exactly then, not after a journal commit or a
64-node ``run`` fan-out. Apart, each has its own core on a 2-core machine when both are
busy, a crash of one does not take the other (a daemon recovery leaves a live interconnect
alone), and a cluster without ``--network`` pays nothing.

Hostile input changes nothing: a frame that does not decode, a type that is not NET_TYPES, a
payload above protocol.MAX_PAYLOAD, an unknown job, a wrong attempt or rank, a second
connection claiming a rank, a send before ``net_hello``, a destination on a down node: each
gets an ``error`` reply (with the request's id when it has one) and the loop carries on.
"""
from __future__ import annotations

import argparse
import gc
import heapq
import logging
import os
import signal
import sys
import time
from pathlib import Path

import zmq

from emulator.live import home as homemod
from emulator.live import protocol as P
from emulator.live import sockets
from emulator.live.netjobs import HELLO_WAIT, Jobs
from emulator.live.netlinks import LINK_WINDOW, Links
from scheduler.network.wormhole import Wormhole

log = logging.getLogger("mcemu.interconnect")

REPORT_EVERY = 0.5  # seconds between a job's ``comm`` reports while its messages flow
MAX_PENDING = 4096  # hellos waiting for their job's event; more are refused at once
SPIN = 60e-6  # a wait shorter than this polls again at once rather than sleep
# A delivery the model has made certain is handed to the tasks up to this long before its
# wall time, with that time (``due``); nodes.comm holds it until then. The receiving task's
# one timed sleep replaces the chain interconnect wake-up -> send -> task wake-up, whose
# scheduling delays on a busy machine were the p99 error (4.8 ms of a 25 ms message; with 3
# ms ahead still 4 ms, the interconnect's own wake-ups being up to 3 ms late at a load of 17
# on 2 cores). A delivery is known L - 1 flit times ahead (25 ms at the default dilation);
# where it is known later it is simply handed over as soon as it is known.
AHEAD = 0.010
_MORE, _LAST = int(zmq.SNDMORE | zmq.NOBLOCK), int(zmq.NOBLOCK)


def net_endpoint(home: Path) -> str:
    return homemod.ipc_endpoint(home, "net.sock")


class Interconnect:
    def __init__(self, home: Path, cfg: dict):
        self.home = Path(home)
        self.cfg = cfg
        self.net = Wormhole(cfg["topology"])  # the model's defaults: `mcemu net simulate`'s
        self.dilation = float(cfg["net_dilation"])
        self.t0 = time.monotonic()
        # wall seconds per flit time
        self.spf = self.net.flit_time * self.dilation / 1e6
        self.jobs = Jobs()
        self.msgs: dict[int, tuple] = {}  # tag -> (job, src rank, dst rank, sender ident, id, data, measured)
        self.releases: list = []  # (wall due, tag, Delivery): the deliveries the model made certain
        self._tag = 0
        self.next_report = 0.0
        self.links = Links(self.net)

    def flits(self, wall: float) -> float:
        return (wall - self.t0) / self.spf

    def wall(self, flits: float) -> float:
        return self.t0 + flits * self.spf

    # ------------------------------------------------------------------ sockets

    def bind(self):
        self.ctx = sockets.server_context()
        r = self.router = sockets.router(self.ctx, 100_000)
        ep = net_endpoint(self.home)
        try:
            os.unlink(ep[len("ipc://"):])  # a stale socket of a killed interconnect
        except FileNotFoundError:
            pass
        r.bind(ep)
        os.chmod(ep[len("ipc://"):], 0o600)
        self.sub = self.ctx.socket(zmq.SUB)
        self.sub.setsockopt(zmq.LINGER, 0)
        self.sub.setsockopt(zmq.RCVHWM, 1_000_000)
        for t in (b"job", b"node"):
            self.sub.setsockopt(zmq.SUBSCRIBE, t)
        self.sub.connect(homemod.events_endpoint(self.home))
        self.daemon = self.ctx.socket(zmq.DEALER)  # comm reports; replies are read and dropped
        self.daemon.setsockopt(zmq.LINGER, 0)
        self.daemon.connect(homemod.control_endpoint(self.home))
        self.endpoint = ep

    def sync(self, timeout: float = 10.0) -> None:
        """The jobs running and the nodes down when we start (events say what changes after)."""
        from emulator.live.client import Client, ClientError

        with Client(home=self.home, timeout=timeout) as c:
            try:
                for j in c.queue()["jobs"]:
                    if j["state"] == "running" and j["nodes"]:
                        self.jobs.start(j["id"], j["attempt"], j["nodes"])
                self.jobs.down = {n["node"] for n in c.nodes() if n["state"] == "down"}
            except ClientError as e:
                log.warning("no listing from the daemon (%s): jobs are learnt from events", e)

    def _send(self, ident: bytes, frame: bytes) -> bool:
        try:
            self.router.send(ident, _MORE)  # small frames: copying beats pyzmq's zero-copy bookkeeping
            self.router.send(frame, _LAST)
            return True
        except zmq.ZMQError:
            return False  # the task is gone (or not reading): its job's end tells us

    def _error(self, ident, code, message, req_id=None):
        self._send(ident, P.encode_unchecked("error", id=req_id, code=code, message=message))

    # ------------------------------------------------------------------ task messages

    def handle(self, frames: list, now: float) -> None:
        if len(frames) != 2:
            if frames:
                self._error(frames[0], "frames", f"expected one frame per message, got {len(frames) - 1}")
            return
        ident, frame = frames
        try:
            m = P.decode(frame, allowed=P.NET_TYPES)
        except P.ProtocolError as e:
            self._send(ident, P.error_frame(e))
            return
        t = m["type"]
        if t == "net_send":
            self.on_send(ident, m, now)
        elif t == "net_hello":
            self.on_hello(ident, m, now)
        elif t == "net_barrier":
            self.on_barrier(ident, m)
        else:
            doc = self.links.doc(self.dilation)
            # each running job's statistics so far: the monitor's running table shows the mean delay
            doc["jobs"] = {str(j.id): j.stats() for j in self.jobs.jobs.values()}
            self._send(ident, P.encode_unchecked("ok", id=m["id"], data=doc))

    def on_hello(self, ident, m, now):
        j, code, why = self.jobs.hello(ident, m)
        if code == "wait":
            if len(self.jobs.pending) >= MAX_PENDING:  # a flood of claims on unknown jobs
                return self._error(ident, "unknown-job", f"job {m['job']} is not running on this cluster")
            self.jobs.pending.append((now + HELLO_WAIT, ident, m))
            return
        if code:
            return self._error(ident, code, why)
        self.jobs.join(j, m.get("group"))
        rank = m["rank"]
        welcome = P.encode_unchecked("net_welcome", job=j.id, rank=rank, size=j.size, dilation=self.dilation,
                                     flit_time_us=self.net.flit_time, length_flits=self.net.length)
        if m.get("sync"):  # a start barrier: every rank welcomed together
            j.waiting.append((ident, welcome))
            if len(j.ranks) == j.size:
                for who, w in j.waiting:
                    self._send(who, w)
                j.waiting.clear()
        else:
            self._send(ident, welcome)
        for frame in j.inbox.pop(rank, ()):
            self._send(ident, frame)

    def on_barrier(self, ident, m):
        had = self.jobs.by_ident.get(ident)
        if had is None:
            return self._error(ident, "no-hello", "say net_hello (job, attempt, rank) before a barrier", m["id"])
        j, rank = had
        group = m.get("group")
        if group is None:
            done = [(j, r, rid) for r, rid in j.enter_barrier(rank, m["id"]) or ()]
        else:
            if group != j.group:
                return self._error(ident, "bad-group", f"job {j.id}'s tasks said hello in group {j.group!r}, "
                                                       f"not {group!r}", m["id"])
            j.gbarrier.setdefault(rank, []).append(m["id"])
            done = self.jobs.group_barrier(group)
        for job, r, rid in done:
            self._send(job.ranks[r], P.encode_unchecked("ok", id=rid, data=None))

    def _retry_pending(self, now):
        pend, self.jobs.pending = self.jobs.pending, []
        for deadline, ident, m in pend:
            if m["job"] in self.jobs.jobs:
                self.on_hello(ident, m, now)
            elif now >= deadline:
                self._error(ident, "unknown-job", f"job {m['job']} is not running on this cluster")
            else:
                self.jobs.pending.append((deadline, ident, m))

    def on_send(self, ident, m, now):
        had = self.jobs.by_ident.get(ident)
        if had is None:
            return self._error(ident, "no-hello", "say net_hello (job, attempt, rank) before sending", m["id"])
        j, rank = had
        to = m["to"]
        if to >= j.size:
            return self._error(ident, "bad-rank", f"job {j.id} has ranks 0-{j.size - 1}, not {to}", m["id"])
        src, dst = j.nodes[rank], j.nodes[to]
        if dst in self.jobs.down:
            return self._error(ident, "node-down", f"rank {to} of job {j.id} is on node {dst}, which is down",
                               m["id"])
        net = self.net
        self._tag += 1
        tag = self._tag
        self.msgs[tag] = (j, rank, to, ident, m["id"], m["data"], m.get("measured", True))
        net.send(src, dst, max(net.now, self.flits(now)), tag)

    # ------------------------------------------------------------------ the model

    def advance(self, now: float) -> None:
        """Run the model to the wall time ``now``; the deliveries it makes certain (their
        tails may still be on the way) are queued for release at their wall times."""
        net = self.net
        until = self.flits(now)
        while True:
            got = net.advance(until)
            if not got:
                break
            for d in got:
                heapq.heappush(self.releases, (self.wall(d.delivered), d.tag, d))

    def release(self, now: float) -> None:
        rel = self.releases
        net = self.net
        free0 = net.length - 1
        startup = net.us(net.startup)
        while rel and rel[0][0] - AHEAD <= now:
            due, tag, d = heapq.heappop(rel)
            j, rank, to, sender, rid, data, measured = self.msgs.pop(tag)
            if self.jobs.jobs.get(j.id) is not j:
                continue  # the job ended (or was requeued) while the message was in flight
            if j.nodes[to] in self.jobs.down:
                self._error(sender, "node-down", f"rank {to} of job {j.id} is on node {j.nodes[to]}, which "
                                                 f"went down before delivery", rid)
                continue
            delay = net.us(d.delivered - d.sent)
            j.record(delay, net.us(d.hops + free0) + startup, measured)
            frame = P.encode_unchecked("net_msg", source=rank, data=data, due=due)
            ident = j.ranks.get(to)
            if ident is None:
                j.inbox.setdefault(to, []).append(frame)
            else:
                self._send(ident, frame)
            self._send(sender, P.encode_unchecked("net_delivered", id=rid, delay_us=delay, due=due))
            self.links.late(time.monotonic() - (due - AHEAD))  # this loop's own lateness

    def next_wake(self, now: float) -> float:
        """The next wall time the loop must run: a release, the model's horizon (a delivery
        not known yet lies at least L - 1 flit times ahead of the model's time, so halfway
        there is soon enough to learn it), a report or a utilization window."""
        t = self.next_report
        if self.releases:
            t = min(t, self.releases[0][0] - AHEAD)
        nt = self.net.next_time()
        if nt is not None:
            t = min(t, self.wall(max(nt, self.net.now + (self.net.length - 1) / 2)))
        if self.jobs.pending:
            t = min(t, self.jobs.pending[0][0])
        return min(t, now + LINK_WINDOW)

    # ------------------------------------------------------------------ daemon

    def on_event(self, topic: bytes, m: dict) -> None:
        ended, released = self.jobs.event(topic, m)
        for j in ended:
            self.report(j)
        for job, r, rid in released:
            self._send(job.ranks[r], P.encode_unchecked("ok", id=rid, data=None))

    def report(self, j) -> None:
        if not j.dirty:
            return
        j.dirty = False
        self._tag += 1
        try:
            self.daemon.send(P.encode("comm", id=self._tag, job=j.id, attempt=j.attempt, stats=j.stats()),
                             flags=zmq.NOBLOCK)
        except zmq.ZMQError:
            pass  # the daemon is away (a recovery): the next report carries the same totals

    # ------------------------------------------------------------------ the loop

    def serve(self) -> None:
        poller = zmq.Poller()
        poller.register(self.router, zmq.POLLIN)
        poller.register(self.sub, zmq.POLLIN)
        poller.register(self.daemon, zmq.POLLIN)
        stop = []
        for s in (signal.SIGTERM, signal.SIGINT):
            signal.signal(s, lambda *_: stop.append(1))
        next_window = time.monotonic() + LINK_WINDOW
        while not stop:
            now = time.monotonic()
            wait = self.next_wake(now) - now
            if wait > 0.001:
                # poll wakes on the whole millisecond below the due time; the rest is slept
                ready = dict(poller.poll(int(wait * 1000)))
            else:
                if wait > SPIN:
                    time.sleep(wait - SPIN)  # the kernel's timer slack (50 us) is the spin's
                ready = dict(poller.poll(0))
            now = time.monotonic()
            if self.sub in ready:
                self._drain_events()
            if self.router in ready:
                self._drain_tasks(now)
            if self.daemon in ready:
                while self.daemon.poll(0):
                    self.daemon.recv()  # ok / error of a comm report: nothing to do
            if self.jobs.pending:
                self._retry_pending(now)
            now = time.monotonic()
            self.advance(now)
            self.release(now)
            if now >= self.next_report:
                for j in list(self.jobs.jobs.values()):
                    self.report(j)
                self.next_report = now + REPORT_EVERY
            if now >= next_window:
                self.links.roll()
                next_window = now + LINK_WINDOW

    def _drain_events(self):
        while self.sub.poll(0):
            topic, frame = self.sub.recv_multipart()
            try:
                self.on_event(topic, P.decode(frame, max_size=P.MAX_REPLY))
            except P.ProtocolError:
                log.warning("an event that does not decode: dropped")

    def _drain_tasks(self, now):
        r = self.router
        for _ in range(4096):
            try:
                frames = r.recv_multipart(flags=zmq.NOBLOCK)
            except zmq.Again:
                break
            try:
                self.handle(frames, now)
            except Exception:  # a bug on one message must not take the network down
                log.exception("failed on a message")

    def close(self):
        for j in list(self.jobs.jobs.values()):
            self.report(j)
        for s in (self.router, self.sub, self.daemon):
            s.close(linger=0 if s is not self.daemon else 200)
        self.ctx.term()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="mcemu-interconnect", description="the live cluster's wormhole network")
    ap.add_argument("--home", default=None)
    a = ap.parse_args(argv)
    if a.home:
        os.environ["MCEMU_HOME"] = a.home
    home = homemod.home_dir()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s interconnect %(levelname)s %(message)s")
    from emulator.live.recovery import pending_meta

    cfg = pending_meta(home).get("config") or {}
    if cfg.get("network") != "wormhole":
        print("mcemu interconnect: error: this cluster's journal has no --network wormhole", file=sys.stderr)
        return 2
    ic = Interconnect(home, cfg)
    ic.bind()
    ic.sync()
    homemod.write_pidfile(home / "interconnect.pid")
    # its objects (messages, deliveries, frames) hold no cycles: a collection would only be a
    # pause of milliseconds in the middle of a release
    gc.freeze()
    gc.disable()
    log.info("serving %s on %s (dilation %g, L = %d flits, T_t = %g us)", cfg["topology"], ic.endpoint,
             ic.dilation, ic.net.length, ic.net.flit_time)
    try:
        ic.serve()
    finally:
        ic.close()
        homemod.remove(home, "interconnect.pid", "net.sock")
    return 0


if __name__ == "__main__":
    sys.exit(main())
