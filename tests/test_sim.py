"""The plain simulator (the engine with the fixed-runtime work model): hand-worked FCFS
schedules, tie-breaking, determinism, conservation, Little's law, the metric definitions of
the lazy paper."""
from __future__ import annotations

import random

import pytest

from emulator.sim.simulator import Simulation, SimulationError, ls_ratio, simulate
from scheduler import allocators
from scheduler.disciplines.fcfs import FCFS
from scheduler.jobs import Job
from scheduler.stack import StackConfig, StackError, build
from scheduler.topology import Request, parse_topology


def stack_policy(topology, allocator, scheduler, **kw):
    """The policy a front end builds (scheduler.stack)."""
    return build(StackConfig(topology, allocator, scheduler, **kw)).policy


def J(i, t, k, r):
    return Job(i, t, Request.cube(k), r)


def starts_of(topology, alloc, sched, jobs, **kw):
    log = []
    d = stack_policy(topology, alloc, sched)
    res = Simulation(d, jobs, trace=lambda ev, t, s: log.append((ev, t, s.job.id)), **kw).run()
    return res, [(t, j) for ev, t, j in log if ev == "start"], [(t, j) for ev, t, j in log if ev == "depart"]


def test_fcfs_blocks_small_job_behind_large_one():
    # 3-cube: job 0 takes 2 nodes (1-cube) for 10; job 1 wants the whole 3-cube; job 2 a 1-cube
    # would fit at t=2 but waits behind job 1 (blocking FCFS), so it starts only at t=20.
    jobs = [J(0, 0, 1, 10), J(1, 1, 3, 10), J(2, 2, 1, 1)]
    res, starts, departs = starts_of("hypercube:3", "naive", "fcfs", jobs)
    assert starts == [(0, 0), (10, 1), (20, 2)]
    assert departs == [(10, 0), (20, 1), (21, 2)]
    m = res.metrics
    assert m["completed"] == m["generated"] == m["allocated"] == 3
    assert m["mean_queueing_delay"] == pytest.approx((0 + 9 + 18) / 3)
    assert m["mean_turnaround"] == pytest.approx((10 + 19 + 19) / 3)
    # busy node-time 2*10 + 8*10 + 2*1 over 8 nodes x 21
    assert m["utilization"] == pytest.approx(102 / (8 * 21))


def test_departure_before_arrival_at_equal_times():
    # the 3-cube frees at t=5 exactly when job 1 arrives: it must start at once.
    jobs = [J(0, 0, 3, 5), J(1, 5, 3, 1)]
    _, starts, _ = starts_of("hypercube:3", "naive", "fcfs", jobs)
    assert starts == [(0, 0), (5, 1)]


def test_observation_time_window_and_metrics():
    # T = 10: job 1 (arrives 4, waits until 8 for job 0) is allocated; job 2 arrives after T.
    jobs = [J(0, 0, 2, 8), J(1, 4, 2, 6), J(2, 11, 0, 1)]
    res, starts, _ = starts_of("hypercube:2", "naive", "fcfs", jobs, until=10)
    m = res.metrics
    assert (m["generated"], m["allocated"], m["completed"]) == (2, 2, 1)
    assert m["mean_queueing_delay"] == pytest.approx(4 / 2)
    assert m["utilization"] == pytest.approx((4 * 8 + 4 * 2) / (4 * 10))
    assert m["throughput"] == pytest.approx(1 / 10)
    assert m["power"] == pytest.approx(0.1 / 2)
    assert m["measured_load"] == pytest.approx((8 * 4 + 6 * 4) / (4 * 10))


def poisson(n, rate, maxk, seed):
    r = random.Random(seed)
    t = 0.0
    for i in range(n):
        t += r.expovariate(rate)
        yield Job(i, t, Request.cube(r.randrange(0, maxk + 1)), r.uniform(0.1, 9.9))


def test_seeded_runs_are_identical_and_conserve_jobs():
    a = simulate("hypercube:6", "naive", "fcfs", poisson(3000, 1.0, 5, 7), until=2000).metrics
    b = simulate("hypercube:6", "naive", "fcfs", poisson(3000, 1.0, 5, 7), until=2000).metrics
    assert a == b
    assert a["generated"] == a["completed"] + a["running_at_end"] + a["waiting_at_end"]
    assert 0 < a["utilization"] <= 1
    c = simulate("hypercube:6", "naive", "fcfs", poisson(3000, 1.0, 5, 8), until=2000).metrics
    assert c != a


