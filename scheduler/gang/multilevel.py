"""``multilevel`` and ``modified-two-queue``: the multilevel two-queue system (Zhou, Brent and
Qu 1997, sections 4 and 5, Figs. 4-6).

Levels i = 0, 1, ... each have a slot length q_i and a slot count f_i. New arrivals join the
tail of level 0 (FCFS). A job that has received f_i slots at level i moves to the tail of
level i+1 (the last level keeps its jobs: a job that uses up f_last slots rejoins its tail).
Jobs at a higher level (smaller i) have priority; within a level the job with the longest
attained service there goes first (longest-service-time-first, LSTF).

How P moves (section 5, the single-list walk of Fig. 6). A *scheduling round* has N slots.
At the start of a round P goes to the first job of the highest level and walks the walk order
(level ascending; inside a level f descending, then order of entry to the level), visiting
each job at most once per round, until N jobs were visited or the walk runs out (then the
counter is reset "once the pointer reaches the head node": a new round starts). A visit
increments f; level changes (the feedback) are applied only at the end of the round, so every
job that enters the service queue gets at least one slot. The service queue of the text is
implicit: it is the set of jobs a round visits, i.e. the first N of the walk order.

Readings where the text leaves room (and why):

* "the process which has so far received the least service is moved out ... to the head of
  its level" (section 4, written for two levels). With several levels we take the job of
  the lowest-priority (deepest) level present and, at that level, the least f: the walk
  order does exactly that when a new arrival at level 0 pushes one job out of the first N,
  and the pushed-out job stays first among the waiting jobs of its level (its head). This is
  the reading that keeps section 5's list ordered ("values of l, and of f at the same level,
  nonincreasing") and the levels' priorities intact.
* A job that arrives during a round is seen by the current walk only if P has not passed
  its place (the tail of level 0); otherwise it waits for the next round (Fig. 6(b)). With
  ``insert_arrivals=True`` (the adaptive variant of section 4, default for ``multilevel``)
  at the end of every slot of a round a new job at level 0 that has never been served gets
  the next slot; such inserted slots do not count towards N.
* Adaptive service-queue size: ``level_limits[i]`` caps how many jobs of level i a round
  visits (section 4: "limiting the number of processes from each level to enter the service
  queue"); levels past the list are unlimited.
* The office list is kept in the layout of Fig. 6: deepest level leftmost, inside a level in
  walk order (left to right); it is rearranged at each round end.

With f_0 = N = inf this is round robin and with N = 1 and all f_i = 1 it is FB (section 6);
tests/test_gang.py checks both against the independent ``round-robin`` and ``fb`` modules.

Defaults: the paper's example scaled by 5 s per time unit (q_0 = 5 s, f_0 = 1; q_1 = 15 s,
f_1 = 8; q_2 = 25 s, f_2 = 7) plus a last level of q = 10 units, with N = 6. The paper
calls its values "purely imaginary"; pass ``levels=[(q, f), ...]`` to choose others.
"""
from __future__ import annotations

import math

from scheduler.gang import register
from scheduler.gang.office import GangError, OfficeManager, _count, _flag, _positive

PAPER_LEVELS = ((1.0, 1), (3.0, 8), (5.0, 7), (10.0, math.inf))


def _levels(levels):
    try:
        levels = [tuple(x) for x in levels]
    except TypeError:
        raise GangError(f"levels must be a list of (slot length q, slot count f), got {levels!r}") from None
    if not levels:
        raise GangError("the multilevel system needs at least one level")
    out = []
    for i, lv in enumerate(levels):
        if len(lv) != 2:
            raise GangError(f"level {i} must be a pair (q, f), got {lv!r}")
        q = _positive(lv[0], f"slot length q_{i}")
        f = _count(lv[1], f"slot count f_{i}", allow_inf=True)
        out.append((q, f))
    return tuple(out)


