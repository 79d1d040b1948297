"""Jobs that communicate (our extension, NETWORK.md 3.3): the work model on the engine, the
chapter-6 rules as allocators, the ``mcemu simulate --comm`` front end."""
from __future__ import annotations

import json

import pytest

from emulator import cli
from emulator.sim.comm_work import CommWork, comm_jobs
from emulator.sim.engine import Engine
from emulator.sim.simulator import Simulation
from emulator.sim.workloads import Workload
from scheduler import allocators
from scheduler.allocators.ch6_rules import MultipleBuddyCh6
from scheduler.comm_profile import CommProfile, CommProfileError, CommRequest, communicating, logical_shape, parse_comm
from scheduler.jobs import Job
from scheduler.stack import StackConfig, build
from scheduler.topology import Request, parse_topology

L, T = 500, 0.05


def run(topology, allocator, jobs, *, unit_us=1.0, seed=0, **kw):
    topo = parse_topology(topology)
    model = CommWork(topo, unit_us=unit_us, seed=seed)
    policy = build(StackConfig(topo, allocator, "fcfs")).policy
    return Simulation(policy, jobs, model=model, **kw).run()


def job(i, submit, w, h, comm, topology="mesh:8x8", runtime=1.0):
    return communicating(Job(i, submit, Request.submesh(w, h), runtime), comm, parse_topology(topology))


# ------------------------------------------------------------------ the work model


@pytest.mark.parametrize("allocator", ["first-fit", "naive", "frame-sliding"])
def test_one_path_alone_runs_k_times_its_contention_free_latency(allocator):
    # a 5x1 job whose one path goes from rank 0 to rank 4: d = 4 hops on a row, MTBS 0, K = 7
    K, d = 7, 4
    comm = CommProfile("pairs", 0, K, (("paths", "0-4"),))
    flits = K * (d + L - 1)
    # one job time unit = one flit time: the run time is the flit count exactly
    r = run("mesh:8x8", allocator, [job(1, 0.0, 5, 1, comm)], unit_us=T).comm[0]
    assert (r["start"], r["end"], r["run_time"]) == (0.0, flits, flits)
    # one unit = 1 us: K (d + L - 1) T_t, i.e. the flit count / 20 flit times per us
    res = run("mesh:8x8", allocator, [job(1, 0.0, 5, 1, comm)], unit_us=1.0)
    r = res.comm[0]
    assert r["run_time"] == flits / 20 == pytest.approx(K * (d + L - 1) * T)
    assert r["mean_delay_us"] == round((d + L - 1) * T, 9) == 25.15 and r["mean_contention_us"] == 0
    assert r["slowdown"] == 1.0 and r["estimate"] == pytest.approx(r["run_time"])
    assert res.metrics["mean_turnaround"] == r["run_time"] and res.metrics["messages"] == K


def test_contiguous_and_scattered_placement_change_the_run_time():
    comm = CommProfile("transpose", 0, 5)
    times = {a: run("mesh:8x8", a, [job(1, 0.0, 4, 4, comm)]).comm[0] for a in ("first-fit", "naive")}
    # naive lays the logical 4x4 along two 8-node rows: longer, more overlapping transpose paths
    assert times["naive"]["run_time"] > times["first-fit"]["run_time"]
    assert times["naive"]["mean_delay_us"] > times["first-fit"]["mean_delay_us"]


def test_two_jobs_share_one_network():
    # naive on an 8x8 mesh: a 2x2 job on nodes 0..3, a 4x4 job on 4..19, a 2x2 job on 20..23.
    # The 4x4 job with silent neighbours, then with neighbours that communicate: the same nodes,
    # but its paths along row 0 now meet theirs
    comm, busy = CommProfile("transpose", 0, 5), CommProfile("transpose", 0, 200)

    def plain(i):
        return Job(i, 0.0, Request.submesh(2, 2), 1000.0)

    alone = run("mesh:8x8", "naive", [plain(1), job(2, 0.0, 4, 4, comm), plain(3)]).comm
    both = run("mesh:8x8", "naive", [job(1, 0.0, 2, 2, busy), job(2, 0.0, 4, 4, comm), job(3, 0.0, 2, 2, busy)]).comm
    second = next(r for r in both if r["id"] == 2)
    assert [r["id"] for r in alone] == [2]
    assert second["run_time"] > alone[0]["run_time"] and second["slowdown"] > alone[0]["slowdown"]