def test_littles_law_on_a_long_run():
    m = simulate("hypercube:6", "naive", "fcfs", poisson(40000, 1.2, 5, 3), until=30000).metrics
    lam = m["generated"] / m["observation_time"]
    assert m["mean_jobs_in_system"] == pytest.approx(lam * m["mean_turnaround"], rel=0.05)


def test_completions_mode_discards_warmup():
    m = simulate("hypercube:5", "naive", "fcfs", poisson(5000, 1.0, 4, 2), completions=1100,
                 warmup=100).metrics
    assert m["completed"] == 1000  # C counts the completions in the window, as every metric
    assert m["counted_completions"] == 1000
    assert m["window"]["warmup_completions"] == 100 and m["window"]["ends_by"] == "completions"
    assert 0 < m["utilization"] <= 1


def test_job_too_large_is_a_clear_error_naming_it():
    with pytest.raises(SimulationError, match="job 1"):
        simulate("hypercube:3", "naive", "fcfs", [J(0, 0, 1, 1), J(1, 1, 4, 1)])


def test_bad_run_parameters():
    d = stack_policy("hypercube:3", "naive", "fcfs")
    with pytest.raises(SimulationError):
        Simulation(d, [], until=-1)
    with pytest.raises(SimulationError):
        Simulation(d, [], completions=5, warmup=5)


def test_ls_ratio():
    assert ls_ratio([(1, 1.0), (1, 1.0), (4, 3.0), (4, 3.0), (2, 1.0)]) == pytest.approx(3.0)


def test_run_to_completion_ends_at_the_last_departure_despite_a_pending_timer():
    # a discipline that always keeps a far timer (as lazy's starvation threshold can) must
    # not stretch a run-to-completion past its last job
    class FarTimer(FCFS):
        def next_wakeup(self):
            return self.now + 1000.0

    alloc = allocators.create("buddy", "hypercube:3")
    jobs = [J(i, i * 0.5, i % 3, 2.0) for i in range(20)]
    res = Simulation(FarTimer(alloc.topology, alloc), jobs, keep_records=True).run()
    last = max(r.end for r in res.records)
    assert res.metrics["completed"] == 20
    assert res.metrics["observation_time"] == pytest.approx(last)


# ---------------------------------------------------------------- review fixes (metric definitions)


def test_measured_load_counts_the_rounded_cube_and_not_rejected_jobs():
    # lazy 4.2: S/(2^n T) differs from the input rate "due to round off effect while limiting the
    # job size to cubic": 3 processors on buddy run on a 2-cube, 4 nodes x 10 = 40 node-time.
    # A job that can never fit (a 5-cube on a 3-cube) is not generated and adds no demand.
    jobs = [Job(0, 0, Request.processors(3), 10), Job(1, 1, Request.cube(5), 10)]
    res = simulate("hypercube:3", "buddy", "fcfs", jobs, until=10, on_reject="skip")
    m = res.metrics
    assert m["generated"] == 1 and m["rejected"] == 1
    assert m["total_service_demand"] == pytest.approx(40)
    assert m["measured_load"] == pytest.approx(40 / (8 * 10)) == pytest.approx(m["utilization"])


def test_warmup_allocations_are_left_out_of_the_mean_queueing_delay():
    # 2-cube, each job takes it all: job 0 waits 0 and ends at 5 (the one warm-up completion);
    # job 1 waits 5-1 = 4, job 2 waits 10-2 = 8. M over the counted jobs: (4 + 8) / 2.
    jobs = [J(0, 0, 2, 5), J(1, 1, 2, 5), J(2, 2, 2, 1)]
    m = simulate("hypercube:2", "naive", "fcfs", jobs, completions=3, warmup=1).metrics
    assert m["counted_completions"] == 2
    assert m["mean_queueing_delay"] == pytest.approx(6)
    assert m["mean_turnaround"] == pytest.approx((9 + 9) / 2)
    # window [5, 11]: 2 counted completions, the machine busy throughout
    assert m["throughput"] == pytest.approx(2 / 6)
    assert m["utilization"] == pytest.approx(1.0)


