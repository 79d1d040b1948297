"""Held jobs (issue 19): a job that cannot be allocated while down nodes are out is set aside
with a reason instead of blocking smaller jobs, and comes back when a node does.

The minimal stall case, worked by hand: a 3-cube, buddy, lazy (the live default, dynamic
threshold), nodes 1 and 5 down. The buddy system's 2-cubes are 0** (nodes 0-3) and 1**
(4-7); each has a down node, so no 2-cube can be allocated though 6 nodes are up. Before the
fix the 2-cube (the oldest job) reached lazy's threshold (d_t = 0 after the first 1-node job
started at once: threshold 0) and stop_alloc waited for it for ever: three 1-node jobs waited
on 6 idle nodes. Now it is held; the 1-node jobs take the lowest healthy 0-cubes, 0, 2, 3, 4
(the quarantine skips 1), each at its arrival; with node 1 back, 0** is whole again and the
2-cube starts there at once.
"""
from __future__ import annotations

from scheduler import allocators, disciplines, quarantine
from scheduler.jobs import Job
from scheduler.stack import StackConfig, build
from scheduler.topology import Request, parse_topology

REASON = "ReqNodeNotAvail: no 2-cube without a down node (down: 1, 5)"


def J(i, t, k, runtime):
    return Job(i, t, Request.cube(k), runtime)


def started(decisions):
    return [(s.job.id, s.nodes) for s in decisions]


def minimal_case(scheduler="lazy"):
    stack = build(StackConfig("hypercube:3", "buddy", scheduler, driver="live"))
    assert stack.mark_down(1, 0.0) == [] and stack.mark_down(5, 0.0) == []
    p = stack.policy
    assert p.arrive(J(1, 0.0, 2, 10), 0.0) == []
    starts = []
    for i, t in zip(range(2, 6), (0.1, 0.2, 0.3, 0.4)):
        s = started(p.arrive(J(i, t, 0, 50), t))
        assert len(s) == 1 and s[0][0] == i, f"1-node job {i} did not start at its arrival"
        starts += s
    return stack, p, starts


def test_minimal_stall_case_lazy_runs_the_small_jobs_and_holds_the_2_cube():
    stack, p, starts = minimal_case("lazy")
    assert starts == [(2, (0,)), (3, (2,)), (4, (3,)), (5, (4,))]
    assert {j: r for j, (_, r) in p.held().items()} == {1: REASON}
    snap = p.snapshot()
    assert snap["stop_alloc"] is False and snap["priority_job"] is None
    assert snap["held"] == [{"id": 1, "request": "2-cube", "reason": REASON}]
    assert [j.id for j in p.waiting()] == []
    # the 1-node jobs leave: 6 idle nodes, still no 2-cube without node 1 or 5
    for i in range(2, 6):
        assert p.depart(i, 50.0 + i) == []
    assert p.tick(200.0) == [] and list(p.held()) == [1]
    # node 5 back: 1** is whole (0** still has node 1): the 2-cube starts there at once
    assert started(stack.mark_up(5, 201.0)) == [(1, (4, 5, 6, 7))]
    assert p.held() == {} and "held" not in p.snapshot()


def test_held_job_returns_to_the_queue_when_a_node_comes_back_and_waits_for_busy_nodes():
    stack, p, _ = minimal_case("lazy")
    # node 1 back while 0, 2, 3, 4 are busy: no longer held, waiting for its nodes
    assert stack.mark_up(1, 1.0) == []
    assert p.held() == {} and [j.id for j in p.waiting()] == [1]
    for i in (2, 3):
        assert p.depart(i, 2.0) == []
    assert started(p.depart(4, 2.0)) == [(1, (0, 1, 2, 3))]


def test_minimal_stall_case_fcfs_head_held_does_not_block():
    stack, p, starts = minimal_case("fcfs")
    assert starts == [(2, (0,)), (3, (2,)), (4, (3,)), (5, (4,))]
    assert "blocked" not in p.snapshot() and list(p.held()) == [1]
    # it goes back to its place at the head, ahead of a later arrival
    assert p.arrive(J(6, 1.0, 2, 5), 1.0) == []  # held too
    assert started(p.arrive(J(7, 1.0, 1, 5), 1.0)) == [(7, (6, 7))]  # 11*: no down node
    assert list(p.held()) == [1, 6]
    # node 1 back: 0** could fit (busy now): both wait, in arrival order at the head
    assert stack.mark_up(1, 2.0) == []
    assert p.held() == {} and [j.id for j in p.waiting()] == [1, 6]