def test_jobs_without_communication_keep_todays_numbers():
    jobs = Workload.build("mesh:16x16", 0.6, size_dist="processors", seed=4).job_list(300)
    topo = parse_topology("mesh:16x16")
    plain = Simulation(build(StackConfig(topo, "first-fit", "fcfs")).policy, jobs, completions=200, warmup=20).run()
    modelled = run(topo, "first-fit", jobs, completions=200, warmup=20)
    for k, v in plain.metrics.items():
        assert modelled.metrics[k] == v, k
    assert modelled.metrics["comm_completed"] == 0 and modelled.metrics["silent_jobs"] > 0


def _mixed(seed, allocator="multiple-buddy", n=60):
    profiles = [parse_comm("transpose:mtbs=0:iterations=4"), parse_comm("transpose:mtbs=100:iterations=4")]
    wl = Workload.build("mesh:16x16", 0.5, size_dist="square-var", seed=seed, size_params={"max_side": 6})
    return run("mesh:16x16", allocator, comm_jobs(wl.jobs(), profiles, "mesh:16x16", seed), unit_us=150.0,
               seed=seed, completions=n, warmup=5)


def test_a_seeded_run_is_a_pure_function_of_its_inputs():
    a, b, c = _mixed(3), _mixed(3), _mixed(4)
    assert a.comm == b.comm and a.metrics == b.metrics
    assert a.comm != c.comm
    assert len(a.comm) == a.metrics["comm_completed"] > 0


def test_the_network_result_does_not_depend_on_how_the_engine_cuts_time():
    profiles = [parse_comm("transpose:mtbs=0:iterations=3"), parse_comm("stencil:mtbs=20:iterations=6")]
    topo = parse_topology("mesh:16x16")
    wl = Workload.build(topo, 0.7, size_dist="square-var", seed=2, size_params={"max_side": 5})
    jobs = list(comm_jobs(wl.job_list(40), profiles, topo, 2))

    def engine_run(stops):
        model = CommWork(topo, unit_us=100.0, seed=2)
        e = Engine(build(StackConfig(topo, "naive", "fcfs")).policy, jobs, model=model, observers=[model])
        for t in stops:
            e.run(t)
        e.run()
        return model.finished, e.now

    whole = engine_run([])
    # stops every 0.1 units (a run lasts about 40): many fall while the network runs ahead of
    # the engine's next event, so a resumed run must ask the model again
    assert engine_run([0.3, 1.0, 1.05, 4.0, 9.5]) == whole
    assert engine_run([k / 10 for k in range(1, 420)]) == whole
    assert len(whole[0]) == sum(1 for j in jobs if j.request.comm.pairs(j.request.a, j.request.b))


def test_a_hypercube_works_too():
    comm = CommProfile("ring", 0, 3)
    topo = parse_topology("hypercube:4")
    r = run(topo, "buddy", [communicating(Job(1, 0.0, Request.cube(2), 1.0), comm, topo)]).comm[0]
    assert r["paths"] == 4 and r["run_time"] > 0


def test_a_folded_allocation_is_refused():
    topo = parse_topology("mesh:8x8")
    model = CommWork(topo, unit_us=1.0)
    policy = build(StackConfig(topo, "first-fit", "fcfs", reduction="limit:greedy")).policy
    big = job(2, 0.0, 8, 8, CommProfile("transpose", 0, 1))
    with pytest.raises(ValueError, match="folded"):
        Simulation(policy, [job(1, 0.0, 2, 2, CommProfile("transpose", 0, 50)), big], model=model).run()


# ------------------------------------------------------------------ the chapter-6 rules


def creq(w, h, mtbs, pattern="transpose", k=1):
    return CommRequest("submesh", w, h, CommProfile(pattern, mtbs, k))


def test_naive_ch6_skips_the_processors_that_would_surround_a_busy_job():
    # 8x4 mesh. B takes nodes 0,1; J (a transpose at MTBS 0) takes 2..5 of row 0; B leaves.
    # A new 2x2 job at MTBS 250 would take 0,1 (left of J) and 6,7 (right of J in J's row):
    # the rules take 0,1 and skip 6,7 for 8,9 (row 1, outside J's rows and columns).
    for mtbs_new, mtbs_j, skipped in ((250, 0, True), (0, 0, True), (0, 10, False), (250, 25, False)):
        for name in ("naive", "naive-ch6"):
            a = allocators.create(name, "mesh:8x4")
            b = a.allocate(Request.processors(2))
            j = a.allocate(creq(2, 2, mtbs_j))
            assert j.nodes == {2, 3, 4, 5}
            a.release(b)
            n = a.allocate(creq(2, 2, mtbs_new))
            rules = name == "naive-ch6" and skipped
            assert n.nodes == ({0, 1, 8, 9} if rules else {0, 1, 6, 7}), (name, mtbs_new, mtbs_j)
            assert n.ranks == tuple(sorted(n.nodes))