@register("multilevel")
class Multilevel(OfficeManager):
    """Multilevel two-queue: levels (q_i, f_i), service queue N, LSTF, rounds of N slots."""

    def __init__(self, topology, allocator="naive", *, levels=PAPER_LEVELS, service_queue=6,
                 insert_arrivals: bool = True, level_limits=None, **params):
        self.levels = _levels(levels)
        self.n = _count(service_queue, "service_queue (N)", allow_inf=True)
        self.insert_arrivals = _flag(insert_arrivals, "insert_arrivals")
        if level_limits is None:
            level_limits = ()
        try:
            self.level_limits = tuple(None if x is None else _count(x, f"level_limits[{i}]")
                                      for i, x in enumerate(level_limits))
        except TypeError:
            raise GangError(f"level_limits must be a list of counts, got {level_limits!r}") from None
        super().__init__(topology, allocator, **params)
        self._seq = 0
        self.round = 0
        self._new_round()

    # ------------------------------------------------------------------ round state

    def _new_round(self):
        self.round += 1
        self._counter = 0
        self._visited: list = []  # visit order (round-end feedback follows it)
        self._seen: set = set()
        self._per_level: dict = {}
        self._ptr = None  # walk key of the last walked job

    def _key(self, rec):
        return (rec.level, -rec.f, rec.seq)

    def _limit(self, level):
        return self.level_limits[level] if level < len(self.level_limits) else None

    def _walk_next(self):
        best, bkey = None, None
        for rec in self.jobs.values():
            if rec.id in self._seen:
                continue
            k = self._key(rec)
            if self._ptr is not None and k <= self._ptr:
                continue
            lim = self._limit(rec.level)
            if lim is not None and self._per_level.get(rec.level, 0) >= lim:
                continue
            if bkey is None or k < bkey:
                best, bkey = rec, k
        return best

    def _end_round(self):
        for i in self._visited:
            rec = self.jobs.get(i)
            if rec is None:
                continue
            q, f = self.levels[rec.level]
            if rec.f >= f:
                rec.level = min(rec.level + 1, len(self.levels) - 1)
                rec.f = 0
                rec.seq = self._take_seq()
        self._new_round()
        self._arrange()

    def _take_seq(self):
        self._seq += 1
        return self._seq

    def _arrange(self):
        walk = sorted(self.jobs.values(), key=self._key)
        layout = sorted(walk, key=lambda r: -r.level)  # stable: walk order inside a level
        order = [r.id for r in layout]
        if list(self.office.order) != order:
            self.office.arrange(order)

    # ------------------------------------------------------------------ hooks

    def _checkin_after(self, rec):
        rec.level, rec.f, rec.seq = 0, 0, self._take_seq()
        # tail of level 0 = the right end of the list in Fig. 6's layout
        return None

    def _next(self, now):
        if self.insert_arrivals and self._counter > 0 and self._counter < self.n:
            fresh = [r for r in self.jobs.values()
                     if r.level == 0 and r.slots == 0 and r.id not in self._seen]
            if fresh:
                rec = min(fresh, key=lambda r: r.seq)
                self._visit(rec, counted=False)
                return rec.id
        rec = self._walk_next() if self._counter < self.n else None
        if rec is None:
            self._end_round()
            rec = self._walk_next()
            if rec is None:
                return None
        self._visit(rec, counted=True)
        return rec.id

    def _visit(self, rec, counted):
        if counted:
            self._ptr = self._key(rec)
            self._counter += 1
            self._per_level[rec.level] = self._per_level.get(rec.level, 0) + 1
        self._seen.add(rec.id)
        self._visited.append(rec.id)
        rec.f += 1

    def _length(self, rec):
        return self.levels[rec.level][0]

    def _snapshot_extra(self):
        def fin(x):
            return None if x == math.inf else x

        return {"levels": [{"q": q, "f": fin(f)} for q, f in self.levels], "N": fin(self.n),
                "round": self.round, "round_slots": self._counter,
                "insert_arrivals": self.insert_arrivals,
                "level_limits": list(self.level_limits)}


@register("modified-two-queue")
class ModifiedTwoQueue(Multilevel):
    """Section 4's modified two-queue system: level 0 (q_0, f_0) for new jobs, level 1."""

    def __init__(self, topology, allocator="naive", *, q0: float = 1.0, f0: int = 1, q1: float = 1.0,
                 service_queue=3, **params):
        if "levels" in params:
            raise GangError("modified-two-queue has two levels; set q0, f0 and q1 (or use multilevel)")
        params.setdefault("insert_arrivals", False)
        super().__init__(topology, allocator, levels=((q0, f0), (q1, math.inf)),
                         service_queue=service_queue, **params)
