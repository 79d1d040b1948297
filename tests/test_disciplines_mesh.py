"""The dissertation's multi-queue disciplines: ``bwq`` (chapter 7.3), ``mq-scan`` (8.2.1) and
``helm`` (8.1, Figure 8.1).

Hand-worked schedules on a small mesh with Zhu's first fit (the allocator of chapter 8), each
derived from the paper's rules and the readings in the modules' docstrings, assert start
times and start order; a smoke test runs every discipline with every allocator to
completion. ``Drive`` is the simulator's event engine (emulator.sim.engine) with an observer:
arrivals and departures at given times (a departure at start + Start.runtime, departures
before timers before arrivals at equal times) and, when the discipline asks through
``next_wakeup()``, a ``tick`` at that time.
"""
from __future__ import annotations

import itertools
import json
import math
import random

import pytest

from emulator.sim.engine import ARRIVE, DEPART, TIMER, Engine
from scheduler import allocators, disciplines
from scheduler.disciplines import DisciplineError
from scheduler.jobs import Job, JobError
from scheduler.topology import Request, RequestTooLarge, parse_topology


def S(w, h):
    return Request.submesh(w, h)


class Drive:
    """Script arrivals with ``arrive``, then ``run(until)`` (resumable); ``timers=False``:
    a driver that never ticks."""

    def __init__(self, name, topology="mesh:4x4", allocator="first-fit", timers=True, **params):
        alloc = allocators.create(allocator, topology)
        self.d = disciplines.create(name, alloc.topology, alloc, **params)
        self.starts: dict = {}
        self.order: list = []
        self.done: list = []
        self.ticks: list = []
        self.timers = timers
        self.engine = Engine(self.d, observers=[self], timers=timers)

    def arrive(self, t, jid, request, runtime):
        self.engine.schedule(t, ARRIVE, Job(jid, t, request, runtime))
        return self

    def run(self, until=math.inf):
        self.engine.run(until)
        return self

    def observe(self, t, kind, item, starts):
        if kind == DEPART:
            self.done.append(item.job.id)
        elif kind == TIMER:
            self.ticks.append(t)
        for s in starts:
            assert s.time == t
            assert s.job.id not in self.starts, f"job {s.job.id} started twice"
            self.starts[s.job.id] = s
            self.order.append(s.job.id)
        if self.timers:
            w = self.d.next_wakeup()
            assert w is None or w > t, "a wakeup must lie in the future"
        return False

    def start(self, jid):
        return self.starts[jid].time

    def started_at(self, t):
        return [j for j in self.order if self.starts[j].time == t]


# --------------------------------------------------------------------------- HELM


def test_helm_tick_moves_passed_over_job_to_hq_without_any_other_event():
    # 4x4 mesh, first fit; k2 = 5 so that the EQ window is 2 jobs by t = 7.
    # A (4x4) runs 0..4; B (2x2) waits in EQ 1..4 (window floor(5 * 0) = 0 at t=1: FCFS),
    # runs 4..6. Departures: A waited 0, B waited 3 -> AWT 1.5, UBWT = 2 * 1.5 = 3 at t=6.
    # C (4x3) starts at 6 on rows 0-2, leaving row 3 (4x1) free until 16.
    # J (3x3) arrives at 7: no fit; the mean EQ length is 3/7 (B waited 3 of 7 time units),
    # window floor(5 * 3/7) = 2, so J is passed to an LQ. Its wait passes UBWT = 3 at
    # t = 10 with no event: the tick then moves it to HQ, whose head blocks everything, so
    # S (1x1, fits in row 3) arriving at 12 waits for J; at 16 J starts, then S.
    def schedule(timers):
        dr = Drive("helm", k2=5, timers=timers)
        dr.arrive(0, "A", S(4, 4), 4).arrive(1, "B", S(2, 2), 2).arrive(6, "C", S(4, 3), 10)
        dr.arrive(7, "J", S(3, 3), 1).arrive(12, "S", S(1, 1), 1)
        return dr

    dr = schedule(timers=True)
    dr.run(until=9.9)
    d = dr.d
    assert d.ubwt == 3.0 and d.awt == 1.5
    snap = d.snapshot()
    assert snap["HQ"] == [] and snap["EQ"] == [] and snap["LQs"] == [[], ["J"]]
    assert d.next_wakeup() == pytest.approx(10.0) and d.next_wakeup() > 10.0
    dr.run(until=11)
    assert len(dr.ticks) == 1 and dr.ticks[0] == pytest.approx(10.0)
    snap = d.snapshot()
    assert snap["HQ"] == ["J"] and snap["LQs"] == [[], []] and snap["UBWT"] == 3.0
    assert d.next_wakeup() is None  # a blocked HQ head: only a departure can help
    json.dumps(snap)
    dr.run()
    assert [dr.start(j) for j in "ABCJS"] == [0, 4, 6, 16, 16]
    assert dr.started_at(16) == ["J", "S"]

    # The same schedule with a driver that never ticks: J is still in an LQ at 12 (its
    # check comes only with the round at S's arrival, after S has been let through), so S
    # starts at once -- the tick is what makes the move time-exact.
    dr = schedule(timers=False).run()
    assert dr.start("S") == 12 and dr.start("J") == 16