def test_naive_ch6_guards_columns_and_a_job_waits_when_too_few_remain():
    # 4x4 mesh: J holds row 1. A 3x2 job (6 nodes, a ring at MTBS 250) on rows 0 and 2 would
    # cross J with its Y segments: rows+columns takes row 0 and then nothing below J: it waits.
    a = allocators.create("naive-ch6", "mesh:4x4")
    b = a.allocate(Request.processors(4))
    j = a.allocate(creq(2, 2, 0))
    a.release(b)
    free = a.free_nodes()
    assert a.allocate(creq(3, 2, 250, "ring")) is None and a.free_nodes() == free
    rows_only = allocators.create("naive-ch6", "mesh:4x4", sides="rows")
    rows_only.allocate(Request.processors(4))
    rows_only.allocate(creq(2, 2, 0))
    rows_only.release(next(x for x in rows_only.live if x.size == 4 and 0 in x.nodes))
    assert rows_only.allocate(creq(3, 2, 250, "ring")).nodes == {0, 1, 2, 3, 8, 9}
    a.release(j)
    assert a.allocate(creq(3, 2, 250, "ring")).nodes == {0, 1, 2, 3, 4, 5}


def test_multiple_buddy_ch6_divides_the_job_where_few_paths_cross():
    # A 16x4 mesh is four 4x4 buddy roots. Filled with 2x2 blocks, then the lower-left block of
    # each root freed: no 4x4 is free, so a 16-node job gets four 2x2 pieces along the bottom.
    # MBS maps its ranks row-major over the 16 nodes: logical rows alternate between the two
    # mesh rows and every one of the transpose's 12 paths crosses between pieces. R4 (MTBS >=
    # 25) takes the Z order: the logical 2x2 blocks stay together and 8 paths cross.
    for name in ("multiple-buddy", "multiple-buddy-ch6"):
        a = allocators.create(name, "mesh:16x4")
        blocks = [a.allocate(Request.processors(4)) for _ in range(16)]
        for blk in blocks:
            if (blk.pieces[0].x % 4, blk.pieces[0].y) == (0, 0):
                a.release(blk)
        n = a.allocate(creq(4, 4, 100))
        assert [(p.x, p.y, p.w) for p in n.pieces] == [(0, 0, 2), (4, 0, 2), (8, 0, 2), (12, 0, 2)]
        if name == "multiple-buddy":
            assert n.ranks == tuple(sorted(n.nodes))
            continue
        comm = n.request.comm
        cands = a.candidates(n)
        assert cands[0] == tuple(sorted(n.nodes))
        assert a.cost(n, cands[0], comm) == (12, 6)
        assert a.cost(n, n.ranks, comm) == (8, 4) == min(a.cost(n, c, comm) for c in cands)
        assert [n.ranks[r] for r in (0, 1, 4, 5)] == [0, 1, 16, 17]  # the logical 2x2 block (0..1, 0..1)
        # at a high rate the busiest row or column of crossing paths comes first
        fast = MultipleBuddyCh6(parse_topology("mesh:16x4"), threshold=1000)
        assert fast.cost(n, n.ranks, comm) == (4, 8)


def test_the_rules_leave_plain_requests_alone():
    for base, rules in (("naive", "naive-ch6"), ("multiple-buddy", "multiple-buddy-ch6")):
        x, y = allocators.create(base, "mesh:8x8"), allocators.create(rules, "mesh:8x8")
        for req in (Request.processors(5), Request.submesh(3, 3), Request.processors(20), Request.processors(7)):
            a, b = x.allocate(req), y.allocate(req)
            assert a.nodes == b.nodes and a.ranks == b.ranks
    with pytest.raises(ValueError, match="threshold"):
        allocators.create("naive-ch6", "mesh:8x8", threshold=-1)


def test_a_rotated_submesh_keeps_the_logical_grid():
    from scheduler.allocators.base import Allocation
    from scheduler.topology import Submesh

    a = allocators.create("first-fit", "mesh:8x8")
    # a 3x2 request on a 2x3 piece at (1, 1): logical (x, y) runs on (1 + y, 1 + x)
    rot = Allocation((Submesh(1, 1, 2, 3),), Request.submesh(3, 2), 6, a, 99)
    assert rot.ranks == (9, 17, 25, 10, 18, 26)
    same = Allocation((Submesh(1, 1, 3, 2),), Request.submesh(3, 2), 6, a, 98)
    assert same.ranks == (9, 10, 11, 17, 18, 19)


