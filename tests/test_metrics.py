"""The metrics module (emulator.sim.metrics): the DESIGN formulas on hand-worked numbers, the
simulator's observer fed event by event, the gang summary, and the live monitor and the
experiments' points using the same formulas."""
from __future__ import annotations

import math
import random
from types import SimpleNamespace

import numpy as np
import pytest

from emulator.monitor.model import MonitorState
from emulator.sim import metrics as M
from emulator.sim.engine import ARRIVE, DEPART, REJECT, TIMER
from emulator.sim.simulator import Simulation
from emulator.sim.workloads import generate
from scheduler.decisions import Start
from scheduler.jobs import Job
from scheduler.stack import StackConfig, build
from scheduler.topology import Request


def test_formulas_on_hand_worked_numbers():
    # R = 12 over A = 4 allocations; C = 6 completions in T = 20; 8 nodes busy 96 node-units
    assert M.mean_queueing_delay(12.0, 4) == 3.0
    assert M.mean_queueing_delay(0.0, 0) == 0.0
    assert M.utilization(96.0, 8, 20.0) == pytest.approx(0.6)
    assert M.utilization(5.0, 8, 0.0) == 0.0
    assert M.throughput(6, 20.0) == pytest.approx(0.3)
    assert M.throughput(6, 0.0) == 0.0
    assert M.power(0.3, 3.0) == pytest.approx(0.1)
    assert M.power(0.3, 0.0) == math.inf  # jobs complete and none waited
    assert M.power(0.0, 0.0) == 0.0  # nothing completed
    assert M.measured_load(120.0, 8, 20.0) == pytest.approx(0.75)
    assert M.time_average(50.0, 20.0) == 2.5 and M.time_average(1.0, 0.0) == 0.0
    assert M.mean(7.0, 2) == 3.5 and M.mean(0.0, 0) == 0.0 and M.mean(0.0, 0, None) is None


def test_ls_ratio_and_per_size_means():
    # sizes 1 1 2 4 4, median 2: small = 1 1 2 (waits 1 1 1), large = 4 4 (waits 3 3) -> 3
    done = [(1, 1.0, 4.0), (1, 1.0, 6.0), (4, 3.0, 5.0), (4, 3.0, 9.0), (2, 1.0, 2.0)]
    assert M.ls_ratio(done) == pytest.approx(3.0)
    assert M.ls_ratio([(1, 1.0), (2, 2.0), (4, 3.0)]) == pytest.approx(3.0 / 1.5)  # pairs too
    assert math.isnan(M.ls_ratio([(1, 1.0)]))
    assert math.isnan(M.ls_ratio([(2, 1.0), (2, 5.0)]))  # nobody above the median
    assert M.ls_ratio([(1, 0.0), (4, 2.0)]) == math.inf
    assert M.ls_ratio([(1, 0.0), (4, 0.0)]) == 1.0
    tat_sum, per_size = M.per_size_means(*zip(*done))
    assert M.ls_ratio_of([1, 1, 4, 4, 2], [1.0, 1.0, 3.0, 3.0, 1.0]) == pytest.approx(3.0)
    assert tat_sum == 26.0
    assert per_size == {"1": {"completed": 2, "mean_wait": 1.0, "mean_turnaround": 5.0},
                        "2": {"completed": 1, "mean_wait": 1.0, "mean_turnaround": 2.0},
                        "4": {"completed": 2, "mean_wait": 3.0, "mean_turnaround": 7.0}}
    assert list(per_size) == ["1", "2", "4"]
    assert M.per_size_means([], [], []) == (0.0, {})


def test_per_job_sums_run_in_completion_order():
    """The per-size and L/S sums add the values one after the other in completion order, as
    a Python loop does (numpy's own sum adds pairwise: other rounding, other numbers)."""
    rng = random.Random(5)
    waits = [rng.random() * 1000 for _ in range(300)]
    tats = [w + 0.3 for w in waits]
    sizes = [1 if i % 3 else 4 for i in range(300)]

    def loop(xs):
        total = 0.0
        for x in xs:
            total += x
        return total

    small = [w for w, g in zip(waits, sizes) if g == 1]
    assert loop(small) != float(np.sum(small))  # the two orders do round differently here
    tat_sum, per_size = M.per_size_means(sizes, waits, tats)
    assert tat_sum == loop(tats)
    assert per_size["1"] == {"completed": 200, "mean_wait": loop(small) / 200,
                             "mean_turnaround": loop([t for t, g in zip(tats, sizes) if g == 1]) / 200}
    large = [w for w, g in zip(waits, sizes) if g == 4]
    assert M.ls_ratio_of(sizes, waits) == (loop(large) / 100) / (loop(small) / 200)


