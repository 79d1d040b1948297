"""The one virtual-time run (issue 29): a RunSpec -> emulator.sim.run.run -> a RunResult with one
metrics schema, for the work models fixed, gang and comm.

Hand-checked: a three-job log on a 1-cube (2 nodes) under FCFS and under the gang policy
``none``. Pinned: numbers the experiments' and the sweep's points gave before the one run (the
start commit ce0f099: ``_points.sim_point``, ``_points.joblist_point``, ``sweep.point.gang_point``,
``experiments.network.jobs.net_jobs_point``), under the renamed metrics where a name changed.
Bad specs are refused with an error naming what is wrong, before anything runs."""
from __future__ import annotations

import pytest

from emulator.experiments import _points
from emulator.sim.run import RunResult, run
from emulator.sim.spec import Observers, RunSpec, RunSpecError, StopRule, WorkloadSpec, default_size
from scheduler.stack import StackConfig

# id, submit, wait, run time, procs, cpu, mem, procs asked, then 10 unknowns (SWF 2.2)
LOG = "\n".join(f"{i} {s} -1 {r} {p} -1 -1 {p} -1 -1 1 1 1 -1 -1 -1 -1 -1"
                for i, s, r, p in ((1, 0, 4, 2), (2, 1, 2, 1), (3, 2, 1, 1))) + "\n"


@pytest.fixture
def log(tmp_path):
    p = tmp_path / "three.swf"
    p.write_text(LOG)
    return str(p)


def test_fixed_by_hand(log):
    """J1 (2 nodes, 4 units) runs 0-4; J2 (submitted at 1) and J3 (at 2) wait for it and start at
    4, J3 ends at 5, J2 at 6. Waits 0, 3, 2: M = 5/3; turnarounds 4, 5, 3; node-time 8 + 2 + 1
    = 11 of 2 x 6; throughput 3 completions over the window [0, 6]."""
    res = run(RunSpec(StackConfig("hypercube:1", scheduler="fcfs"), WorkloadSpec(trace=log), observe=Observers(records=True)))
    m = res.metrics
    assert isinstance(res, RunResult) and res.workload == {"trace": log, "jobs": 3}
    assert m["completed"] == 3 and m["mean_queueing_delay"] == pytest.approx(5 / 3)
    assert m["mean_turnaround"] == pytest.approx(4.0) and m["utilization"] == pytest.approx(11 / 12)
    assert m["throughput"] == pytest.approx(0.5) and m["window"]["ends_by"] == "drained"
    assert sorted((r.id, r.start, r.end) for r in res.records) == [(1, 0, 4), (2, 4, 6), (3, 4, 5)]
    assert res.stack.allocator == "buddy"  # the topology's, as built


def test_gang_by_hand(log):
    """The gang policy ``none`` (MPL 1) on the same log: one-node jobs share a node with the
    gang (emulator.sim.gang's work model: a gang runs at 1/(1+s), s sequential jobs on its
    busiest node; a sequential job at 1/(k+d)). J1 alone on [0, 1] (3 left); from 1 J2 shares
    node 0, from 2 J3 node 1: all at 1/2. J3 (1 unit) ends at 4; J2 has 1.5 - 1 = 0.5 left at 4,
    ends at 5; J1 has 2.5 - 1 - 0.5 = 1 left at 5, alone again, ends at 6. Turnarounds 6, 4, 2;
    slowdowns 1.5, 2, 2; completed / makespan has its own name."""
    res = run(RunSpec(StackConfig("hypercube:1", gang="none"), WorkloadSpec(trace=log), work="gang"))
    m = res.metrics
    assert sorted((j["id"], j["finish"]) for j in res.jobs) == [(1, 6.0), (2, 5.0), (3, 4.0)]
    assert m["completed"] == 3 and m["mean_turnaround"] == pytest.approx(4.0) and m["makespan"] == 6.0
    assert m["jobs_per_makespan"] == pytest.approx(0.5) and "throughput" not in m
    assert m["mean_slowdown"] == pytest.approx(5.5 / 3)


