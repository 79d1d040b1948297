"""Virtual time for the live interconnect (``mcemu up --network wormhole --net-time virtual``).

How SimGrid's SMPI times real code, on the live cluster: each rank has a clock that advances by
the CPU time it uses between calls to the network (times ``--cpu-scale``) and by the delays the
wormhole model gives its messages; the interconnect runs the model in that time, not the wall's,
so a program's times do not depend on how busy the host is.

**Conservative delivery** (Chandy-Misra, with one central process that sees every rank): a rank
is COMPUTING (its clock is at least ``vt``, the clock of its last frame, and grows with the CPU
time it has used since, which the host observes: :meth:`VirtualTime.refresh`), WAITING (for the
first event addressed to it, or until its clock reaches ``until``) or DONE. Its *bound* is the
earliest clock at which it can send again: ``vt`` when computing; when waiting, the time it would
be woken, ``min(until, its first known event)``; infinity when done or waiting for nothing known.

* the model runs to just before the smallest bound ``C`` (a send at ``C`` or later is then not in
  the model's past), or, when nobody can send, to its first deliveries (the model stops before the
  earliest delivery it returns: Wormhole's "replies at a delivery time");
* a waiting rank is answered at ``a = min(until, first event)`` with every event due by ``a`` once
  no event due by ``a`` can still appear: an unsent message of another rank arrives at the
  earliest ``bound + (k_0 + 1)`` flit times (strictly after the bound: start-up, one hop), and a
  message in the model whose header has not arrived is delivered after the model's next event.
  Answering a rank never lowers a bound (it resumes at ``a``, which was its bound), so every rank
  answerable in a pass is answered in that pass.

The decisions depend only on the clocks the ranks report, not on when their frames arrive: the
same program gives the same times on an idle host and on a loaded one.

**Deadlock**: a job all of whose ranks wait for a message (no timeout), none of which is known or
still in the network, can never go on; :meth:`VirtualTime.step` reports it with what each rank
waits for, and the interconnect fails the job with that reason.

Pure bookkeeping on the model (no sockets, no clock reads but the CPU reader it is given):
emulator.live.interconnect drives it.
"""
from __future__ import annotations

import math
from heapq import heappop, heappush

INF = math.inf
COMPUTING, WAITING, DONE = 0, 1, 2