def test_time_and_warmup_measure_every_metric_over_one_window():
    # 2-cube, each job takes it all, T = 20, one warm-up completion. Job 0 runs 0-5 (the
    # warm-up), job 1 5-10 (waited 4), job 2 10-11 (waited 8). The window is [5, 20]: in it
    # jobs 1 and 2 are allocated and complete, the machine is busy 5 + 1 units, nothing
    # arrives, jobs in system 2 on [5, 10) and 1 on [10, 11).
    jobs = [J(0, 0, 2, 5), J(1, 1, 2, 5), J(2, 2, 2, 1)]
    m = simulate("hypercube:2", "naive", "fcfs", jobs, until=20, warmup=1).metrics
    assert m["window"] == {"start": 5.0, "end": 20.0, "warmup_completions": 1, "ends_by": "time"}
    assert m["observation_time"] == 15.0
    assert (m["generated"], m["allocated"], m["completed"]) == (0, 2, 2)
    assert m["total_queueing_delay"] == 12.0 and m["mean_queueing_delay"] == pytest.approx(6)
    assert m["utilization"] == pytest.approx(4 * 6 / (4 * 15))  # not (4 * 11) / (4 * 20)
    assert m["throughput"] == pytest.approx(2 / 15)  # not 3 / 20
    assert m["power"] == pytest.approx((2 / 15) / 6)
    assert m["mean_turnaround"] == pytest.approx((9 + 9) / 2)
    assert m["measured_load"] == 0.0 and m["total_service_demand"] == 0.0
    assert m["mean_jobs_in_system"] == pytest.approx((2 * 5 + 1) / 15)
    # without a warm-up the window is [0, T]: U, X and M over the whole run
    m0 = simulate("hypercube:2", "naive", "fcfs", jobs, until=20).metrics
    assert m0["window"] == {"start": 0.0, "end": 20.0, "warmup_completions": 0, "ends_by": "time"}
    assert m0["utilization"] == pytest.approx(44 / 80) and m0["throughput"] == pytest.approx(3 / 20)
    assert m0["mean_queueing_delay"] == pytest.approx(12 / 3) and m0["generated"] == 3


def test_a_warmup_longer_than_the_run_counts_nothing():
    jobs = [J(0, 0, 2, 5), J(1, 1, 2, 5)]
    m = simulate("hypercube:2", "naive", "fcfs", jobs, until=20, warmup=5).metrics
    assert m["window"]["start"] == m["window"]["end"] == 20.0 and m["observation_time"] == 0.0
    assert (m["completed"], m["allocated"], m["utilization"], m["throughput"]) == (0, 0, 0.0, 0.0)


def test_a_count_that_ends_the_run_before_T_measures_up_to_the_stop():
    # with both T and N the run stops at the N-th completion (t=2): the busy 2-cube is not
    # extrapolated to T=100.
    jobs = [J(0, 0, 2, 2), J(1, 50, 2, 2)]
    m = simulate("hypercube:2", "naive", "fcfs", jobs, until=100, completions=1).metrics
    assert m["observation_time"] == pytest.approx(2)
    assert m["utilization"] == pytest.approx(1.0)
    assert m["throughput"] == pytest.approx(1 / 2)


def test_a_withdrawn_timer_does_not_fire():
    # The daemon asks next_wakeup() afresh and ticks only when it names a time; the simulator
    # must agree: a timer the discipline withdraws (None) is not fired later.
    class Withdrawing(FCFS):
        def __init__(self, *a):
            super().__init__(*a)
            self.ticks = []

        def arrive(self, job, now):
            self.arrivals = getattr(self, "arrivals", 0) + 1
            return super().arrive(job, now)

        def next_wakeup(self):  # asks for t=3 after the first arrival, withdraws at the second
            return 3.0 if self.arrivals == 1 else None

        def tick(self, now):
            self.ticks.append(now)
            return super().tick(now)

    topo = parse_topology("hypercube:2")
    d = Withdrawing(topo, allocators.create("naive", topo))
    sim = Simulation(d, [J(0, 0, 0, 10), J(1, 1, 0, 10)])
    sim.run()
    assert d.ticks == []
    assert sim.events == 4  # two arrivals, two departures


def test_an_unknown_discipline_parameter_is_a_clear_error():
    with pytest.raises(StackError, match="scheduler 'fcfs'.*no parameters"):
        stack_policy("hypercube:3", "buddy", "fcfs", params={"foo": 1})
    with pytest.raises(StackError, match="scheduler 'fcfs'.*no parameters"):
        simulate("hypercube:3", "buddy", "fcfs", [], params={"foo": 1})