# ------------------------------------------------------------------ the front end


def test_the_cli_runs_communicating_jobs_and_states_the_time_unit(capsys):
    rc = cli.main(["simulate", "--topology", "mesh:16x16", "--allocator", "naive", "--load", "0.3",
                   "--comm", "transpose:mtbs=25:iterations=4", "--comm", "diagonal:mtbs=0:iterations=4:share=2",
                   "--jobs", "30", "--seed", "2", "--json"])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    m, net = doc["metrics"], doc["network"]
    assert m["comm_completed"] > 0 and m["mean_message_delay"] >= (L - 1) * T and m["mean_comm_slowdown"] >= 1.0
    assert doc["workload"]["size_dist"] == "square-var"
    # auto: mean K (MTBS + L T_t) over the shares, per mean service time (5)
    assert net["time_unit_us"] == pytest.approx((4 * (25 + 25) + 2 * 4 * (0 + 25)) / 3 / 5)
    assert net["time_unit_rule"].startswith("auto") and [p["share"] for p in net["profiles"]] == [1.0, 2.0]
    rc = cli.main(["simulate", "--topology", "mesh:16x16", "--allocator", "naive-ch6", "--load", "0.3",
                   "--comm", "stencil:mtbs=25:iterations=2", "--net-time-unit", "40", "--jobs", "10", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0 and doc["network"]["time_unit_us"] == 40.0 and doc["workload"]["size_dist"] == "processors"


@pytest.mark.parametrize("argv,message", [
    (["--comm", "transpose"], "give mtbs="),
    (["--comm", "transpose:mtbs=25"], "give iterations="),
    (["--comm", "transpose:mtbs=-5:iterations=10"], "MTBS must be"),
    (["--comm", "transpose:mtbs=5:iterations=0"], "iterations must be"),
    (["--comm", "transpose:mtbs:iterations=3"], "must be KEY=VALUE"),
    (["--comm", "nosuch:mtbs=1:iterations=1"], "unknown pattern"),
    (["--comm", "transpose:mtbs=5:iterations=2", "--size-dist", "processors"], "needs a square job"),
    (["--comm", "transpose:mtbs=5:iterations=2:share=0"], "share must be"),
    (["--comm", "transpose:mtbs=5:iterations=2", "--net-time-unit", "soon"], "--net-time-unit"),
    (["--comm", "transpose:mtbs=5:iterations=2", "--reduction", "limit:greedy"], "does not combine"),
])
def test_bad_communication_input_is_a_one_line_error(argv, message, capsys):
    rc = cli.main(["simulate", "--topology", "mesh:8x8", "--allocator", "naive", "--load", "0.5",
                   "--jobs", "20", *argv])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and err.count("\n") == 1, err


def test_a_pattern_that_does_not_fit_names_the_job():
    with pytest.raises(CommProfileError, match="job 7: transpose on a 3x2 job"):
        communicating(Job(7, 0.0, Request.submesh(3, 2), 1.0), CommProfile("transpose", 0, 1), parse_topology("mesh:8x8"))


@pytest.mark.parametrize("topo,request_", [("mesh:8x8", {"nodes": 6}), ("mesh:8x8", {"nodes": 5}),
                                           ("mesh:8x8", {"shape": [4, 2]}), ("hypercube:5", {"cube": 3}),
                                           ("hypercube:5", {"nodes": 6})])
def test_live_and_simulated_pattern_jobs_ask_for_the_same_logical_grid(topo, request_):
    """``mcemu submit --pattern`` and ``mcemu simulate --comm`` read a job's logical grid with
    one function (scheduler.comm_profile.grid_request): a node count on a mesh is the smallest
    submesh that holds it on both sides (it was N x 1 live), and the pattern task runs that W x H."""
    from types import SimpleNamespace

    from emulator.cli.net import pattern_job

    cfg = {"topology": topo, "network": "wormhole", "net_dilation": 1000.0, "time_unit": 1.0}
    client = SimpleNamespace(status=lambda: {"config": cfg})
    args = SimpleNamespace(pattern="ring", mtbs=0.0, iterations=5, warmup=None, seed=0, group=None, runtime=None)
    live = dict(request_)
    command, _ = pattern_job(args, live, client)
    sim = communicating(Job(1, 0.0, Request.from_dict(request_), 1.0), CommProfile("ring", 0, 5), parse_topology(topo))
    assert live == sim.request.to_dict()
    w, h = logical_shape(sim.request, parse_topology(topo))
    assert f"--shape {w}x{h} " in command and w * h == sim.request.processors_needed