def test_helm_job_below_ubwt_is_passed_and_a_smaller_one_goes_ahead():
    # As above but J arrives at 9.5: at S's arrival (12) it has waited 2.5 <= UBWT 3, so it
    # is passed and S starts in row 3; the tick at 12.5 then moves J to HQ.
    dr = Drive("helm", k2=5)
    dr.arrive(0, "A", S(4, 4), 4).arrive(1, "B", S(2, 2), 2).arrive(6, "C", S(4, 3), 10)
    dr.arrive(9.5, "J", S(3, 3), 1).arrive(12, "S", S(1, 1), 1).arrive(13, "T", S(1, 1), 1)
    dr.run(until=12.4)
    assert dr.start("S") == 12 and dr.d.snapshot()["LQs"] == [[], ["J"]]
    dr.run()
    assert dr.ticks and dr.ticks[0] == pytest.approx(12.5)
    # T (1x1) would fit beside S but J is in HQ from 12.5: T waits for J.
    assert dr.start("J") == 16 and dr.start("T") == 16 and dr.started_at(16) == ["J", "T"]


def test_helm_is_fcfs_while_the_lookahead_window_is_below_one_job():
    # Default K2 = 0.5: the window is floor(0.5 * mean EQ length) = 0 here, so a blocked EQ
    # head blocks the jobs behind it (SQ-FCFS at low load, 8.2.3).
    dr = Drive("helm")
    dr.arrive(0, "X", S(4, 3), 10).arrive(1, "H", S(2, 2), 5).arrive(2, "s", S(1, 1), 5)
    dr.run()
    assert dr.start("H") == 10 and dr.start("s") == 10 and dr.order == ["X", "H", "s"]


def test_helm_lookahead_window_passes_blocked_head_and_next_job_starts():
    # K2 = 2: by t = 2, H has waited in EQ for 1 of 2 time units (mean length 0.5), window
    # floor(2 * 0.5) = 1: at s's arrival the blocked head H goes to an LQ and s starts in row 3.
    dr = Drive("helm", k2=2)
    dr.arrive(0, "X", S(4, 3), 10).arrive(1, "H", S(2, 2), 5).arrive(2, "s", S(1, 1), 5)
    dr.run(until=2)
    assert dr.start("s") == 2 and dr.d.snapshot()["LQs"] == [["H"], []]
    dr.run()
    assert dr.start("H") == 10


def test_helm_without_departures_never_moves_to_hq():
    dr = Drive("helm", k2=2)
    dr.arrive(0, "X", S(4, 3), 100).arrive(1, "H", S(2, 2), 5).arrive(2, "s", S(1, 1), 100)
    dr.run(until=50)
    assert dr.d.ubwt is None and dr.d.next_wakeup() is None and dr.d.snapshot()["HQ"] == []


def test_helm_hq_priority_reading_lets_others_pass():
    # hq_blocks=False: J in HQ only gets first pick; T fits beside S and starts at 13.
    dr = Drive("helm", k2=5, hq_blocks=False)
    dr.arrive(0, "A", S(4, 4), 4).arrive(1, "B", S(2, 2), 2).arrive(6, "C", S(4, 3), 10)
    dr.arrive(9.5, "J", S(3, 3), 1).arrive(12, "S", S(1, 1), 1).arrive(13, "T", S(1, 1), 1)
    dr.run()
    assert dr.start("T") == 13 and dr.start("J") == 16


# --------------------------------------------------------------------------- BWQ

