"""Gang scheduling: the registration office, the policies of Zhou, Brent and Qu (1997) and the
gang simulator. Expected schedules are worked out by hand from the paper's rules (comments
give the slot-by-slot reasoning)."""
from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings, strategies as st

from emulator.sim.gang import run_gang, simulate
from scheduler import gang
from scheduler.decisions import SlotSwitch
from scheduler.gang.office import HEAD, GangError, OfficeError, RegistrationOffice
from scheduler.jobs import Job, JobError
from scheduler.registry import UnknownPolicy
from scheduler.topology import Request, RequestError

INF = math.inf


def J(i, submit, runtime, k=2):
    return Job(i, submit, Request.cube(k), runtime)


def turnarounds(run):
    return {r["id"]: r["turnaround"] for r in run.jobs}


def schedule(run):
    return [(s.time, s.primary, tuple(sorted(s.running))) for s in run.trace]


# --------------------------------------------------------------------------- the office


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["in", "out", "move"]), st.integers(0, 30),
                          st.frozensets(st.integers(0, 7), min_size=1, max_size=8),
                          st.integers(-1, 40)), max_size=60))
def test_office_lists_keep_identical_order_on_all_nodes(ops):
    office = RegistrationOffice()
    model: list = []  # the global order, kept by hand
    where: dict = {}
    for op, job, nodes, pos in ops:
        if op == "in" and job not in where:
            # insert at the tail (pos -1), the head (0) or after the pos-th registered job
            after = None if pos < 0 or not model else (HEAD if pos == 0 else model[(pos - 1) % len(model)])
            office.check_in(job, nodes, after)
            idx = len(model) if after is None else 0 if after is HEAD else model.index(after) + 1
            model.insert(idx, job)
            where[job] = nodes
        elif op == "out" and model:
            victim = model[pos % len(model)]
            assert office.check_out(victim) == model.index(victim)
            model.remove(victim)
            del where[victim]
        elif op == "move" and len(model) > 1:
            j = model[pos % len(model)]
            others = [x for x in model if x != j]
            after = others[(pos // 2) % len(others)]
            office.move(j, after)
            model.remove(j)
            model.insert(model.index(after) + 1, j)
        assert list(office.order) == model
        rank = {j: i for i, j in enumerate(model)}
        for n in range(8):
            on = office.list_on(n)
            # exactly the jobs registered on n, and in the same relative order as everywhere
            assert sorted(on) == sorted(j for j in model if n in where[j])
            assert [rank[j] for j in on] == sorted(rank[j] for j in on)


def test_office_refuses_bad_calls_and_changes_nothing():
    office = RegistrationOffice()
    office.check_in("a", [0, 1])
    office.check_in("b", [1, 2])
    with pytest.raises(OfficeError):
        office.check_in("a", [3])
    with pytest.raises(OfficeError):
        office.check_in("c", [3], after="zz")
    with pytest.raises(OfficeError):
        office.check_out("zz")
    with pytest.raises(OfficeError):
        office.point("zz")
    with pytest.raises(OfficeError):
        office.check_in("c", [])
    assert office.order == ("a", "b") and office.list_on(1) == ("a", "b") and office.list_on(3) == ()
    office.check_in("c", [1], after=HEAD)
    assert office.list_on(1) == ("c", "a", "b")
    office.point("a")
    office.move("a", "b")
    assert office.pointer == "a" and office.list_on(1) == ("c", "b", "a")
    office.check_out("a")
    assert office.pointer is None


# --------------------------------------------------------------------------- hand-worked schedules


def test_round_robin_hand_worked():
    # q = 1, A=2, B=1, C=3 at t=0: A[0,1) B[1,2) done 2, C[2,3) A[3,4) done 4, C[4,6) done 6
    run = run_gang("round-robin", "hypercube:2", [J("A", 0, 2), J("B", 0, 1), J("C", 0, 3)], trace=True)
    assert turnarounds(run) == {"A": 4, "B": 2, "C": 6}
    assert [p for _, p, _ in schedule(run)] == ["A", "B", "C", "A", "C", "C", None]
    # D (1 unit) arrives at 2.5 and is checked in at the tail (Ousterhout): served after C,
    # before A: D[3,4) done; A[4,5) done 5; C[5,7) done 7
    run = run_gang("round-robin", "hypercube:2", [J("A", 0, 2), J("B", 0, 1), J("C", 0, 3), J("D", 2.5, 1)])
    assert turnarounds(run) == {"A": 5, "B": 2, "C": 7, "D": 1.5}


def test_engine_order_at_a_slot_boundary():
    # q = 1; A and B (1 unit each) at 0, C (1 unit) arrives at 1, when A's work ends exactly
    # at the end of its slot. At t=1 the engine takes A's completion, then C's arrival (C is
    # checked in), then the slot timer (P moves to B): A[0,1) B[1,2) C[2,3). The slot switch
    # after the last departure (nothing runs) is taken and counted.
    run = run_gang("round-robin", "hypercube:2", [J("A", 0, 1), J("B", 0, 1), J("C", 1, 1)], trace=True)
    assert turnarounds(run) == {"A": 1, "B": 2, "C": 2}
    assert schedule(run) == [(0, "A", ("A",)), (1, "B", ("B",)), (2, "C", ("C",)), (3, None, ())]
    assert run.metrics["slot_switches"] == 4
    # events: 3 arrivals, 3 completions (the model's timer), 4 slot timers
    assert run.perf["events"] == 10


def test_two_queue_hand_worked():
    # N = 2: service [A, B], waiting [C]. A[0,1) B[1,2) A[2,3) done 3 -> C takes A's place
    # behind P; B[3,4) C[4,5) done 5; B[5,6) done 6
    run = run_gang("two-queue", "hypercube:2", [J("A", 0, 2), J("B", 0, 3), J("C", 0, 1)],
                   policy_params={"service_queue": 2}, trace=True)
    assert turnarounds(run) == {"A": 3, "B": 6, "C": 5}
    assert [p for _, p, _ in schedule(run)] == ["A", "B", "A", "B", "C", "B", None]
    # N = 1 is a batch queue: no job is ever preempted
    run = run_gang("two-queue", "hypercube:2", [J("A", 0, 2), J("B", 0, 3), J("C", 0, 1)],
                   policy_params={"service_queue": 1})
    assert turnarounds(run) == {"A": 2, "B": 5, "C": 6}
    assert run.metrics["preemptions"] == 0


def test_multilevel_hand_worked_insertion_into_the_current_round():
    levels = ((1, 1), (2, INF))
    jobs = [J("A", 0, 5), J("B", 0, 4), J("C", 2.5, 1)]
    # round 1: A[0,1) B[1,2); both used f_0 = 1 -> level 1. Round 2: A[2,4) (q_1 = 2).
    # C arrives at 2.5. Inserted: C[4,5) done (slot not counted); round 2 goes on: B[5,7).
    # Round 3: A[7,9) done 9, B[9,10) done 10.
    run = run_gang("multilevel", "hypercube:2", jobs, trace=True,
                   policy_params={"levels": levels, "service_queue": 2, "insert_arrivals": True})
    assert turnarounds(run) == {"A": 9, "B": 10, "C": 2.5}
    assert [p for _, p, _ in schedule(run)] == ["A", "B", "A", "C", "B", "A", "B", None]
    # fixed service queue: C waits for the end of round 2 (Fig. 6(b)): B[4,6), then C[6,7)
    run = run_gang("multilevel", "hypercube:2", jobs,
                   policy_params={"levels": levels, "service_queue": 2, "insert_arrivals": False})
    assert turnarounds(run) == {"A": 9, "B": 10, "C": 4.5}


def test_multilevel_longest_service_first_keeps_the_same_jobs_active():
    levels = ((1, 1), (1, INF))
    # N = 2, three 10-unit jobs. R1: A B (-> level 1). R2: C (level 0 first), A (level 1, LSTF
    # tie broken by entry order); C -> level 1 behind B. R3: A (f 2) B (f 1) ... A and B keep
    # the service queue; A done in R10 at 19, B at 21, then C alone 21..30.
    run = run_gang("multilevel", "hypercube:2", [J("A", 0, 10), J("B", 0, 10), J("C", 0, 10)], trace=True,
                   policy_params={"levels": levels, "service_queue": 2, "insert_arrivals": False})
    assert [p for _, p, _ in schedule(run)][:8] == ["A", "B", "C", "A", "A", "B", "A", "B"]
    assert turnarounds(run) == {"A": 19, "B": 21, "C": 30}
    rr = run_gang("round-robin", "hypercube:2", [J("A", 0, 10), J("B", 0, 10), J("C", 0, 10)])
    assert rr.metrics["context_switches"] > run.metrics["context_switches"]


def test_new_arrival_pushes_out_the_least_attained_job():
    levels = ((1, 1), (1, INF))
    # A, B (6 units) alternate; C arrives at 4.5, joins round 4 (6..8) first: C[6,7) done, then
    # A, which has as much service as B but entered level 1 first; B (least attained at the
    # deepest level) leaves for the head of level 1. A done at 11, B at 13.
    run = run_gang("modified-two-queue", "hypercube:2", [J("A", 0, 6), J("B", 0, 6), J("C", 4.5, 1)],
                   policy_params={"service_queue": 2}, trace=True)
    assert turnarounds(run) == {"A": 11, "B": 13, "C": 2.5}
    assert [p for _, p, _ in schedule(run)][6:9] == ["C", "A", "A"]


def test_multilevel_office_list_follows_figure_6_layout():
    g = gang.create("multilevel", "hypercube:2", levels=((1, 1), (1, 2), (1, INF)), service_queue=3,
                    insert_arrivals=False)
    for i in "ABC":
        g.arrive(J(i, 0, 100), 0)
    t = 0
    for _ in range(6):  # two rounds: R1 A B C (all -> level 1), R2 A B C (f = 1 at level 1)
        g.tick(t)
        t += 1
    g.arrive(J("D", t, 100), t)
    g.tick(t)  # round 3 starts: A B C reach f_1 = 2 only at its end; D is first (level 0)
    snap = g.snapshot()
    json.dumps(snap)
    assert snap["slot"]["primary"] == "D"
    levels = {j["id"]: (j["level"], j["f"]) for j in snap["jobs"]}
    assert levels == {"A": (1, 1), "B": (1, 1), "C": (1, 1), "D": (0, 1)}
    for _ in range(3):  # D, A, B; round ends: D, A, B fed back; round 4 visits C (f 1 -> 2)
        t += 1
        g.tick(t)
    snap = g.snapshot()
    # deepest level leftmost, walk order (f descending, then entry) inside a level
    assert snap["office"]["order"] == ["A", "B", "C", "D"]
    assert {j["id"]: (j["level"], j["f"]) for j in snap["jobs"]} == {
        "A": (2, 0), "B": (2, 0), "C": (1, 2), "D": (1, 0)}
    assert snap["slot"]["primary"] == "C"  # the walk starts at the highest level present


def test_fb_hand_worked():
    # quanta 1, 2: A(4) B(1) at 0. A[0,1) -> L1; B[1,2) done; A[2,4) -> stays L1; A[4,5) done
    run = run_gang("fb", "hypercube:2", [J("A", 0, 4), J("B", 0, 1)], policy_params={"quanta": (1, 2)})
    assert turnarounds(run) == {"A": 5, "B": 2}


def test_none_runs_to_completion_with_space_sharing():
    run = run_gang("none", "hypercube:2", [J("A", 0, 3, k=1), J("B", 0, 2, k=1), J("C", 0, 1, k=2)])
    # A and B share the machine (one row), C waits for the whole machine until 3
    assert turnarounds(run) == {"A": 3, "B": 2, "C": 4}
    assert run.metrics["preemptions"] == 0 and run.metrics["context_switches"] == 0


# --------------------------------------------------------------------------- section 6


def _workloads(k_max):
    job = st.tuples(st.integers(0, 12), st.integers(1, 8), st.integers(0, k_max))
    return st.lists(job, min_size=1, max_size=9)


@settings(max_examples=60, deadline=None)
@given(_workloads(2), st.sampled_from([0.5, 1.0, 2.0]), st.booleans())
def test_round_robin_is_multilevel_with_f0_and_n_infinite(spec, q, alternate):
    jobs = [Job(i, float(s), Request.cube(k), r * 0.5) for i, (s, r, k) in enumerate(spec)]
    common = {"mpl": 3, "local_sequential": False, "alternate": alternate}
    rr = run_gang("round-robin", "hypercube:2", jobs, trace=True, policy_params={"slot": q, **common})
    ml = run_gang("multilevel", "hypercube:2", jobs, trace=True, policy_params={
        "levels": [(q, INF)], "service_queue": INF, "insert_arrivals": False, **common})
    if not alternate:  # with alternates the office order (rearranged by multilevel) matters
        assert schedule(rr) == schedule(ml)
        assert turnarounds(rr) == turnarounds(ml)
    assert rr.metrics["completed"] == ml.metrics["completed"] == len(jobs)


@settings(max_examples=60, deadline=None)
@given(_workloads(2), st.lists(st.sampled_from([0.5, 1.0, 3.0]), min_size=1, max_size=4))
def test_fb_is_multilevel_with_n_1_and_all_f_1(spec, quanta):
    jobs = [Job(i, float(s), Request.cube(k), r * 0.5) for i, (s, r, k) in enumerate(spec)]
    common = {"mpl": 3, "local_sequential": False}
    fb = run_gang("fb", "hypercube:2", jobs, trace=True, policy_params={"quanta": quanta, **common})
    ml = run_gang("multilevel", "hypercube:2", jobs, trace=True, policy_params={
        "levels": [(q, 1) for q in quanta], "service_queue": 1, **common})
    assert schedule(fb) == schedule(ml)
    assert turnarounds(fb) == turnarounds(ml)


# --------------------------------------------------------------------------- equation (3)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.integers(2, 4), st.lists(st.integers(1, 6), min_size=4, max_size=30),
       st.sampled_from([0.5, 1.0, 2.0]))
def test_two_queue_turnaround_matches_equation_3(n, l, services, q):
    m = l * n
    t = sorted(s * q for s in services)  # increasing order of service time, slot-aligned
    jobs = [Job(i + 1, 0.0, Request.cube(2), x) for i, x in enumerate(t)]
    run = run_gang("two-queue", "hypercube:2", jobs, closed=m,
                   policy_params={"service_queue": n, "slot": q, "mpl": m})
    got = turnarounds(run)
    big_k = len(t)

    def T(i):
        return t[i - 1] if i >= 1 else 0.0

    checked = 0
    # the paper's general case i > M; the service queue must stay full while job i is in it,
    # so the last N-1 jobs (which see it drain) are out of the formula's scope
    for i in range(m + 1, big_k - n + 2):
        assert got[i] == n * sum(T(i - k * n) for k in range(l)), i
        checked += 1
    assert len(got) == big_k
    if big_k - n + 1 > m:
        assert checked > 0


# --------------------------------------------------------------------------- simulator model


def test_switch_cost_and_cache_reload():
    # q = 1, A(2.5) B(2), switch cost 0.5; first starts are free: A[0,1) +1; B[1,2) +1;
    # A[2,3) +0.5 (switch); B[3,4) +0.5; A[4,5) +0.5 -> 2; B[5,5.5) switch, +0.5 done 6;
    # A[6,6.5) switch, [6.5,7) +0.5 done 7
    run = run_gang("round-robin", "hypercube:2", [J("A", 0, 2.5), J("B", 0, 2)], switch_cost=0.5)
    assert turnarounds(run) == {"A": 7, "B": 6}
    assert run.metrics["context_switches"] == 5 and run.metrics["node_context_switches"] == 20
    # reload 1 unit at half speed: A[0,1) +1, B[1,2) done (first run), A resumed cold at 2:
    # [2,3) +0.5, then (no switch: A alone) full speed: done at 3.5
    run = run_gang("round-robin", "hypercube:2", [J("A", 0, 2), J("B", 0, 1)], reload_time=1.0, reload_rate=0.5)
    assert turnarounds(run) == {"A": 3.5, "B": 2}


def test_sequential_jobs_share_a_node_with_the_dispatched_task():
    # 1-cube parallel job P (4) on nodes 0,1 and a sequential job S (2) on node 0: each gets half
    # of node 0 until S is done at 4 (P has 2 left), then P runs alone: done at 6
    g = gang.create("none", "hypercube:1")
    run = simulate(g, [J("P", 0, 4, k=1), Job("S", 0, Request.processors(1), 2)])
    assert turnarounds(run) == {"P": 6, "S": 4}
    assert {r["id"]: r["kind"] for r in run.jobs} == {"P": "parallel", "S": "sequential"}


def test_alternate_scheduling_fills_idle_nodes():
    def first_slot_of(primary, alternate):
        g = gang.create("round-robin", "hypercube:2", mpl=3, alternate=alternate)
        g.arrive(J("A", 0, 9, k=1), 0)  # row 0, nodes 0 1
        g.arrive(J("B", 0, 9, k=2), 0)  # row 1, all nodes
        g.arrive(J("C", 0, 9, k=1), 0)  # row 0, nodes 2 3
        g.arrive(J("D", 0, 9, k=1), 0)  # row 2, nodes 0 1
        t = 0
        for _ in range(8):
            for d in g.tick(t):
                if isinstance(d, SlotSwitch) and d.primary == primary:
                    return d
            t += 1

    assert first_slot_of("A", False).running == {"A", "C"}  # Ousterhout: the whole row
    assert first_slot_of("D", False).running == {"D"}
    assert first_slot_of("D", True).running == {"D", "C"}  # C's nodes are idle in D's slot
    assert first_slot_of("B", True).running == {"B"}


def test_metrics_and_levels_are_reported():
    jobs = [J(i, i * 0.5, r) for i, r in enumerate([1, 20, 1, 15, 2, 1])]
    run = run_gang("multilevel", "hypercube:2", jobs, policy_params={"mpl": 6})
    m = run.metrics
    assert m["completed"] == 6 and m["jobs_per_makespan"] == pytest.approx(6 / m["makespan"])
    assert sum(m["jobs_per_level"].values()) == 6 and "0" in m["jobs_per_level"]
    assert m["mean_turnaround_short"] < m["mean_turnaround_long"]
    json.dumps(m)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("name, params", [
    ("round-robin", {"slot": 0}),
    ("round-robin", {"slot": -1}),
    ("round-robin", {"slot": INF}),
    ("round-robin", {"mpl": 0}),
    ("two-queue", {"service_queue": 0}),
    ("two-queue", {"service_queue": 2.5}),
    ("multilevel", {"levels": []}),
    ("multilevel", {"levels": [(1, 0)]}),
    ("multilevel", {"levels": [(0, 1)]}),
    ("multilevel", {"levels": [(1,)]}),
    ("multilevel", {"level_limits": [0]}),
    ("fb", {"quanta": []}),
    ("none", {"mpl": 2}),
    ("modified-two-queue", {"levels": [(1, 1)]}),
    ("round-robin", {"bogus": 1}),
])
def test_bad_parameters_are_clear_errors(name, params):
    with pytest.raises(GangError):
        gang.create(name, "hypercube:2", **params)


def test_bad_calls_change_nothing():
    with pytest.raises(UnknownPolicy, match="multilevel"):
        gang.create("nope", "hypercube:2")
    g = gang.create("multilevel", "hypercube:2")
    g.arrive(J(1, 0, 5), 0)
    before = json.dumps(g.snapshot())
    with pytest.raises(RequestError):
        g.arrive(J(2, 0, 5, k=3), 0)  # a 3-cube on a 2-cube
    with pytest.raises(JobError):
        g.arrive(J(1, 0, 5), 0)  # duplicate
    with pytest.raises(JobError):
        g.depart(99, 0)
    assert json.dumps(g.snapshot()) == before
    g.tick(1.0)
    with pytest.raises(JobError):
        g.tick(0.5)  # time went backwards
    with pytest.raises(GangError):
        run_gang("round-robin", "hypercube:2", [J(1, 0, 1)], switch_cost=-1)
    with pytest.raises(GangError):
        run_gang("round-robin", "hypercube:2", [J(1, 0, 1)], reload_rate=0)


def test_level_limits_shrink_the_service_queue_for_deep_levels():
    jobs = [J("A", 0, 3), J("B", 0, 3), J("C", 0, 3)]
    base = {"levels": ((1, 1), (1, INF)), "service_queue": 3, "insert_arrivals": False}
    # unlimited: rounds A B C three times: done at 7, 8, 9
    run = run_gang("multilevel", "hypercube:2", jobs, policy_params=base)
    assert turnarounds(run) == {"A": 7, "B": 8, "C": 9}
    # at most one level-1 job per round: after round 1 (A B C at level 0) the long jobs run
    # one at a time, longest attained first: A done 5, B 7, C 9
    run = run_gang("multilevel", "hypercube:2", jobs, policy_params={**base, "level_limits": [None, 1]})
    assert turnarounds(run) == {"A": 5, "B": 7, "C": 9}
