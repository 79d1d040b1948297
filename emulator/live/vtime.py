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
  message in the model whose header has not arrived is delivered at least a flit after the
  model's next event (its header crosses a channel first; no rank sends to itself). Answering a
  rank never lowers a bound (it resumes at ``a``, which was its bound), so every rank answerable
  in a pass is answered in that pass.
* a blocking wait that names the envelopes that can end it (``match``: MPI receives' (context,
  source, tag), None for ANY) is not woken by an answer that holds none of them: the rank would
  queue them and wait again at ``a`` for the same (a blocking receive sends nothing first), so
  it stays WAITING at ``a``, the frames kept for its next answer: the same times, no round trip.
  A wait for several receives (``need``: a Waitall, an all-to-all) is woken by the ``need``-th
  such event, for the same reason.
* a rank's bound is always in its own representation: it holds seconds, and a delivery's time
  in seconds, back in flit times, may lie an ulp below the model's; with the model's time, the
  model could take an event of the very instant the rank then sends at.

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
from heapq import heapify, heappop, heappush

from emulator.live.vrank import COMPUTING, DONE, WAITING, CpuReader, VRank, ends as _ends

INF = math.inf


class VirtualTime:
    """The ranks' clocks over the model ``driver`` (a NetworkDriver on ``Clock.virtual(per_second)``:
    seconds to flit times). ``route(delivery)`` -> [(VRank, frame)]: whom a delivery concerns.
    ``cpu``: the CPU reader (a CpuReader by default; tests give their own function)."""

    def __init__(self, driver, route, cpu_scale: float = 1.0, cpu=None):
        self.driver, self.net, self.route = driver, driver.net, route
        self.clock = driver.clock
        self.scale = float(cpu_scale)
        self.cpu = cpu if cpu is not None else CpuReader()
        self.minlat = self.net.startup + 1.0  # flit times from a send to its earliest delivery
        self.ranks: dict = {}
        self.released = 0.0  # the latest answer: a job that starts now starts here
        self.stuck = 0.0  # step's: the latest time a waiting rank could not be answered at
        self.kept = False  # a pass of step's answered a rank without waking it
        self.grew = False  # a pass of step's answered a rank whose bound it raised
        # every rank by bound, lazily: (bound, counter, version, rank); an entry whose version is
        # not its rank's is stale. A turn looks at the smallest bounds, not at every rank.
        self.heap: list = []
        # the same entries of the WAITING ranks with a known wake-up (a finite bound): the only
        # ones a turn can answer. With 64 ranks of a ping-pong in step, every bound lay within
        # the shortest latency of the smallest, and a turn popped and pushed back all 64 of them
        self.waiting: list = []
        self._hseq = 0
        self.cap = 64  # the heap's length above which it is mostly stale entries: 8 a rank and 64
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
            self._touch(r)
        self.cap = 8 * len(self.ranks) + 64
        return vt0

    def _touch(self, r: VRank) -> float:
        """``r``'s bound changed: its current entry in the heap. Returns the bound."""
        b = r.bound()
        if b == r.hb and r.state != WAITING:
            # its entry stands (an answer most often leaves the bound as it was): a new one would
            # only move it behind the others of the same bound, and ties decide nothing (_answer)
            return b
        r.hb = b
        r.ver += 1
        if b == INF:  # never the smallest bound that matters: no entry (none is as good as one)
            return b
        self._hseq += 1
        e = (b, self._hseq, r.ver, r)
        heappush(self.heap, e)
        if r.state == WAITING:
            heappush(self.waiting, e)
        if len(self.heap) > self.cap:  # mostly stale entries: start again
            # in place: _answer holds the lists while it answers (and touches) ranks, and puts
            # back into :attr:`waiting` the entries it could not answer
            for h in (self.heap, self.waiting):
                h[:] = [e for e in h if e[2] == e[3].ver]
                heapify(h)
        return b

    def _top(self):
        heap = self.heap
        while heap and heap[0][2] != heap[0][3].ver:
            heappop(heap)
        return heap[0] if heap else None

    def forget(self, job) -> None:
        for key in [k for k, r in self.ranks.items() if r.job is job]:
            r = self.ranks.pop(key)
            r.ver = -1
            if r.shared is not None:
                r.shared.close()
            if r.pid is not None and hasattr(self.cpu, "drop"):
                self.cpu.drop(r.pid)
        self.cap = 8 * len(self.ranks) + 64
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
            heappush(m.events, (at, self._seq, frame, self._resume_at(at), None))
            if m.state == WAITING:
                self._touch(m)

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

    def _resume_at(self, t: float) -> float:
        """The earliest flit time a rank woken by an event at ``t`` says it is at: the rank holds
        seconds, and seconds of ``t`` back in flit times may lie an ulp below ``t``."""
        u = self.flits(self.clock.time(t))
        return u if u < t else t

    def answer_s(self, r: VRank, at: float) -> float:
        """An answer's time in the rank's seconds: at its ``until``, the number it gave (seconds to
        flit times and back need not round-trip, and a rank that woke a hair before the time it
        asked for would ask again for ever)."""
        return r.until_s if r.until_s is not None and at == r.until else self.clock.time(at)

    def report(self, r: VRank, vt_s: float, state: int = COMPUTING) -> float:
        """A frame of ``r`` stamped with its clock (seconds): it is computing (or ``state``).
        Returns the clock in flit times."""
        t = self.clock.flits(vt_s)
        if t > r.vt:
            r.vt = t
        r.frames += 1
        r.state = state
        if state != WAITING:
            self._touch(r)
        return t

    def wait(self, r: VRank, vt_s: float, until_s: float | None, what: str, match=None, need: int = 1) -> None:
        """``match``: the envelopes that can end a wait for the next event, ``need``: how many of
        their events it takes (module docstring)."""
        self.report(r, vt_s, WAITING)
        r.match = match if until_s is None else None
        r.need = need if r.match else 1
        r.until = INF if until_s is None else max(self.flits(until_s), r.vt)
        r.until_s = until_s if until_s is not None and r.until == self.flits(until_s) else None
        r.what = what
        self._touch(r)

    def bye(self, r: VRank, vt_s: float) -> None:
        self.report(r, vt_s, DONE)

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
                r.state = DONE
            elif r.shared is not None:
                self._published(r, now)

    def _published(self, r: VRank, cpu: float) -> None:
        """The bound from the clock the rank publishes: its own rule, with the host's CPU time."""
        got = r.shared.read()
        if got is None or got[3] != r.frames:  # frames on their way carry older clocks: not yet
            return
        paused, clock, mark, _, factor = got
        if not paused and cpu > mark:
            clock += (cpu - mark) * self.scale * factor  # the rank's factor for this interval
        t = self.flits(clock)
        if t > r.vt:
            r.vt = t
            self._touch(r)

    # ------------------------------------------------------------------ the decisions

    def step(self) -> list:
        """Run the model as far as is safe and answer what can be answered: [(VRank, answer time
        in flits, frames)] (module docstring). The answer is its time, not the rank's clock: a
        rank ahead of it keeps its own clock as it is, not one that went to flit times and back
        (an ulp off, which changed which of two sends won a channel at a later tie). Leaves in :attr:`stuck` the latest time a waiting
        rank could not be answered at (0: none), below which :meth:`refresh` may help."""
        answers: list = []
        while True:
            self._advance()
            self.kept = False
            got = self._answer()
            if not got and not self.kept:
                break
            answers.extend(got)
            if not self.kept and not self.grew:
                # every bound is as it was, so the model can go no further and the window holds
                # the same ranks with the same answers: the next pass would find nothing (half
                # of all passes). Only :attr:`stuck` differs: the new lead may be computing
                top = self._top()
                if top is not None and top[3].state == COMPUTING:
                    self.stuck = INF
                break
        return answers

    def _advance(self) -> None:
        net = self.net
        while True:
            nt = net.next_time()
            if nt is None:
                return
            top = self._top()
            c = INF if top is None else top[0]
            until = INF if c == INF else math.nextafter(c, -INF)
            if nt > until:
                return
            got = net.advance(until)
            if not got:
                return
            for d in got:
                for r, frame, env in self.route(d):
                    self._seq += 1
                    heappush(r.events, (d.delivered, self._seq, frame, self._resume_at(d.delivered), env))
                    if r.state == WAITING:
                        self._touch(r)

    def _answer(self) -> list:
        """Answer the waiting ranks that can be: only waiting ranks whose bound is within the
        shortest latency of the smallest one can (module docstring), so a turn looks at that
        window of :attr:`waiting` (those not answered go back) and not at every rank."""
        top = self._top()
        self.stuck = 0.0
        if top is None:
            return []
        first, lead = top[0], top[3]
        if lead.state == COMPUTING:
            self.stuck = INF  # whoever waits may wait for its clock: read it (refresh)
        waiting, end = self.waiting, first + self.minlat
        window = []
        while waiting and waiting[0][0] < end:
            e = heappop(waiting)
            if e[2] == e[3].ver:
                window.append(e)
        nt = self.net.next_time()
        model = INF if nt is None else nt
        barrier = self._barrier_bounds() if self.barriers else {}
        out = []
        self.grew = False
        lat = self.minlat
        second = None  # the next bound after the lead's own (what its answer must not pass), once needed
        for e in window:
            r = e[3]
            if r.state != WAITING:
                continue
            a = r.until
            if r.events and r.events[0][0] < a:
                a = r.events[0][0]
            # a delivery not known yet comes at least a flit after the model's next event (a header
            # crosses a channel first: the interconnect refuses a virtual-time send to itself)
            if a >= first + lat and r is lead and second is None:
                second = self._second(top)
            # the lead's answer may pass the others' bounds but not the next one (second >= first)
            if a == INF or a >= model + 1 or a >= first + lat and (r is not lead or a >= second + lat) or \
                    (r in barrier and a >= barrier[r]):
                if a != INF:
                    self.stuck = max(self.stuck, a)
                heappush(waiting, e)  # not now: still a candidate of a later turn
                continue
            frames = r.held
            wakes = r.match is None
            while r.events and r.events[0][0] <= a:
                ev = heappop(r.events)
                frames.append(ev[2])
                if not wakes and _ends(ev[4], r.match):
                    r.need -= 1
                    wakes = r.need <= 0 or ev[4] is None
            if not wakes:  # it would queue them and wait again at ``a`` (module docstring)
                self._resume(r, a)
                self.kept = True  # its bound grew to its next event: the model may run further
                continue
            r.held = []
            r.state = COMPUTING
            if self._resume(r, a) != e[0]:
                self.grew = True  # the model may go further, another rank be answered: one more pass
            out.append((r, a, frames))  # the rank's clock becomes max(its own, a): it takes the max
        return out

    def _second(self, top) -> float:
        """The smallest bound after the top entry ``top``'s own."""
        heap = self.heap
        heappop(heap)
        nxt = self._top()
        heappush(heap, top)
        return INF if nxt is None else nxt[0]

    def _resume(self, r: VRank, a: float) -> float:
        """``r`` resumes at ``a``: its new bound."""
        # its clock as it will say it: its seconds back in flit times (the model's ``a`` may be an
        # ulp off; a bound an ulp above its next send let the model take that instant's event first)
        t = self.flits(self.answer_s(r, a))
        if t > r.vt:
            r.vt = t
        if a > self.released:
            self.released = a
        return self._touch(r)

    def deadlocked(self) -> list:
        """[(job, its waiting ranks)] for the jobs that can never go on (module docstring)."""
        jobs: dict = {}
        for r in self.ranks.values():
            jobs.setdefault(r.job, []).append(r)
        # a barrier that a rank which has ended never entered cannot complete: its ranks are stuck
        inside, stuck = set(), set()
        for entered, members in self.barriers.values():
            inside.update(entered)
            if any(m.state == DONE and m not in entered for m in members()):
                stuck.update(entered)
        out = []
        for job, rs in jobs.items():
            live = [r for r in rs if r.state != DONE]
            if live and all(r in stuck if r in inside else r.state == WAITING and r.until == INF and not r.events
                            for r in live) and not any(r.sent for r in rs):
                out.append((job, sorted(live, key=lambda r: r.rank)))
        return out


__all__ = ["COMPUTING", "CpuReader", "DONE", "VRank", "VirtualTime", "WAITING"]