# Limits [1, 4]: Q0 holds 1-node jobs, Q1 2..4 nodes, Q2 5..16.


def test_bwq_qboundary_keeps_late_arrivals_out_of_the_current_pass():
    # X (4x4) runs 0..10. a1 (4x1, Q1) arrives at 1: the scheduler takes Q1 and sets its
    # Qboundary after a1. a2 (2x2, Q1) arrives at 2, b (4x3, Q2) at 3. At 10 a1 starts on
    # row 0, the pass of Q1 is over, and the turn goes circular right to Q2 although a2 is
    # older than b: b starts on rows 1-3 and a2 waits for b (runs 10..13) to leave.
    dr = Drive("bwq", limits=[1, 4])
    dr.arrive(0, "X", S(4, 4), 10).arrive(1, "a1", S(4, 1), 50)
    dr.arrive(2, "a2", S(2, 2), 5).arrive(3, "b", S(4, 3), 3)
    dr.run(until=5)
    snap = dr.d.snapshot()
    assert snap["current"] == "Q1" and snap["boundary"] == {"queue": "Q1", "last_job": "a1"}
    assert snap["queues"][1]["in_pass"] == ["a1"] and snap["queues"][1]["jobs"] == ["a1", "a2"]
    dr.run()
    assert dr.started_at(10) == ["a1", "b"]
    assert dr.start("a2") == 13


def test_bwq_finished_pass_moves_circular_right_and_wraps():
    # Everything waits behind X; at 10 the pass of Q2 (c) is served, then the scan wraps to
    # Q0 (a) and Q1 (b): start order c, a, b although they arrived c, b, a.
    dr = Drive("bwq", topology="mesh:8x8", limits=[1, 4])
    dr.arrive(0, "X", S(8, 8), 10).arrive(1, "c", S(4, 2), 5).arrive(2, "b", S(2, 2), 5)
    dr.arrive(3, "a", S(1, 1), 5)
    dr.run()
    assert dr.started_at(10) == ["c", "a", "b"]


@pytest.mark.parametrize("bqsl", [0, 1, 2, 3])
def test_bwq_bqsl_bounds_the_returns_to_smaller_queues(bqsl):
    # X (4x2) runs 0..100 on rows 0-1. B (4x4, Q2) arrives at 1 and cannot fit; Q2 is the
    # current queue. Each 1-node job s1..s4 arriving at 2..5 makes the scheduler return to Q0
    # (a side trip: s starts at once) and raises B's priority P; once P has reached Q2's BQSL
    # the scheduler blocks on B, and later small jobs wait although nodes are free. B starts
    # at 100; the waiting small jobs after B (100..110).
    dr = Drive("bwq", limits=[1, 4], bqsl=[0, 5, bqsl], window=1)
    dr.arrive(0, "X", S(4, 2), 100).arrive(1, "B", S(4, 4), 10)
    for i in range(1, 5):
        dr.arrive(1 + i, f"s{i}", S(1, 1), 20)
    dr.run(until=6)
    snap = dr.d.snapshot()
    assert snap["current"] == "Q2" and snap["blocked_on"] == "B"
    assert snap["queues"][2]["priority"] == ({"B": bqsl} if bqsl else {})
    dr.run()
    early = [f"s{i}" for i in range(1, 5) if dr.start(f"s{i}") < 100]
    assert early == [f"s{i}" for i in range(1, bqsl + 1)]
    assert [dr.start(f"s{i}") for i in range(1, bqsl + 1)] == list(range(2, 2 + bqsl))
    assert dr.start("B") == 100
    assert all(dr.start(f"s{i}") == 110 for i in range(bqsl + 1, 5))


def test_bwq_no_smaller_queue_means_no_pass_counted():
    # B blocks in Q2 and only Q2 jobs arrive: nothing to return to, P stays 0.
    dr = Drive("bwq", limits=[1, 4], bqsl=[0, 5, 1])
    dr.arrive(0, "X", S(4, 2), 100).arrive(1, "B", S(4, 4), 10).arrive(2, "C", S(4, 3), 10)
    dr.run(until=50)
    assert dr.d.priority["B"] == 0 and dr.d.blocked_on is None


