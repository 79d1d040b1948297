"""The interconnect in virtual time (``--net-time virtual``): what differs from the dilated loop.

The decisions are emulator.live.vtime's; this is their glue to the task connections:

* a job's ranks start together, at the frontier of virtual time, when the last one says hello
  (every hello is a sync hello: a rank that started alone would have no clock to start from);
  the welcome carries the start ``vt0`` and the message size rule (``flit_bytes``);
* ``net_send`` carries the rank's clock (``vt``) and the user bytes
  (``nbytes``): the message is a header plus ceil(nbytes / flit_bytes) flits, sent into the
  model at ``vt``; ``notice``: the sender wants its delivery notice as an event (pattern jobs);
* ``net_wait`` {vt, until, what, match} is answered by the frames due up to the answer and then
  ``net_go`` {vt} (``match``: the envelopes that end a blocking wait, read from each message's
  header, nodes.mpi.envelope; emulator.live.vtime); ``net_bye`` ends a rank;
* ``--cpu-clock gauged``: the interconnect calibrates the host-speed gauge at its start and the
  welcome carries the reference (``cpu_gauge``); a rank's published clock carries its factor;
* after every turn the model runs as far as is safe (VirtualTime.step); while a waiting rank
  needs a computing rank's clock to grow, the clocks the computing ranks publish and their CPU
  time are read every REFRESH seconds (VirtualTime.refresh, emulator.live.vclock);
* a deadlocked job gets an ``error`` (code ``deadlock``) at each of its ranks and is failed by
  the daemon with the reason (``comm`` with ``fail``).
"""
from __future__ import annotations

import logging
import math

from emulator.live import protocol as P
from emulator.live.jobs import ABORT_GRACE
from emulator.live.vclock import ClockReader
from emulator.live.vtime import DONE, VirtualTime
from nodes.mpi.envelope import ENVELOPE, HEAD
from scheduler.network.driver import Clock, NetworkDriver, send_order

log = logging.getLogger("mcemu.interconnect")

REFRESH = 0.002  # wall seconds between readings of the computing ranks' CPU time while one is awaited
# flit times a send may lie behind the model before it counts as late: the rounding of a clock
# that went from flit times to seconds and back (an answer's time), not a bound past a clock
LATE = 1e-3
DEADLOCK_CHECK = 0.25  # wall seconds between looks for deadlocked jobs (a pass over every rank)
ENDED_WAIT = ABORT_GRACE + DEADLOCK_CHECK  # a job stuck on a rank that ended: reported after (check)


