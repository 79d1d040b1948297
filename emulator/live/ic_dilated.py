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


class DilatedMode:
    """Dilated time for the interconnect ``ic`` (its model ``net``, its configuration ``cfg``)."""

    def __init__(self, ic, net, cfg: dict):
        self.ic, self.net = ic, net
        self.driver = NetworkDriver(net, Clock.dilated(ic.kernel.now(), net.flit_time, float(cfg["net_dilation"])))
        self.lead = LEAD * self.driver.reach

    def send(self, j, rank, ident, m, dst, now: float) -> None:
        """A checked ``net_send`` of ``rank``: into the model at the wall time it came."""
        ic = self.ic
        if not ic.hold(j, rank, ident, m):
            return
        ic._tag += 1
        nbytes = m.get("nbytes")  # a program's message (nodes.mpi): its size; a pattern's: the text's L
        length = None if nbytes is None else 1 + -(-nbytes // ic.flit_bytes)
        ic.msgs[ic._tag] = (j, rank, m["to"], ident, m["id"], m["data"], m.get("measured", True), length)
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
            j, rank, to, sender, rid, data, measured, length = ic.msgs.pop(d.tag)
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
            ic._send(sender, P.encode_unchecked("net_delivered", id=rid, delay_us=delay, due=due))
            ic.links.late(ic.kernel.now() - (due - AHEAD))  # this loop's own lateness

    def next_wake(self) -> float | None:
        """The kernel's deadline: the next hand-over (AHEAD before a due time) or the driver's
        wake-up, when the model must run again to learn its next deliveries LEAD ahead."""
        t = self.driver.wakeup(self.lead)
        due = self.driver.next_due()
        if due is not None and (t is None or due - AHEAD < t):
            t = due - AHEAD
        return t


__all__ = ["AHEAD", "LEAD", "DilatedMode"]