@pytest.mark.parametrize("window, h2_start", [(2, 10), (1, 100)])
def test_bwq_lookahead_window_lets_a_job_behind_a_blocked_head_start(window, h2_start):
    # Limits [1, 8]: Q0 1 node, Q1 2..8, Q2 9..16. X (4x2) rows 0-1 until 100, Y (4x2)
    # rows 2-3 until 10. z (1x1, Q0, BQSL 0) arrives at 1 and blocks the scheduler (FCFS
    # Q0), so h (4x2) and h2 (2x2) gather in Q1. At 10 z starts at (0,2); Q1's pass is
    # {h, h2}: h does not fit beside z, h2 does at (1,2) -- but only if the window reaches it.
    dr = Drive("bwq", limits=[1, 8], window=[1, window, 1])
    dr.arrive(0, "X", S(4, 2), 100).arrive(0, "Y", S(4, 2), 10).arrive(1, "z", S(1, 1), 1000)
    dr.arrive(2, "h", S(4, 2), 1000).arrive(3, "h2", S(2, 2), 1000)
    dr.run()
    assert dr.start("z") == 10 and dr.start("h") == 100 and dr.start("h2") == h2_start


def test_bwq_back_previous_visits_nearest_smaller_queue_first():
    # X1 (4x2) rows 0-1, X2 (2x2) at (0,2), Y (2x2) at (2,2); B (4x4, Q2) blocks from 1.
    # a (1x1, Q0) and b (2x2, Q1) arrive at 2 and 3 while nothing is free. At 5 Y leaves one
    # 2x2 hole, which holds a or b but not both: the side trip from Q2 serves Q0 first
    # ("smallest") or the nearest smaller queue Q1 first ("previous").
    for back, first in (("smallest", "a"), ("previous", "b")):
        dr = Drive("bwq", limits=[1, 4], back=back, bqsl=[0, 5, 5])
        dr.arrive(0, "X1", S(4, 2), 100).arrive(0, "X2", S(2, 2), 100).arrive(0, "Y", S(2, 2), 5)
        dr.arrive(1, "B", S(4, 4), 10).arrive(2, "a", S(1, 1), 50).arrive(3, "b", S(2, 2), 50)
        dr.run(until=6)
        assert dr.started_at(5) == [first]
        assert dr.d.priority["B"] == 3  # returns at 2, 3 and 5


# --------------------------------------------------------------------------- MQ-SCAN


def test_mq_scan_visits_queues_in_scan_order():
    # Limits [1, 4] on an 8x8 mesh. While X fills the machine, c (Q2) arrives first (the
    # scan takes Q2 and sets its pass), then b (Q1), a (Q0) and d (Q2, after the pass
    # started). At 10: Q2's pass (c), then wrap round to Q0 (a), Q1 (b), and Q2 again (d).
    dr = Drive("mq-scan", topology="mesh:8x8", limits=[1, 4])
    dr.arrive(0, "X", S(8, 8), 10).arrive(1, "c", S(4, 2), 5).arrive(2, "b", S(2, 2), 5)
    dr.arrive(3, "a", S(1, 1), 5).arrive(4, "d", S(2, 3), 5)
    dr.run()
    assert dr.started_at(10) == ["c", "a", "b", "d"]


@pytest.mark.parametrize("boundary, order", [(True, ["c", "a", "b", "d"]), (False, ["c", "d", "a", "b"])])
def test_mq_scan_pass_boundary(boundary, order):
    dr = Drive("mq-scan", topology="mesh:8x8", limits=[1, 4], boundary=boundary)
    dr.arrive(0, "X", S(8, 8), 10).arrive(1, "c", S(4, 2), 5).arrive(2, "b", S(2, 2), 5)
    dr.arrive(3, "a", S(1, 1), 5).arrive(4, "d", S(2, 3), 5)
    dr.run()
    assert dr.started_at(10) == order


def test_mq_scan_blocked_queue_keeps_the_turn_but_does_not_block():
    # B (4x4, Q2) cannot start while X (4x3) runs; a (1x1, Q0) arriving at 2 is swept in at
    # once (non-blocking), b (2x2, Q1) at 3 does not fit in row 3. The turn stays on Q2:
    # at 10 X leaves but a holds a node, so B still waits; b then fits and is swept in.
    # At 12 a leaves: B is tried first but b still holds 4 nodes; B starts at 15.
    dr = Drive("mq-scan", limits=[1, 4])
    dr.arrive(0, "X", S(4, 3), 10).arrive(1, "B", S(4, 4), 1).arrive(2, "a", S(1, 1), 10)
    dr.arrive(3, "b", S(2, 2), 5)
    dr.run(until=9)
    assert dr.start("a") == 2 and dr.d.snapshot()["current"] == "Q2"
    dr.run()
    assert dr.start("b") == 10 and dr.start("B") == 15