def read_cpu(pid: int) -> float | None:
    """Host CPU seconds used by the main thread of process ``pid`` (the scheduler's run time, the
    clock of time.thread_time(), never ahead of it), None when the process is gone."""
    try:
        with open(f"/proc/{pid}/task/{pid}/schedstat", "rb") as f:
            return int(f.read().split(None, 1)[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


class VRank:
    """One rank's clock as the interconnect knows it (times in flit times)."""

    __slots__ = ("key", "job", "rank", "state", "vt", "pid", "until", "until_s", "what", "events", "sent",
                 "gone", "shared", "nsent")

    def __init__(self, key, job, rank: int, pid: int | None):
        self.key, self.job, self.rank, self.pid = key, job, rank, pid
        self.state = COMPUTING
        self.vt = 0.0
        self.until = INF
        self.until_s = None  # ``until`` as the rank said it, in seconds: an answer then is that very number
        self.what = ""
        self.events: list = []  # (due, seq, frame): deliveries and notices for it, certain, not handed over
        self.sent = 0  # its messages still in the model
        self.nsent = 0  # every message it sent (the tie key of the next: driver.send_order)
        self.gone = False
        self.shared = None  # the clock it publishes (emulator.live.vclock.ClockReader), if any

    def bound(self) -> float:
        if self.state == COMPUTING:
            return self.vt
        if self.state == WAITING:
            t = self.until
            if self.events and self.events[0][0] < t:
                t = self.events[0][0]
            return t if t > self.vt else self.vt
        return INF


class VirtualTime:
    """The ranks' clocks over the model ``driver`` (a NetworkDriver on ``Clock.virtual(per_second)``:
    seconds to flit times). ``route(delivery)`` -> [(VRank, frame)]: whom a delivery concerns.
    ``cpu``: the CPU reader (read_cpu; tests give their own)."""

    def __init__(self, driver, route, cpu_scale: float = 1.0, cpu=read_cpu):
        self.driver, self.net, self.route = driver, driver.net, route
        self.clock = driver.clock
        self.scale = float(cpu_scale)
        self.cpu = cpu
        self.minlat = self.net.startup + 1.0  # flit times from a send to its earliest delivery
        self.ranks: dict = {}
        self.released = 0.0  # the latest answer: a job that starts now starts here
        self.stuck = 0.0  # step's: the latest time a waiting rank could not be answered at
        self._seq = 0
        # barriers entered and not complete: key (a job, or a group's name) -> ({VRank: (entry, frame)},
        # members: () -> the VRanks that must enter)
        self.barriers: dict = {}

    # ------------------------------------------------------------------ ranks

    def start(self, keys: list, job, pids: list) -> float:
        """A job's ranks start together (the sync welcome) at the frontier; returns it (flits)."""
        vt0 = max(self.net.now, self.released)
        for rank, (key, pid) in enumerate(zip(keys, pids)):
            r = self.ranks[key] = VRank(key, job, rank, pid)
            r.vt = vt0
        return vt0

    def forget(self, job) -> None:
        for key in [k for k, r in self.ranks.items() if r.job is job]:
            r = self.ranks.pop(key)
            if r.shared is not None:
                r.shared.close()
        self.barriers.pop(job, None)
        for key in list(self.barriers):  # a group's barrier may wait for this job no longer
            self._complete(key)

    # ------------------------------------------------------------------ barriers

    def enter(self, r: VRank, vt_s: float, key, members, frame) -> None:
        """``r`` enters its next barrier ``key`` (its job, or a group of jobs) at its clock and
        goes on computing (an ibarrier); ``members()``: the ranks that must enter. The barrier
        completes at the latest entry: ``frame`` becomes an event of ``r`` then. Until it
        completes, no waiting member is answered at or after the earliest time it could complete
        (the latest entry so far, or a rank not in yet's bound)."""
        self.report(r, vt_s)
        entered, _ = self.barriers.setdefault(key, ({}, members))
        entered[r] = (r.vt, frame)
        self._complete(key)

    def _complete(self, key) -> None:
        entered, members = self.barriers[key]
        ms = members()
        if not all(m in entered for m in ms):
            return
        del self.barriers[key]
        at = max((t for t, _ in entered.values()), default=0.0)
        for m, (_, frame) in entered.items():
            self._seq += 1
            heappush(m.events, (at, self._seq, frame))

    def _barrier_bounds(self) -> dict:
        """Waiting members of an incomplete barrier -> the earliest time it can complete."""
        out = {}
        for entered, members in self.barriers.values():
            at = max(t for t, _ in entered.values())
            for m in members():
                if m not in entered:
                    b = m.bound()
                    at = b if b > at else at
            for m in entered:
                out[m] = at
        return out

    def flits(self, seconds: float) -> float:
        return self.clock.flits(seconds)

    def seconds(self, flits: float) -> float:
        return self.clock.time(flits)

    def answer_s(self, r: VRank, at: float) -> float:
        """An answer's time in the rank's seconds: at its ``until``, the number it gave (seconds to
        flit times and back need not round-trip, and a rank that woke a hair before the time it
        asked for would ask again for ever)."""
        return r.until_s if r.until_s is not None and at == r.until else self.clock.time(at)

    def report(self, r: VRank, vt_s: float) -> None:
        """A frame of ``r`` stamped with its clock (seconds): it is computing."""
        t = self.flits(vt_s)
        if t > r.vt:
            r.vt = t
        r.state = COMPUTING

    def wait(self, r: VRank, vt_s: float, until_s: float | None, what: str) -> None:
        self.report(r, vt_s)
        r.state = WAITING
        r.until = INF if until_s is None else max(self.flits(until_s), r.vt)
        r.until_s = until_s if until_s is not None and r.until == self.flits(until_s) else None
        r.what = what

    def bye(self, r: VRank, vt_s: float) -> None:
        self.report(r, vt_s)
        r.state = DONE

    def refresh(self, below: float = INF) -> None:
        """Grow the bounds of the computing ranks below ``below`` from the clocks they publish and
        the CPU time the host says they used (emulator.live.vclock: exactly the rank's rule, so
        never past its clock); a rank whose process is gone is DONE (its job's end will follow).
        A rank that publishes no clock (a pattern task: its clock moves only by its waits) keeps
        the bound of its last frame."""
        for r in self.ranks.values():
            if r.state != COMPUTING or r.pid is None or r.vt >= below:
                continue
            now = self.cpu(r.pid)
            if now is None:
                r.state, r.gone = DONE, True
            elif r.shared is not None:
                self._published(r, now)

    def _published(self, r: VRank, cpu: float) -> None:
        """The bound from the clock the rank publishes: its own rule, with the host's CPU time."""
        got = r.shared.read()
        if got is None:
            return
        paused, clock, mark = got
        if not paused and cpu > mark:
            clock += (cpu - mark) * self.scale
        t = self.flits(clock)
        if t > r.vt:
            r.vt = t

    # ------------------------------------------------------------------ the decisions

    def step(self) -> list:
        """Run the model as far as is safe and answer what can be answered: [(VRank, at in
        flits, frames)] (module docstring). Leaves in :attr:`stuck` the latest time a waiting
        rank could not be answered at (0: none), below which :meth:`refresh` may help."""
        answers: list = []
        while True:
            self._advance()
            got = self._answer()
            if not got:
                break
            answers.extend(got)
        return answers

    def _advance(self) -> None:
        net, ranks = self.net, self.ranks
        while True:
            nt = net.next_time()
            if nt is None:
                return
            c = min((r.bound() for r in ranks.values()), default=INF)
            until = INF if c == INF else math.nextafter(c, -INF)
            if nt > until:
                return
            got = net.advance(until)
            if not got:
                return
            for d in got:
                for r, frame in self.route(d):
                    self._seq += 1
                    heappush(r.events, (d.delivered, self._seq, frame))

    def _answer(self) -> list:
        first = second = INF  # the two smallest bounds, and whose the smallest is
        who = None
        for r in self.ranks.values():
            b = r.bound()
            if b < first:
                first, second, who = b, first, r
            elif b < second:
                second = b
        nt = self.net.next_time()
        model = INF if nt is None else nt
        barrier = self._barrier_bounds() if self.barriers else {}
        out = []
        stuck = 0.0
        for r in self.ranks.values():
            if r.state != WAITING:
                continue
            a = r.until
            if r.events and r.events[0][0] < a:
                a = r.events[0][0]
            if a == INF:
                continue
            if a > model or a >= (second if r is who else first) + self.minlat or (r in barrier and a >= barrier[r]):
                stuck = a if a > stuck else stuck
                continue
            frames = []
            while r.events and r.events[0][0] <= a:
                frames.append(heappop(r.events)[2])
            r.state = COMPUTING
            if a > r.vt:
                r.vt = a
            if a > self.released:
                self.released = a
            out.append((r, r.vt, frames))
        self.stuck = stuck
        return out

    def deadlocked(self) -> list:
        """[(job, its waiting ranks)] for the jobs that can never go on (module docstring)."""
        jobs: dict = {}
        for r in self.ranks.values():
            jobs.setdefault(r.job, []).append(r)
        out = []
        for job, rs in jobs.items():
            live = [r for r in rs if r.state != DONE]
            if live and all(r.state == WAITING and r.until == INF and not r.events for r in live) \
                    and not any(r.sent for r in rs) and not any(r in b[0] for b in self.barriers.values()
                                                                  for r in live):
                out.append((job, sorted(live, key=lambda r: r.rank)))
        return out


__all__ = ["COMPUTING", "DONE", "VRank", "VirtualTime", "WAITING", "read_cpu"]