def test_job_records_and_schedule_formulas():
    recs = [M.JobRecord(1, 0.0, 2.0, 6.0, 4, 4, 0, 4.0), M.JobRecord(2, 1.0, 1.0, 3.0, 2, 2, 0, 2.0),
            M.JobRecord(3, 2.0, 6.0, 14.0, 4, 2, 1, 4.0)]
    assert [r.wait for r in recs] == [2.0, 0.0, 4.0]
    assert [r.turnaround for r in recs] == [6.0, 2.0, 12.0]
    assert M.busy_node_time(recs) == 4 * 4 + 2 * 2 + 2 * 8
    assert M.turnaround_by_asked(recs) == {2: 2.0, 4: 9.0}


def start(job, t, size=2, folds=0):
    a = SimpleNamespace(size=size, folds=folds, asked=job.request, nodes=frozenset(range(size)))
    return Start(job, a, t)


def test_the_simulator_observer_on_a_hand_fed_run():
    # 2-cube (4 nodes), T = 10. A (1-cube, runs 4) arrives at 0 and starts; B (2-cube, runs
    # 2) arrives at 1 and waits (nothing started: idle share 2/4); A leaves at 4 and B starts;
    # B leaves at 6.
    stack = build(StackConfig("hypercube:2", "buddy", "fcfs"))
    m = M.SimMetrics(stack.policy, until=10.0, samples=2, keep_records=True)
    a, b = Job("A", 0.0, Request.cube(1), 4.0), Job("B", 1.0, Request.cube(2), 2.0)
    sa, sb = start(a, 0.0, 2), start(b, 4.0, 4)
    running = stack.policy.running  # the observer reads the policy's running jobs
    running["A"] = sa
    assert m.observe(0.0, ARRIVE, a, [sa]) is False
    m.observe(1.0, ARRIVE, b, [])
    del running["A"]
    running["B"] = sb
    m.observe(4.0, DEPART, sa, [sb])
    del running["B"]
    m.observe(6.0, DEPART, sb, [])
    m.observe(7.0, TIMER, None, [])
    r = m.result(7.0, 5)
    assert (r["generated"], r["allocated"], r["completed"], r["events"]) == (2, 2, 2, 5)
    assert r["total_queueing_delay"] == 3.0 and r["mean_queueing_delay"] == 1.5
    assert r["utilization"] == pytest.approx((2 * 4 + 4 * 2) / (4 * 10))
    assert r["throughput"] == pytest.approx(0.2) and r["power"] == pytest.approx(0.2 / 1.5)
    assert r["measured_load"] == pytest.approx((4 * 2 + 2 * 4) / (4 * 10))
    assert r["mean_turnaround"] == pytest.approx((4 + 5) / 2)
    assert r["external_fragmentation"] == pytest.approx(0.5)  # one moment: B waited, 2 of 4 idle
    # jobs in system: 1 on [0,1), 2 on [1,4), 1 on [4,6) -> 9 over 10
    assert r["mean_jobs_in_system"] == pytest.approx(0.9)
    assert r["delay_over_time"] == [[5.0, 1.5], [10.0, 1.5]]
    assert r["per_size"] == {"2": {"completed": 1, "mean_wait": 0.0, "mean_turnaround": 4.0},
                             "4": {"completed": 1, "mean_wait": 3.0, "mean_turnaround": 5.0}}
    assert (r["waiting_at_end"], r["running_at_end"]) == (0, 0)
    assert [(x.id, x.start, x.end, x.given) for x in m.records] == [("A", 0.0, 4.0, 2), ("B", 4.0, 6.0, 4)]
    assert "rejected" not in r


def test_the_observer_counts_rejections_and_stops_at_the_completion_count():
    stack = build(StackConfig("hypercube:2", "buddy", "fcfs"))
    m = M.SimMetrics(stack.policy, completions=1)
    a = Job("A", 0.0, Request.cube(0), 1.0)
    m.observe(0.0, ARRIVE, a, [start(a, 0.0, 1)])
    m.observe(0.5, REJECT, Job("X", 0.5, Request.cube(3), 1.0), [])
    assert m.observe(1.0, DEPART, start(a, 0.0, 1), []) is True  # the N-th completion: stop
    r = m.result(1.0, 3)
    assert r["rejected"] == 1 and r["generated"] == 1 and r["observation_time"] == 1.0


