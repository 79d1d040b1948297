"""The live cluster's interconnect: ``python -m emulator.live.interconnect --home H``.

Tasks (nodes.comm) connect to ``$MCEMU_HOME/net.sock`` (a unix stream socket, mode 0600, one
connection a task: emulator.live.netlocal, without ZeroMQ; tasks of other hosts: nettcp),
say which rank of which job they are (``net_hello``, with the job's nodes) and send payloads
to other ranks (``net_send``). The interconnect only moves frames: it decodes them, hands each
message to the network driver (scheduler.network.driver: the wormhole model that ``mcemu net
simulate`` runs) and sends what the model delivers to the receiving task (``net_msg``), at the
time the model gives, in one of two clocks: dilated wall time (emulator.live.ic_dilated, the
default) or the ranks' virtual clocks (``--net-time virtual``: emulator.live.ic_virtual). The
model's flit time, message length and start-up are its defaults, the same as ``mcemu net
simulate``'s. A pattern job's message is one packet of L flits (the text's fixed-length
messages); a program's (nodes.mpi, which says ``nbytes``) is a header plus ceil(nbytes /
--flit-bytes) flits.

A job becomes known with its tasks' first hello (emulator.live.netjobs: ordered membership);
its end and the down nodes come from the daemon's PUB events. It reports each job's
statistics to the daemon (``comm``, as a LOCAL peer) for ``mcemu queue`` and the journal. It
runs on the live kernel (emulator.live.kernel, its precise wait): the task socket, the events,
the daemon's replies, the report and channel-window timers, and one deadline: the next
hand-over or the driver's next wake-up, whichever comes first.

Why a process of its own and not a part of the daemon: the two loops want opposite things.
The daemon's loop keeps heartbeats, job starts and the journal's commits, and must not be
late for them while a burst of messages goes through; the interconnect's loop sleeps to the
model's next delivery and wants to be woken exactly then, not after a journal commit or a
64-node ``run`` fan-out. Apart, each has its own core on a 2-core machine when both are
busy, a crash of one does not take the other (a daemon recovery leaves a live interconnect
alone), and a cluster without ``--network`` pays nothing.

Hostile input changes nothing: a frame that does not decode, a type that is not NET_TYPES, a
payload above protocol.MAX_PAYLOAD, an attempt that ended or was replaced, a wrong rank, a second
connection claiming a rank, a node list that is not the machine's or not the one the job's
other ranks gave, a send before ``net_hello``, a destination on a down node: each
gets an ``error`` reply (with the request's id when it has one) and the loop carries on.
"""
from __future__ import annotations

import argparse
import gc
import logging
import os
import sys
import time
from pathlib import Path

import zmq

from emulator.live import config as configmod
from emulator.live import home as homemod
from emulator.live import netlocal, nettcp
from emulator.live import protocol as P
from emulator.live import secret as secretmod
from emulator.live import sockets
from emulator.live.ic_dilated import AHEAD, DilatedMode  # noqa: F401  (AHEAD: tests read it here)
from emulator.live.ic_serve import Serving
from emulator.live.ic_virtual import VirtualMode
from emulator.live.kernel import Kernel
from emulator.live.netjobs import Membership
from emulator.live.netlinks import Links
from emulator.live.recovery import pending_meta
from scheduler.network.wormhole import Wormhole

log = logging.getLogger("mcemu.interconnect")


def net_endpoint(home: Path) -> str:
    return homemod.ipc_endpoint(home, "net.sock")


