"""The interconnect in dilated time (``--net-time dilated``, the default): the model runs on a
clock of wall time slowed by ``--net-dilation`` (one network microsecond lasts D wall
microseconds: a flit of 0.05 us cannot be timed by processes), and what the model makes
certain is handed over at its wall due time: the payload to the receiving task (``net_msg``)
and the notice to the sender (``net_delivered``: a path loop waits for its delivery, and
nodes.comm's window counts its messages in the network by them), both up to AHEAD early with
the due time, which nodes.comm waits for before handing them over.

emulator.live.ic_virtual is the same seat in virtual time; emulator.live.interconnect the loop,
the task messages and what both modes share (membership, flow control, reports).
"""
from __future__ import annotations

from emulator.live import protocol as P
from scheduler.network.driver import Clock, NetworkDriver

# A delivery the model has made certain is handed to the tasks up to this long before its
# wall time, with that time (``due``); nodes.comm holds it until then. The receiving task's
# one timed sleep replaces the chain interconnect wake-up -> send -> task wake-up, whose
# scheduling delays on a busy machine were the p99 error (4.8 ms of a 25 ms message; with 3
# ms ahead still 4 ms, the interconnect's own wake-ups being up to 3 ms late at a load of 17
# on 2 cores). Where a delivery is known later it is handed over as soon as it is known.
AHEAD = 0.010
# How early the loop learns a delivery, as a share of the driver's horizon (L - 1 flit times):
# half of it, 12.5 ms at the default dilation, is more than AHEAD, and the loop wakes for the
# model at most once per (L - 1) / 2 flit times of network time, not once per hop.
LEAD = 0.5
# A program's send (nodes.mpi, ``lazy``) needs its notice only for nodes.comm's window, so the
# notice waits here and rides with the next frame the turn sends that task (its next message, a
# barrier's answer): in a ping-pong it no longer wakes the sender on its own, which was one of
# the two wake-ups of a message. They go alone once a task has LAZY_MESSAGES or LAZY_BYTES of
# them waiting; both are a quarter of the window, so a task whose messages are all delivered is
# never held by the notices still here (even a message of MAX_PAYLOAD fits beside them; a test
# holds these to nodes.comm's WINDOW and WINDOW_BYTES).
LAZY_MESSAGES, LAZY_BYTES = 16, 2 << 20


class DilatedMode:
    """Dilated time for the interconnect ``ic`` (its model ``net``, its configuration ``cfg``)."""

    def __init__(self, ic, net, cfg: dict):
        self.ic, self.net = ic, net
        self.driver = NetworkDriver(net, Clock.dilated(ic.kernel.now(), net.flit_time, float(cfg["net_dilation"])))
        self.lead = LEAD * self.driver.reach
        self.lazy: dict = {}  # task connection -> [notices waiting to ride, their messages' bytes]

    def send(self, j, rank, ident, m, dst, now: float) -> None:
        """A checked ``net_send`` of ``rank``: into the model at the wall time it came."""
        ic = self.ic
        if not ic.hold(j, rank, ident, m):
            return
        ic._tag += 1
        nbytes = m.get("nbytes")  # a program's message (nodes.mpi): its size; a pattern's: the text's L
        length = None if nbytes is None else 1 + -(-nbytes // ic.flit_bytes)
        lazy = bool(m.get("lazy")) and type(ident) is not tuple  # a remote task's go at once (nettcp)
        ic.msgs[ic._tag] = (j, rank, m["to"], ident, m["id"], m["data"], m.get("measured", True), length, lazy)
        self.driver.send(j.nodes[rank], dst, now, ic._tag, length)

    def pump(self) -> None:
        """After every turn: run the model to now (the deliveries it makes certain join the
        driver's queue by due time) and hand over what is due within AHEAD."""
        now = self.ic.kernel.now()
        self.driver.advance(now)
        self.release(now)

    def release(self, now: float) -> None:
        ic, driver, net = self.ic, self.driver, self.net
        down, running = ic.jobs.down, ic.jobs.jobs
        for due, d in driver.due(now + AHEAD):
            j, rank, to, sender, rid, data, measured, length, lazy = ic.msgs.pop(d.tag)
            ic.unhold(j, rank, data)
            if running.get(j.id) is not j:
                continue  # the job ended (or was requeued) while the message was in flight
            if j.nodes[to] in down:
                ic._error(sender, "node-down", f"rank {to} of job {j.id} is on node {j.nodes[to]}, which "
                                               f"went down before delivery", rid)
                continue
            delay = net.us(driver.record(j.stats, d, measured, length))
            j.stats.bytes += len(data)
            j.dirty = True
            frame = P.encode_unchecked("net_msg", source=rank, data=data, due=due)
            ident = j.ranks.get(to)
            if ident is None:
                j.inbox.setdefault(to, []).append(frame)
            else:
                ic._send(ident, frame)
            notice = P.encode_unchecked("net_delivered", id=rid, delay_us=delay, due=due)
            if lazy:
                self._later(sender, notice, len(data))
            else:
                ic._send(sender, notice)
            ic.links.late(ic.kernel.now() - (due - AHEAD))  # this loop's own lateness

    def _later(self, conn, notice: bytes, nbytes: int) -> None:
        q = self.lazy.get(conn)
        if q is None:
            q = self.lazy[conn] = [[], 0]
        q[0].append(notice)
        q[1] += nbytes
        if len(q[0]) >= LAZY_MESSAGES or q[1] >= LAZY_BYTES:
            del self.lazy[conn]
            for f in q[0]:
                self.ic._send(conn, f)

    def ride(self, conn, frames: list) -> None:
        """The turn writes ``frames`` to task ``conn``: its waiting notices go with them."""
        q = self.lazy.pop(conn, None)
        if q is not None:
            frames.extend(q[0])

    def forget(self, j) -> None:
        """An attempt ended: its tasks' waiting notices are nobody's any more."""
        for conn in j.ranks.values():
            self.lazy.pop(conn, None)

    def next_wake(self) -> float | None:
        """The kernel's deadline: the next hand-over (AHEAD before a due time) or the driver's
        wake-up, when the model must run again to learn its next deliveries LEAD ahead."""
        t = self.driver.wakeup(self.lead)
        due = self.driver.next_due()
        if due is not None and (t is None or due - AHEAD < t):
            t = due - AHEAD
        return t


__all__ = ["AHEAD", "LAZY_BYTES", "LAZY_MESSAGES", "LEAD", "DilatedMode"]