def test_fixed_points_give_the_numbers_of_before():
    p = {"topology": "hypercube:6", "allocator": "buddy", "scheduler": "lazy", "load": 0.6, "size": "uniform",
         "service": "hyperexp", "until": 400.0, "samples": 4, "per_size": True}
    out = _points.sim_point(p, 3)
    assert out["mean_queueing_delay"] == 8.424111564557403 and out["utilization"] == 0.517293301790204
    assert out["throughput"] == 0.72 and out["completed"] == 288.0 and out["ls_ratio"] == 1.4572113392972674
    assert out["M@200"] == 15.210943193596432 and out["tat@32"] == 14.90739824918835
    q = {"topology": "hypercube:5", "allocator": "buddy", "scheduler": "scan-up", "jobs": 60, "load": 0.7,
         "size": "uniform", "service": "uniform", "service_mean": 5.0, "demand": "dependent"}
    assert _points.joblist_point(q, 2) == {"completion_time": 104.89934451761646, "last_arrival": 97.86117831003484,
                                           "mean_queueing_delay": 2.909648119025672}


def test_a_point_without_workload_keys_takes_the_spec_defaults():
    full = {"topology": "hypercube:5", "scheduler": "fcfs", "load": 0.5, "until": 200.0,
            "size": "uniform", "service": "uniform", "service_mean": 5.0, "demand": "dependent", "allocator": "buddy"}
    bare = {"topology": "hypercube:5", "scheduler": "fcfs", "load": 0.5, "until": 200.0}
    assert _points.sim_point(bare, 4) == _points.sim_point(full, 4)
    assert default_size("mesh:8x8") == "processors" and default_size("hypercube:3") == "uniform"


def test_gang_point_gives_the_numbers_of_before_under_the_gang_axis():
    g = {"topology": "hypercube:4", "allocator": "buddy", "scheduler": None, "reduction": None, "gang": "multilevel",
         "dparams": {}, "load": 0.8, "size": "uniform", "service": "uniform", "service_mean": 5.0,
         "demand": "dependent", "completions": 80, "warmup": 0}
    out = _points.gang_point(g, 5)
    assert out["mean_turnaround"] == 17.49441391728093 and out["mean_slowdown"] == 4.642803725849317
    assert out["jobs_per_makespan"] == 0.6170577917908276 and out["makespan"] == 129.6474999008175  # was throughput
    assert (out["completed"], out["context_switches"], out["preemptions"]) == (80.0, 135.0, 145.0)


def test_comm_point_gives_the_numbers_of_net_jobs_before():
    """net-jobs' point (transpose, MTBS 0 or 250 us drawn per job) as a comm run."""
    n = {"topology": "mesh:16x16", "allocator": "naive", "scheduler": "fcfs", "load": 0.3, "size": "square-var",
         "service": "exponential", "size_params": {"max_side": 6}, "completions": 30, "warmup": 5,
         "comm": ["transpose:mtbs=0:iterations=5", "transpose:mtbs=250:iterations=5"]}
    out = _points.comm_point(n, 1)
    assert out["mean_message_delay"] == 47.36857831704546 and out["mean_message_contention"] == 22.1520631655
    assert out["mean_comm_slowdown"] == 2.617670247422817  # was mean_slowdown
    assert out["mean_turnaround"] == 8.641079875921431 and out["utilization"] == 0.6410555594149849
    assert out["delay@mtbs0"] == 60.14889984300001 and out["delay@mtbs250"] == 28.908113890666666


STACK = StackConfig("hypercube:4", scheduler="fcfs")
SYN = WorkloadSpec(load=0.5)