class VirtualMode:
    """The virtual-time half of ``ic`` (an Interconnect) on the model ``net``."""

    def __init__(self, ic, net, cfg: dict):
        self.ic, self.net = ic, net
        self.flit_bytes = int(cfg.get("flit_bytes") or 2)
        scale = cfg.get("cpu_scale")
        self.cpu_scale = 1.0 if scale is None else float(scale)
        self.driver = NetworkDriver(net, Clock.virtual(1e6 / net.flit_time))  # seconds -> flit times
        self.vt = VirtualTime(self.driver, self._route, self.cpu_scale)
        self.cpu_gauge = None  # --cpu-clock gauged: the reference work's seconds here, now (nodes.mpi.cpuclock)
        if cfg.get("cpu_clock") == "gauged":
            from nodes.mpi.cpuclock import calibrate

            self.cpu_gauge = calibrate()
            log.info("cpu clock gauged: the reference work takes %.1f us", self.cpu_gauge * 1e6)
        self.pids: dict = {}  # (attempt, rank) -> the task's pid, until its job starts
        self.failed: set = set()
        self.suspects: dict = {}  # job -> when a look first found it stuck on a rank that ended (check)
        self.ready: dict = {}  # group -> its jobs whose ranks are all in, waiting for the others (group_jobs)
        self._refresh = None

    # ------------------------------------------------------------------ tasks

    def hello(self, j, ident, m) -> None:
        """Every rank's welcome when the last rank is in (vt0: the frontier); with ``group_jobs``,
        when that many jobs of its group are all in: they start together (a chapter-6 pair)."""
        self.pids[(j, m["rank"])] = (m.get("pid"), bool(m.get("clock")))
        j.waiting.append((ident, m["rank"]))
        if len(j.ranks) < j.size:
            return
        want = m.get("group_jobs")
        if j.group is not None and want:
            ready = self.ready.setdefault(j.group, [])
            ready.append(j)
            if len(ready) < want:
                return
            starting = self.ready.pop(j.group)
        else:
            starting = [j]
        vt0 = None
        for job in starting:
            vt0 = self._start(job, vt0)

    def _start(self, j, vt0):
        ranks = sorted(j.ranks)
        said = [self.pids.pop((j, r), (None, False)) for r in ranks]
        t = self.vt.start([(j, r) for r in ranks], j, [pid for pid, _ in said])
        for r, (_, shared) in zip(ranks, said):
            if shared:
                self.vt.ranks[(j, r)].shared = self._reader(j, r)
        if vt0 is not None:  # a group's jobs: the first one's start
            for r in ranks:
                self.vt.ranks[(j, r)].vt = vt0
        vt0 = t if vt0 is None else vt0
        net = self.net
        for who, rank in j.waiting:
            self.ic._send(who, P.encode_unchecked(
                "net_welcome", job=j.id, rank=rank, size=j.size, dilation=1.0, flit_time_us=net.flit_time,
                length_flits=net.length, time="virtual", vt0=self.vt.seconds(vt0), flit_bytes=self.flit_bytes,
                cpu_scale=self.cpu_scale, topology=self.ic.cfg["topology"], startup_flits=net.startup,
                **({"cpu_gauge": self.cpu_gauge} if self.cpu_gauge else {})))
        j.waiting.clear()
        return vt0

    def barrier(self, j, rank, ident, m) -> None:
        """A rank enters its job's (or its group's) next barrier at its clock: done, in virtual
        time, at the latest entry (emulator.live.vtime)."""
        r = self.rank(j, rank)
        if r is None:
            return self.ic._error(ident, "not-started", "the job's ranks have not all said hello", m["id"])
        group, ranks = m.get("group"), self.vt.ranks
        if group is None:
            key, members = j, (lambda: [x for x in ranks.values() if x.job is j])
        else:
            key, members = group, (lambda: [x for x in ranks.values() if x.job.group == group])
        self.vt.enter(r, m.get("vt", 0.0), key, members, P.encode_unchecked("ok", id=m["id"], data=None))

    def _reader(self, j, rank):
        """The clock rank ``rank`` publishes (emulator.live.vclock), None when it cannot be read."""
        try:
            return ClockReader(self.ic.home / "clocks" / f"{j.id}.{j.attempt}.{rank}")
        except OSError:
            return None

    def rank(self, j, rank):
        return self.vt.ranks.get((j, rank))

    def send(self, j, rank, ident, m, dst) -> None:
        r = self.vt.ranks.get((j, rank))
        if r is None:
            return self.ic._error(ident, "not-started", "the job's ranks have not all said hello", m["id"])
        if dst == j.nodes[rank]:  # no channel: it could arrive at the instant it leaves (vtime's rule)
            return self.ic._error(ident, "self-send", "in virtual time a rank does not send to itself (MPI "
                                                      "hands such a message over without the network)", m["id"])
        vt = m.get("vt", 0.0)
        at = self.vt.report(r, vt)
        nbytes = m.get("nbytes")
        length = self.net.length if nbytes is None else 1 + math.ceil(nbytes / self.flit_bytes)
        ic = self.ic
        if not ic.hold(j, rank, ident, m):
            return
        ic._tag += 1
        ic.msgs[ic._tag] = (j, rank, m["to"], ident, m["id"], m["data"], m.get("measured", True),
                            bool(m.get("notice")), nbytes or 0, length)
        r.sent += 1
        # at the frame's own clock, ranked among sends of the same instant by the sender's count:
        # the same order every run and in the replay (emulator.sim.replay)
        behind = self.net.now - at
        if behind > LATE:  # a bound that passed the rank's clock: a bug, said loudly
            log.warning("job %d rank %d sent at %.9f s, %.3f flit times behind the model: injected late",
                        j.id, rank, vt, behind)
        self.driver.send(j.nodes[rank], dst, vt, ic._tag, length, send_order(rank, r.nsent))
        r.nsent += 1

    def wait(self, j, rank, ident, m) -> None:
        r = self.vt.ranks.get((j, rank))
        if r is None:
            return self.ic._error(ident, "not-started", "the job's ranks have not all said hello")
        self.vt.wait(r, m["vt"], m.get("until"), m.get("what") or "", m.get("match"), m.get("need", 1))

    def bye(self, j, rank, m) -> None:
        r = self.rank(j, rank)
        if r is not None:
            self.vt.bye(r, m["vt"])

    def ended(self, j) -> None:
        self.vt.forget(j)
        self.failed.discard(j)
        for jobs in self.ready.values():
            if j in jobs:
                jobs.remove(j)

    # ------------------------------------------------------------------ the model

    def _route(self, d) -> list:
        """Whom delivery ``d`` concerns: [(VRank, frame, envelope)] (the receiver's message, the
        sender's notice when asked for; the envelope of an MPI message: emulator.live.vtime)."""
        ic = self.ic
        j, rank, to, sender, rid, data, measured, notice, nbytes, length = ic.msgs.pop(d.tag)
        ic.unhold(j, rank, data)
        ranks = self.vt.ranks
        src = ranks.get((j, rank))
        if src is not None:
            src.sent -= 1
        dst = ranks.get((j, to))
        if dst is None or ic.jobs.jobs.get(j.id) is not j:
            return []
        delay = self.driver.record(j.stats, d, measured, length)
        j.stats.bytes += nbytes
        j.dirty = True
        due = self.vt.seconds(d.delivered)
        out = [(dst, P.encode_unchecked("net_msg", source=rank, data=data, due=due), _envelope(rank, data))]
        if notice and src is not None:
            out.append((src, P.encode_unchecked("net_delivered", id=rid, delay_us=self.net.us(delay), due=due),
                        None))
        return out

    def pump(self) -> None:
        answers = self.vt.step()
        ic = self.ic
        for r, at, frames in answers:
            ident = r.job.ranks.get(r.rank)
            if ident is None:
                continue
            for f in frames:
                ic._send(ident, f)
            ic._send(ident, P.encode_unchecked("net_go", vt=self.vt.answer_s(r, at)))
        if self._refresh is None and self.vt.stuck > 0:
            self._refresh = ic.kernel.call_later(REFRESH, self._grow)

    def _grow(self) -> None:
        self._refresh = None
        if self.vt.stuck > 0:
            self.vt.refresh(self.vt.stuck)

    def check(self) -> None:
        """Every DEADLOCK_CHECK seconds: fail the jobs that can never go on. One stuck because a
        rank ended is reported only once it has been for longer than the daemon's ABORT_GRACE: a
        rank that exited non-zero fails its job itself (the daemon hears of it from its node
        within milliseconds) and its other ranks are killed at the grace's end, as mpiexec kills
        them, so that the failed rank's traceback is the job's last word, not followed by one
        deadlock error from each of the others (63 of them). A rank that returned early (status
        0) leaves the others stuck for good: they get the error a grace later."""
        now, later = self.ic.kernel.now(), {}
        for j, waiting in self.vt.deadlocked():
            if j in self.failed:
                continue
            ended = sorted(r.rank for r in self.vt.ranks.values() if r.job is j and r.state == DONE)
            since = self.suspects.get(j, now)
            if ended and now - since < ENDED_WAIT:
                later[j] = since
            else:
                self._deadlock(j, waiting, ended)
        self.suspects = later

    def _deadlock(self, j, waiting, ended) -> None:
        self.failed.add(j)
        ranks = ", ".join(f"rank {r.rank} waits in {r.what or 'a receive'}" for r in waiting)
        if ended:  # they are why, most often: a rank that returned or exited early
            who = ", ".join(map(str, ended))
            why = (f"deadlock: rank{'s' if len(ended) > 1 else ''} {who} of job {j.id} ended, and every other "
                   f"rank waits for a message that cannot come ({ranks})")
        else:
            why = f"deadlock: every rank of job {j.id} waits for a message that cannot come ({ranks})"
        ic = self.ic
        for r in waiting:
            ident = j.ranks.get(r.rank)
            if ident is not None:
                ic._error(ident, "deadlock", why)
        ic.report(j, fail=why[:1000])


def _envelope(source: int, data: bytes):
    """(context, source, tag) of an MPI message (its header: nodes.mpi.envelope.ENVELOPE); a
    pattern task's bytes parse too, but only a rank whose wait names envelopes compares them."""
    if len(data) < HEAD:
        return None
    ctx, tag, _ = ENVELOPE.unpack_from(data)
    return ctx, source, tag


__all__ = ["DEADLOCK_CHECK", "REFRESH", "VirtualMode"]