def test_a_waiting_job_is_held_when_its_nodes_go_down_and_the_priority_job_lets_go():
    # lazy, threshold 0: the whole machine waits for 00* (job 1) and is the priority job
    stack = build(StackConfig("hypercube:3", "buddy", "lazy", params={"threshold": 0}, driver="live"))
    p = stack.policy
    assert started(p.arrive(J(1, 0.0, 1, 10), 0.0)) == [(1, (0, 1))]
    assert p.arrive(J(2, 0.0, 3, 10), 0.0) == []
    assert p.snapshot()["priority_job"] == 2
    # node 5 goes down: the 3-cube cannot fit until it is back; held, stop_alloc let go
    assert stack.mark_down(5, 0.5) == []
    assert list(p.held()) == [2] and p.snapshot()["stop_alloc"] is False
    # so a 1-node job is not stopped behind it
    assert started(p.arrive(J(3, 1.0, 0, 10), 1.0)) == [(3, (2,))]
    # node 5 back: the 3-cube waits for its nodes again (the priority job once more)
    assert stack.mark_up(5, 2.0) == [] and p.held() == {}
    assert p.snapshot()["priority_job"] == 2
    assert p.depart(1, 3.0) == []
    assert started(p.depart(3, 4.0)) == [(2, tuple(range(8)))]


def test_cancel_of_a_held_job():
    stack, p, _ = minimal_case("lazy")
    assert p.cancel(1, 1.0) == [] and p.held() == {}
    assert stack.mark_up(1, 2.0) == [] and stack.mark_up(5, 2.0) == []
    assert "arrive" not in p.__dict__  # nothing down, nothing held: the plain methods again


def test_static_partitions_hold_when_every_partition_of_the_size_has_a_down_node():
    t = parse_topology("hypercube:3")
    q = quarantine.wrap(allocators.create("buddy", t))
    d = disciplines.create("static", t, q)
    q.mark_down(0)  # S_2 = 0** is the only 2-cube partition
    assert d.arrive(J(1, 0, 2, 5), 0) == [] and list(d.held()) == [1]
    assert [s.job.id for s in d.arrive(J(2, 0, 1, 5), 0)] == [2]  # S_1 = 10*
    q.mark_up(0)
    assert [s.job.id for s in d.retry(1)] == [1]


def test_reduction_holds_only_when_no_fold_fits():
    stack = build(StackConfig("hypercube:3", "buddy", "fcfs", reduction="rsr:1", driver="live"))
    for n in (1, 5):
        stack.mark_down(n, 0.0)
    p = stack.policy
    # a 2-cube folds once to a 1-cube, which fits (2*, 6*, ...): not held, started folded
    (s,) = p.arrive(J(1, 0.0, 2, 4), 0.0)
    assert s.allocation.folds == 1 and p.held() == {}
    stack2 = build(StackConfig("hypercube:3", "buddy", "fcfs", reduction="rsr:1", driver="live"))
    for n in (0, 2, 4, 6):  # every 1-cube has a down node: a 2-cube cannot fold into one
        stack2.mark_down(n, 0.0)
    assert stack2.policy.arrive(J(1, 0.0, 2, 4), 0.0) == [] and list(stack2.policy.held()) == [1]


def test_no_down_node_no_wrapper():
    stack = build(StackConfig("hypercube:3", "buddy", "lazy"))
    assert not any(n in stack.policy.__dict__ for n in ("arrive", "depart", "cancel", "tick", "snapshot"))


def test_a_gang_policy_never_blocks_on_down_nodes_and_its_waiting_job_shows_the_reason():
    for gang in ("round-robin", "multilevel"):
        stack = build(StackConfig("hypercube:3", "buddy", None, gang=gang, driver="live"))
        stack.mark_down(1, 0.0)
        stack.mark_down(5, 0.0)
        p = stack.policy
        big = J(1, 0.0, 2, 10)
        assert not [d for d in p.arrive(big, 0.0) if getattr(d, "job", None) is big]
        for i, t in zip(range(2, 6), (0.1, 0.2, 0.3, 0.4)):
            assert [d.job.id for d in p.arrive(J(i, t, 0, 50), t) if hasattr(d, "nodes")] == [i], gang
        assert stack.held([big]) == {1: REASON}
        assert stack.held([J(9, 0.5, 1, 5)]) == {}  # a 1-cube fits beside the down nodes
        out = stack.mark_up(1, 1.0)
        assert stack.held([big]) == {}
        assert any(getattr(d, "job", None) is big for d in out), (gang, out)