@pytest.mark.parametrize("make, match", [
    (lambda: RunSpec(STACK, SYN, StopRule(until=10), work="batch"), "unknown work model 'batch'.*fixed, gang, comm"),
    (lambda: RunSpec(STACK, SYN, StopRule(until=-5)), "until.*> 0, got -5"),
    (lambda: RunSpec(STACK, SYN, StopRule(until=float("inf"))), "until.*finite"),
    (lambda: RunSpec(STACK, SYN, StopRule(completions=10, warmup=-1)), "warmup.*>= 0"),
    (lambda: RunSpec(STACK, SYN, StopRule(completions=10, warmup=10)), "must exceed the warm-up"),
    (lambda: RunSpec(STACK, WorkloadSpec(load=-0.5), StopRule(until=10)), "load.*> 0"),
    (lambda: RunSpec(STACK, WorkloadSpec(load=0.5, service_mean=0), StopRule(until=10)), "service_mean"),
    (lambda: RunSpec(STACK, WorkloadSpec(load=0.5, demand="both"), StopRule(until=10)), "demand"),
    (lambda: RunSpec(STACK, WorkloadSpec(), StopRule(until=10)), "needs a load"),
    (lambda: RunSpec(STACK, SYN), "needs until.*or completions"),
    (lambda: RunSpec(STACK, SYN, StopRule(until=10), work="gang"), "gang policy needs the gang work model"),
    (lambda: RunSpec(StackConfig("hypercube:4", gang="round-robin"), SYN, StopRule(until=10)), "gang work model"),
    (lambda: RunSpec(StackConfig("hypercube:4", gang="fb"), SYN, StopRule(until=10), "gang", {"switch_cost": -1}),
     "switch_cost.*>= 0"),
    (lambda: RunSpec(StackConfig("hypercube:4", gang="fb"), SYN, StopRule(completions=10, warmup=2), "gang"),
     "warmup does not apply"),
    (lambda: RunSpec(STACK, SYN, StopRule(until=10), "fixed", {"switch_cost": 1}), "no option 'switch_cost'"),
    (lambda: RunSpec(STACK, SYN, StopRule(until=10), "comm"), "at least one profile"),
    (lambda: RunSpec(STACK, SYN, StopRule(until=10), "comm", {"comm": ["transpose:mtbs=0:iterations=2"],
                                                             "net_time_unit": -3}), "net_time_unit"),
])
def test_bad_specs_are_refused_with_a_clear_error(make, match):
    with pytest.raises(RunSpecError, match=match):
        make()


def test_run_takes_only_a_spec_and_unknown_names_fail_before_any_event():
    with pytest.raises(RunSpecError, match="takes a RunSpec"):
        run({"topology": "hypercube:4"})
    with pytest.raises(LookupError, match="unknown allocator 'nope'"):
        run(RunSpec(StackConfig("hypercube:4", "nope", "fcfs"), SYN, StopRule(until=10)))


def test_mcemu_simulate_runs_gang_and_fixed_through_the_one_run(capsys, log):
    import json

    from emulator.cli import main

    common = ["--topology", "hypercube:1", "--trace", log, "--json"]
    assert main(["simulate", "--gang", "round-robin", *common]) == 0  # (--gang none: no time sharing)
    gang = json.loads(capsys.readouterr().out)
    spec = RunSpec(StackConfig("hypercube:1", gang="round-robin"), WorkloadSpec(trace=log), work="gang")
    assert gang["gang"] == "round-robin" and gang["metrics"] == json.loads(json.dumps(run(spec).metrics))
    assert main(["simulate", "--scheduler", "fcfs", *common]) == 0
    fixed = json.loads(capsys.readouterr().out)
    assert fixed["scheduler"] == "fcfs" and fixed["metrics"]["mean_queueing_delay"] == pytest.approx(5 / 3)
    assert fixed["workload"] == gang["workload"] == {"trace": log, "jobs": 3}


def test_mcemu_workload_takes_the_run_specs_defaults():
    """`mcemu workload` names no default of its own: on a hypercube its stream is the generator's
    with the spec's defaults spelled out, and on a mesh (where a hypercube's `uniform` sizes do
    not apply) it streams processor counts instead of failing."""
    from emulator.cli.jobs import workload_jobs
    from emulator.sim import workloads
    from emulator.sim.spec import WorkloadSpec

    spelled = [j.request.to_dict() for j in workloads.generate(
        "hypercube:4", 0.5, "uniform", WorkloadSpec.service, service_mean=WorkloadSpec.service_mean, seed=3, jobs=8)]
    assert [j["request"] for j in workload_jobs("hypercube:4", 8, 0.5, seed=3)] == spelled
    mesh = workload_jobs("mesh:4x4", 8, 0.5, seed=3)
    assert len(mesh) == 8 and all(set(j["request"]) == {"nodes"} for j in mesh), mesh