# --------------------------------------------------------------------------- parameters and views


@pytest.mark.parametrize("name", ["bwq", "mq-scan", "helm"])
def test_parameters_are_checked(name):
    alloc = allocators.create("first-fit", "mesh:8x8")
    with pytest.raises(TypeError, match="nonsense"):
        disciplines.create(name, alloc.topology, alloc, nonsense=1)
    for bad in ([8, 4], [0, 4], [4, 64], "square-pow2", "dimensions", 7):
        with pytest.raises(DisciplineError):
            disciplines.create(name, alloc.topology, alloc, limits=bad)
    key = "lqs" if name == "helm" else "queues"
    with pytest.raises(DisciplineError):
        disciplines.create(name, alloc.topology, alloc, **{key: 0})
    with pytest.raises(DisciplineError):
        disciplines.create(name, alloc.topology, alloc, **{key: 3, "limits": [4]})
    cube = allocators.create("buddy", "hypercube:2")
    with pytest.raises(DisciplineError, match="only 3"):
        disciplines.create(name, cube.topology, cube, **{key: 4})
    with pytest.raises(DisciplineError):
        disciplines.create(name, cube.topology, cube, limits="processors")


def test_bad_values_are_refused():
    alloc = allocators.create("first-fit", "mesh:8x8")
    for params in ({"bqsl": -1}, {"bqsl": [0, 1]}, {"window": 0}, {"back": "left"}):
        with pytest.raises(DisciplineError):
            disciplines.create("bwq", alloc.topology, alloc, **params)
    for params in ({"k1": -1}, {"k2": float("nan")}, {"hq_blocks": "yes"}):
        with pytest.raises(DisciplineError):
            disciplines.create("helm", alloc.topology, alloc, **params)
    with pytest.raises(DisciplineError):
        disciplines.create("mq-scan", alloc.topology, alloc, boundary=1)


def test_default_limits_balance_the_reference_workloads():
    # rect-unrestricted on 16x16 (chapter 7): each of the 3 BWQ queues gets a third of the
    # 256 equally likely (w, h) pairs, up to the pairs sharing the limit's area.
    alloc = allocators.create("frame-sliding", "mesh:16x16")
    d = disciplines.create("bwq", alloc.topology, alloc)
    counts = [0, 0, 0]
    for w in range(1, 17):
        for h in range(1, 17):
            counts[d.classes.index(S(w, h))] += 1
    assert max(counts) - min(counts) <= 12, counts
    # processors on 32x32 (chapter 8): uniform counts 1..1024 over MQ-SCAN's 5 queues.
    alloc = allocators.create("first-fit", "mesh:32x32")
    d = disciplines.create("mq-scan", alloc.topology, alloc)
    counts = [0] * 5
    for p in range(1, 1025):
        counts[d.classes.index(Request.processors(p))] += 1
    # Rounded sizes are achievable areas w*h, so each limit is the achievable area nearest
    # i * 1024 / 5 and exactly that many counts fall at or below it.
    cumulative = list(itertools.accumulate(counts))[:-1]
    assert cumulative == list(d.classes.limits)
    assert all(abs(c - i * 1024 / 5) <= 8 for i, c in enumerate(cumulative, 1)), counts
    # hypercube: dimensions split evenly; a small cube gets no more queues than sizes.
    cube = allocators.create("buddy", "hypercube:10")
    d = disciplines.create("mq-scan", cube.topology, cube)
    assert [d.classes.index(Request.cube(k)) for k in range(11)] == [0, 0, 1, 1, 2, 2, 2, 3, 3, 4, 4]
    small = allocators.create("buddy", "hypercube:1")
    assert disciplines.create("mq-scan", small.topology, small).classes.count == 2