class Interconnect(Serving):
    """The live network of the cluster in ``home`` (``cfg``: its journal's configuration).
    ``kernel``: the loop it runs on (a fake clock's in tests; default the wall clock's)."""

    def __init__(self, home: Path, cfg: dict, kernel: Kernel | None = None):
        self.home = Path(home)
        self.cfg = cfg
        # precise waits (a sleep, deaf to the sockets, before a timer under 1 ms away) are for
        # dilated hand-overs; in virtual time no timer is exact and every frame is on a rank's
        # critical path, so a deaf millisecond before each 2 ms refresh would be its latency
        virtual = cfg.get("net_time") == "virtual"
        self.kernel = kernel if kernel is not None else Kernel(precise=not virtual)
        self.net = net = Wormhole(cfg["topology"])  # the model's defaults: `mcemu net simulate`'s
        self.dilation = float(cfg["net_dilation"])
        self.flit_bytes = int(cfg.get("flit_bytes") or 2)
        # --net-time virtual: the ranks' clocks, not the wall's (emulator.live.ic_virtual)
        self.virtual = VirtualMode(self, net, cfg) if virtual else None
        self.dilated = None if virtual else DilatedMode(self, net, cfg)
        self.mode = self.virtual or self.dilated
        self.driver = self.mode.driver
        # a task's claim to its rank is checked against its secret (emulator.live.secret)
        self.jobs = Membership(net.channels.topology.size, key=secretmod.cluster_key(self.home))
        self.msgs: dict[int, tuple] = {}  # tag -> (job, src rank, dst rank, sender ident, id, data, measured, ...)
        self._tag = 0
        self.links = Links(net)
        self.daemon = None  # its socket once bound (in-memory tests run without one)
        self.remote = None  # the tcp port for tasks of other hosts (emulator.live.nettcp.Port)
        self._out: dict = {}  # connection (netlocal.Conn) -> frames of this turn for that task (flush)
        self.local = None  # the tasks' local socket once bound (netlocal.Port)

    # ------------------------------------------------------------------ sockets

    def bind(self):
        self.ctx = sockets.server_context()
        ep = net_endpoint(self.home)
        self.local = netlocal.Port(netlocal.endpoint_path(ep), self.kernel, self.handle_frame)
        self.remote = nettcp.Port.listen(self.ctx, self.home, 100_000)
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

    def _send(self, ident, frame: bytes) -> bool:
        """``frame`` to the task ``ident``: kept until the turn ends (:meth:`flush`)."""
        if type(ident) is tuple:  # a task on another host: (nettcp.REMOTE, its routing id)
            return self.remote.send(ident[1], frame)
        out = self._out.get(ident)
        if out is None:
            self._out[ident] = [frame]
        else:
            out.append(frame)
        return True

    def flush(self) -> None:
        """At the end of every turn: what the turn made for each task, in ONE write to its
        connection (nodes.comm reads the frames in order). A rank answered in virtual time gets
        its messages and its ``net_go`` together; a release burst in dilated time one write per
        task: one wake-up of it, not one per frame (each was tens of us of CPU on a 2-core host
        with 64 ranks). A task gone or not reading costs nothing here (netlocal.Conn.write)."""
        if not self._out:
            return
        out, self._out = self._out, {}
        lazy = self.dilated.lazy if self.dilated is not None else None
        for conn, frames in out.items():
            if lazy:
                self.dilated.ride(conn, frames)
            conn.write(frames)

    def _error(self, ident, code, message, req_id=None):
        self._send(ident, P.encode_unchecked("error", id=req_id, code=code, message=message))

    # ------------------------------------------------------------------ task messages

    def handle(self, frames: list, now: float) -> None:
        """A task's message: its routing id, then one frame or several (nodes.comm sends what a
        rank said since it last read as one message), handled in order."""
        if len(frames) < 2:
            if frames:
                self._error(frames[0], "frames", "expected at least one frame after the routing id, got none")
            return
        ident = frames[0]
        for i in range(1, len(frames)):
            self.handle_frame(ident, frames[i], now)

    def handle_frame(self, ident, frame: bytes, now: float) -> None:
        try:
            m = P.decode(frame, max_size=P.MAX_FRAME + P.MAX_PAYLOAD, allowed=P.NET_TYPES)
        except P.ProtocolError as e:
            self._send(ident, P.error_frame(e))
            return
        t = m["type"]
        if t == "net_send":
            self.on_send(ident, m, now)
        elif t == "net_wait" or t == "net_bye":  # a virtual-time send's companion: the next most common
            self.on_clock(ident, t, m)
        elif t == "net_hello":
            self.on_hello(ident, m)
        elif t == "net_barrier":
            self.on_barrier(ident, m)
        else:
            doc = self.links.doc(self.dilation)
            # each running job's statistics so far: the monitor's running table shows the mean delay
            doc["jobs"] = {str(j.id): j.stats.summary(self.net.us) for j in self.jobs.jobs.values()}
            self._send(ident, P.encode_unchecked("ok", id=m["id"], data=doc))

    def on_hello(self, ident, m):
        if type(ident) is tuple:  # its pid and clock are another host's (emulator.live.nettcp)
            m.pop("pid", None)
            m.pop("clock", None)
        j, replaced, code, why = self.jobs.hello(ident, m)
        if code:
            return self._error(ident, code, why)
        self._ended(replaced)
        self.jobs.join(j, m.get("group"))
        if len(j.ranks) == 1:
            # the daemon learns at once which jobs this network carries: the ones it requeues
            # should this process die (emulator.live.netkeeper)
            j.dirty = True
            self.report(j)
        rank = m["rank"]
        if self.virtual:
            return self.virtual.hello(j, ident, m)
        welcome = dict(job=j.id, rank=rank, size=j.size, dilation=self.dilation, flit_time_us=self.net.flit_time,
                       length_flits=self.net.length)
        if m.get("sync"):  # a start barrier: every rank welcomed together
            j.waiting.append((ident, welcome))
            if len(j.ranks) == j.size:
                for who, w in j.waiting:
                    self._welcome(who, w)
                j.waiting.clear()
        else:
            self._welcome(ident, welcome)
        for frame in j.inbox.pop(rank, ()):
            self._send(ident, frame)

    def _welcome(self, ident, fields: dict) -> None:
        if nettcp.WELCOME_NOW and type(ident) is tuple:  # the clock its due times are on, as it goes out
            fields = {**fields, "now": self.kernel.now()}
        self._send(ident, P.encode_unchecked("net_welcome", **fields))

    def on_barrier(self, ident, m):
        had = self.jobs.by_ident.get(ident)
        if had is None:
            return self._error(ident, "no-hello", "say net_hello (job, attempt, rank) before a barrier", m["id"])
        j, rank = had
        group = m.get("group")
        if group is not None and group != j.group:
            return self._error(ident, "bad-group", f"job {j.id}'s tasks said hello in group {j.group!r}, "
                                                   f"not {group!r}", m["id"])
        if self.virtual:
            return self.virtual.barrier(j, rank, ident, m)
        if group is None:
            done = [(j, r, rid) for r, rid in j.enter_barrier(rank, m["id"]) or ()]
        else:
            j.gbarrier.setdefault(rank, []).append(m["id"])
            done = self.jobs.group_barrier(group)
        self._answer(done)

    def _answer(self, done) -> None:
        for job, r, rid in done:
            self._send(job.ranks[r], P.encode_unchecked("ok", id=rid, data=None))

    def on_send(self, ident, m, now):
        had = self.jobs.by_ident.get(ident)
        if had is None:
            return self._error(ident, "no-hello", "say net_hello (job, attempt, rank) before sending", m["id"])
        j, rank = had
        to = m["to"]
        if to >= j.size:
            return self._error(ident, "bad-rank", f"job {j.id} has ranks 0-{j.size - 1}, not {to}", m["id"])
        dst = j.nodes[to]
        if dst in self.jobs.down:
            return self._error(ident, "node-down", f"rank {to} of job {j.id} is on node {dst}, which is down",
                               m["id"])
        if self.virtual:
            return self.virtual.send(j, rank, ident, m, dst)
        self.dilated.send(j, rank, ident, m, dst, now)

    def hold(self, j, rank, ident, m) -> bool:
        """A send counted against its rank's share of the network (netjobs.FLOW_*); False: refused."""
        why = j.hold(rank, len(m["data"]))
        if why is not None:
            self._error(ident, "flow", why, m["id"])
        return why is None

    @staticmethod
    def unhold(j, rank, data) -> None:
        j.unhold(rank, len(data))

    def on_clock(self, ident, t, m):
        """``net_wait`` / ``net_bye``: a rank's clock in virtual time (emulator.live.ic_virtual)."""
        if not self.virtual:
            return self._error(ident, "not-virtual", f"{t} is for a cluster with --net-time virtual")
        had = self.jobs.by_ident.get(ident)
        if had is None:
            return self._error(ident, "no-hello", f"say net_hello (job, attempt, rank) before {t}")
        if t == "net_wait":
            self.virtual.wait(*had, ident, m)
        else:
            self.virtual.bye(*had, m)

    # ------------------------------------------------------------------ the model

    def pump(self) -> None:
        """After every turn: the model's work of the turn and the hand-overs it made due."""
        self.mode.pump()

    def next_wake(self) -> float | None:
        """The kernel's deadline (dilated time: the next hand-over or the model's next run;
        virtual time: none, the ranks' frames move its clock)."""
        return None if self.virtual else self.dilated.next_wake()

    # ------------------------------------------------------------------ daemon

    def on_event(self, topic: bytes, m: dict) -> None:
        self._ended(self.jobs.event(topic, m))

    def _ended(self, attempts) -> None:
        """Attempts that ended: their last report; the others of a group may wait for them no
        longer."""
        if attempts:
            self._drop_payloads(set(attempts))
        for j in attempts:
            self.report(j, final=True)
            if self.virtual:
                self.virtual.ended(j)
            else:
                self.dilated.forget(j)
            if j.group is not None:
                self._answer(self.jobs.group_barrier(j.group))

    def _drop_payloads(self, gone: set) -> None:
        """Ended attempts' messages leave the model (``withdraw``: not yet on a channel, or cut on
        their way, their channels released now), so the next job on those nodes does not queue
        behind them; the few whose header has arrived finish (their release times are written),
        their payloads dropped at once."""
        tags = [tag for tag, rec in self.msgs.items() if rec[0] in gone]
        if not tags:
            return
        for tag in self.driver.withdraw(tags, None if self.virtual else self.kernel.now()):
            rec = self.msgs.pop(tag)  # it never comes out of the driver's due()
            self.unhold(rec[0], rec[1], rec[5])
        for tag, rec in self.msgs.items():
            if rec[0] in gone and rec[5]:
                self.msgs[tag] = (*rec[:5], b"", *rec[6:])

    def report(self, j, fail: str | None = None, final: bool = False) -> None:
        """A job's statistics to the daemon; ``fail``: the reason to fail it (a deadlock);
        ``final``: its attempt has ended, these are its totals (``"final": true`` in the record:
        the daemon ends a job before this last report, which may come a moment later)."""
        if (not j.dirty and fail is None and not final) or self.daemon is None:
            return
        j.dirty = False
        self._tag += 1
        extra = {"fail": fail} if fail else {}
        stats = j.stats.summary(self.net.us)
        if final:
            stats["final"] = True
        try:
            self.daemon.send(P.encode("comm", id=self._tag, job=j.id, attempt=j.attempt,
                                      stats=stats, **extra), flags=zmq.NOBLOCK)
        except zmq.ZMQError:
            pass  # the daemon is away (a recovery): the next report carries the same totals

    def report_all(self) -> None:
        for j in list(self.jobs.jobs.values()):
            self.report(j)

    # ------------------------------------------------------------------ the loop


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="mcemu-interconnect", description="the live cluster's wormhole network")
    ap.add_argument("--home", default=None)
    configmod.add_arguments(ap, configmod.INTERCONNECT)
    a = ap.parse_args(argv)
    if a.home:
        os.environ["MCEMU_HOME"] = a.home
    home = homemod.home_dir()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s interconnect %(levelname)s %(message)s")
    given = {k: v for k, v in configmod.values(a, configmod.INTERCONNECT).items() if v is not None}
    cfg = {**(pending_meta(home).get("config") or {}), **given}
    if cfg.get("network") != "wormhole":
        print("mcemu interconnect: error: this cluster's journal has no --network wormhole", file=sys.stderr)
        return 2
    ic = Interconnect(home, cfg)
    try:
        ic.bind()
    except OSError as e:  # one line for `mcemu up` (and the keeper's log); a bad port is not a traceback
        print(f"mcemu interconnect: error: {e}", file=sys.stderr)
        return 2
    homemod.write_pidfile(home / "interconnect.pid")
    # its objects (messages, deliveries, frames) hold no cycles: a collection would only be a
    # pause of milliseconds in the middle of a release
    gc.freeze()
    gc.disable()
    log.info("serving %s on %s%s (dilation %g, L = %d flits, T_t = %g us)", cfg["topology"], ic.endpoint,
             f" and {ic.remote.endpoint}" if ic.remote else "", ic.dilation, ic.net.length, ic.net.flit_time)
    try:
        _serve(ic, os.environ.get("MCEMU_IC_PROFILE"))
    finally:
        ic.close()
        homemod.remove(home, "interconnect.pid", "net.sock")
    return 0


def _serve(ic: Interconnect, profile: str | None) -> None:
    """The loop; with MCEMU_IC_PROFILE=PATH (in the environment of ``mcemu up``) under cProfile,
    its statistics written to PATH when it stops (where the interconnect's CPU per message goes:
    scripts/bench_ic.py measures the same in memory)."""
    if not profile:
        return ic.serve()
    import cProfile

    prof = cProfile.Profile(time.thread_time)  # its CPU, not its waits for the ranks
    try:
        prof.runcall(ic.serve)
    finally:
        prof.dump_stats(profile)


if __name__ == "__main__":
    sys.exit(main())