def test_gang_metrics():
    fin = [{"runtime": 2.0, "turnaround": 4.0, "slowdown": 2.0, "finish": 4.0, "level": 0},
           {"runtime": 6.0, "turnaround": 9.0, "slowdown": 1.5, "finish": 10.0, "level": 1},
           {"runtime": 1.0, "turnaround": 1.0, "slowdown": 1.0, "finish": 5.0, "level": None}]
    counts = {"context_switches": 3, "node_context_switches": 12, "preemptions": 2, "slot_switches": 7}
    m = M.gang_metrics("rr", fin, counts, short_threshold=2.0, costs={"switch_cost": 0.5})
    assert m["completed"] == 3 and m["mean_turnaround"] == pytest.approx(14 / 3)
    assert m["mean_slowdown"] == pytest.approx(1.5)
    assert m["mean_turnaround_short"] == pytest.approx(2.5) and m["mean_turnaround_long"] == 9.0
    # completed / makespan has its own name: ``throughput`` is completed / observation time
    assert m["makespan"] == 10.0 and m["jobs_per_makespan"] == pytest.approx(0.3) and "throughput" not in m
    assert m["jobs_per_level"] == {"0": 1, "1": 1}
    assert m["context_switches"] == 3 and m["switch_cost"] == 0.5 and m["policy"] == "rr"
    empty = M.gang_metrics("rr", [], {}, short_threshold=0.0, costs={})
    assert empty["mean_turnaround"] is None and empty["jobs_per_makespan"] is None and empty["makespan"] == 0.0


def test_comm_metrics_name_their_slowdown_apart_from_the_gang_one():
    recs = [{"mean_delay_us": 30.0, "mean_contention_us": 5.0, "run_time": 6.0, "contention_free_run_time": 4.0,
             "slowdown": 1.5, "messages": 10},
            {"mean_delay_us": 20.0, "mean_contention_us": 0.0, "run_time": 2.0, "contention_free_run_time": 2.0,
             "slowdown": 1.0, "messages": 4}]
    m = M.comm_metrics(recs)
    assert m["mean_comm_slowdown"] == pytest.approx(1.25) and "mean_slowdown" not in m
    assert m["comm_completed"] == 2 and m["messages"] == 14 and m["mean_message_delay"] == pytest.approx(25.0)


def test_the_live_monitor_uses_the_same_formulas():
    s = MonitorState("hypercube:2", {"time_unit": 1.0})
    s.apply_jobs([{"id": 1, "state": "queued", "submit": 0.0, "runtime": 4.0}])
    s.apply_event("job", {"job": 1, "state": "running", "t": 0.0, "info": {"nodes": [0, 1], "attempt": 1}})
    s.apply_event("job", {"job": 1, "state": "completed", "t": 4.0, "info": {"nodes": [0, 1], "attempt": 1}})
    m = s.metrics(8.0)
    assert m["utilization"] == M.utilization(2 * 4.0, 4, 8.0)
    assert m["throughput"] == M.throughput(1, 8.0)
    assert m["mean_queueing_delay"] == 0.0
    assert m["power"] == M.power(m["throughput"], 0.0) == math.inf  # as in the simulator
    assert MonitorState("hypercube:2").metrics(1.0)["power"] is None  # nothing allocated yet


@pytest.mark.parametrize("scheduler,allocator", [("fcfs", "naive"), ("lazy", "buddy"), ("scan-up", "gray-code")])
def test_the_batched_observer_gives_the_numbers_of_the_called_one(scheduler, allocator):
    """The engine notes each event for the metrics (their ``batch`` hooks) when they are its
    only observer; with a second observer (here ``progress``) it calls ``observe``. Same
    numbers, same records, whether or not the run ends at a time."""
    for until in (None, 300.0):
        runs = []
        for progress in (None, lambda now, done: None):
            jobs = list(generate("hypercube:6", 0.85, "uniform", "hyperexp", seed=3, jobs=700))
            policy = build(StackConfig("hypercube:6", allocator, scheduler)).policy
            sim = Simulation(policy, jobs, until=until, keep_records=True, keep_nodes=True, samples=7,
                             progress=progress)
            res = sim.run()
            runs.append((res.metrics, [vars(r) for r in res.records]))
        assert runs[0] == runs[1]
        assert runs[0][0]["completed"] > 100