@pytest.mark.parametrize("name", ["bwq", "mq-scan", "helm"])
def test_cancel_waiting_job_and_snapshot(name):
    dr = Drive(name, limits=[1, 4])
    dr.arrive(0, "X", S(4, 4), 10).arrive(1, "B", S(4, 4), 5).arrive(2, "a", S(1, 1), 5)
    dr.arrive(3, "b", S(2, 2), 5)
    dr.run(until=4)
    d = dr.d
    assert {j.id for j in d.waiting()} == {"B", "a", "b"}
    snap = d.snapshot()
    json.dumps(snap)
    assert snap["discipline"] == name and snap["running"] == ["X"]
    listed = sorted(j for q in snap["queues"] for j in q["jobs"])
    assert listed == ["B", "a", "b"]
    d.cancel("B", 4)
    with pytest.raises(JobError):
        d.cancel("B", 4)
    assert {j.id for j in d.waiting()} == {"a", "b"}
    dr.run()
    assert dr.start("a") == 10 and dr.start("b") == 10 and "B" not in dr.starts


def test_bwq_cancel_starving_job_unblocks():
    dr = Drive("bwq", limits=[1, 4], bqsl=[0, 5, 0])
    dr.arrive(0, "X", S(4, 2), 100).arrive(1, "B", S(4, 4), 10).arrive(2, "s", S(1, 1), 5)
    dr.run(until=3)
    assert dr.d.blocked_on == "B" and "s" not in dr.starts
    starts = dr.d.cancel("B", 3)
    assert [s.job.id for s in starts] == ["s"]


@pytest.mark.parametrize("name", ["bwq", "mq-scan", "helm"])
def test_refused_request_changes_nothing(name):
    dr = Drive(name)
    before = dr.d.snapshot()
    with pytest.raises(RequestTooLarge):
        dr.d.arrive(Job(1, 0, S(5, 1), 1), 0)
    assert dr.d.snapshot() == before and dr.d.waiting() == []


# --------------------------------------------------------------------------- smoke


def _jobs(topo, n, rng):
    t = 0.0
    for i in range(n):
        t += rng.expovariate(1.0)
        if topo.kind == "mesh" and rng.random() < 0.6:
            req = S(rng.randint(1, topo.width), rng.randint(1, topo.height))
        elif topo.kind == "mesh":
            req = Request.processors(rng.randint(1, topo.size))
        else:
            req = Request.cube(rng.randint(0, topo.n))
        yield round(t, 3), i, req, round(rng.uniform(0.5, 8), 3)


VARIANTS = [
    ("bwq", {}), ("bwq", {"back": "previous", "window": 8}), ("mq-scan", {}),
    ("mq-scan", {"boundary": False}), ("helm", {}), ("helm", {"k1": 1, "k2": 2}),
    ("helm", {"hq_blocks": False, "k2": 1}),
]


def _smoke_cases():
    for topo in ("mesh:8x8", "hypercube:4"):
        for alloc in allocators.names(topo):
            for name, params in VARIANTS:
                yield pytest.param(topo, alloc, name, params, id=f"{name}{params or ''}-{alloc}-{topo}")


@pytest.mark.parametrize("topology, allocator, name, params", list(_smoke_cases()))
def test_runs_to_completion_with_every_allocator(topology, allocator, name, params):
    rng = random.Random(7)
    dr = Drive(name, topology=topology, allocator=allocator, **params)
    topo = parse_topology(topology)
    jobs = list(_jobs(topo, 150, rng))
    for t, i, req, rt in jobs:
        dr.arrive(t, i, req, rt)
    dr.run()
    assert sorted(dr.starts) == [i for _, i, _, _ in jobs]  # each job started exactly once
    assert sorted(dr.done) == sorted(dr.starts)  # and completed
    assert dr.d.waiting() == [] and not dr.d.running
    assert dr.d.allocator.free_count == topo.size
    for s in dr.starts.values():
        assert s.time >= s.job.submit
    json.dumps(dr.d.snapshot())


def test_a_node_back_in_service_is_used_after_tick():
    # quarantine: a down node makes an allocation fail without any start or release; once the
    # node is back, tick() must retry the waiting job (the remembered failure is void)
    from scheduler import allocators, disciplines
    from scheduler.jobs import Job
    from scheduler.quarantine import Quarantine
    from scheduler.topology import Request

    for name in ("bwq", "mq-scan", "helm"):
        inner = allocators.create("first-fit", "mesh:2x2")
        q = Quarantine(inner)
        d = disciplines.create(name, inner.topology, q)
        q.mark_down(3)
        assert d.arrive(Job(1, 0.0, Request.submesh(2, 2), 5.0), 0.0) == []
        q.mark_up(3)
        started = d.tick(1.0)
        assert [s.job.id for s in started] == [1], name
