"""The point functions of the chapter-4/5 figure experiments (emulator/experiments/network/ch4*.py,
ch5*.py) on cases checkable by hand: back-to-back stairs, the 1-1 model, the layouts."""
from __future__ import annotations

import pytest

from emulator.experiments.network.ch4_sim import (
    MODEL, SIM, messages_for, stair_params, stair_point, transpose_params, transpose_point,
)
from emulator.experiments.network.ch5 import mn_jobs, mn_params, mn_point
from emulator.experiments.network.ch5_paths import five_params, five_point
from emulator.experiments.network.ch5_two_jobs import (
    analyse, outside_column, row_groups, solve_segments, two_job_paths, two_params, two_point,
)
from scheduler.network.channels import Channels
from scheduler.network.heterogeneous import solve_multipath
from scheduler.network.homogeneous import solve_stair


def test_messages_for_takes_the_slowest_paths_share():
    # rates 1, 1, 0.5: the slowest path gets 0.5/2.5 of 120,000 = 24,000, capped at 4,000
    assert messages_for([1, 1, 0.5], quick=False) == (4000, 400)
    assert messages_for([1] * 1000 + [0.001], quick=False) == (20, 2)  # at least 20, warm-up >= 2
    assert messages_for([1, 1], quick=True) == (300, 30)


def _stair(src, lv, mtbs=0):
    p = stair_params(src, lv, mtbs, quick=True)
    return stair_point(p, seed=1)


def test_stair_at_mtbs_0_simulation_equals_model_50_100_200_400_400():
    sim, mod = _stair(SIM, 5), _stair(MODEL, 5)
    assert [mod[f"d#{u}"] for u in range(5)] == pytest.approx([50, 100, 200, 400, 400])
    assert [sim[f"d#{u}"] for u in range(5)] == pytest.approx([50, 100, 200, 400, 400], abs=0.1)
    # where they wait: the top path only at its start (one message of the path below), the
    # bottom only downstream (the four paths above, each after its own wait: 25+50+100+200)
    assert [mod[f"cs#{u}"] for u in range(5)] == pytest.approx([25, 50, 100, 200, 0])
    assert [mod[f"ci#{u}"] for u in range(5)] == pytest.approx([0, 25, 75, 175, 375])
    for u in range(5):
        assert sim[f"cs#{u}"] == pytest.approx(mod[f"cs#{u}"], abs=0.2)  # the sim counts hops
        assert sim[f"ci#{u}"] == pytest.approx(mod[f"ci#{u}"], abs=0.25)
    assert sim["ci_bottom"] == pytest.approx(375, abs=0.2) and mod["ci_bottom"] == 375
    assert mod["c_avg"] == pytest.approx((25 + 75 + 175 + 375 + 375) / 5)


def test_stair_of_one_layer_has_no_contention():
    sim = _stair(SIM, 1, 100)
    assert sim["c_avg"] == 0 and sim["d_mean"] == pytest.approx(25.0)  # 1 hop + 499 flits
    assert _stair(MODEL, 1, 100)["c_avg"] == 0


def test_transpose_4x4_at_mtbs_0_is_its_row_stairs():
    # rows give stairs of 1, 2, 3 layers twice; avg Cmax 0, 25, 175/3: mean over 12 paths 37.5
    p = transpose_params(SIM, 4, 0, quick=True)
    assert transpose_point(p, 1)["c_mean"] == pytest.approx(37.5, abs=0.2)
    assert transpose_point(transpose_params("row-stairs", 4, 0, True), 0)["c_mean"] == pytest.approx(37.5)
    # eq 4.14: 2/3 of the way from lv 1 (0) to lv 3 (175/3)
    assert transpose_point(transpose_params("interpolation", 4, 0, True), 0)["c_mean"] == pytest.approx(2 / 3 * 175 / 3)


def _routes(topo, job):
    ch = Channels(topo)
    node = lambda xy: ch.topology.node(*xy)  # noqa: E731
    return [set(ch.route(node(s), node(d))) for s, d in job["paths"]]


def test_mn_layout_shares_one_channel_between_the_stairs():
    topo, (ji, jj) = mn_jobs(3, 2, 25, 100)
    ri, rj = _routes(topo, ji), _routes(topo, jj)
    assert len(ri[0] & rj[0]) == 1  # P_i and P_j: the channel H only
    assert all(not (r & rj[0]) for r in ri[1:]) and all(not (r & ri[0]) for r in rj[1:])
    assert all(r < ri[0] for r in ri[1:]) and all(r < rj[0] for r in rj[1:])  # stair-mates join downstream


def test_one_one_model_back_to_back_alternates():
    # both paths send back to back through H: they alternate, each waits one message
    sim = mn_point(mn_params(SIM, 1, 1, 0, 0, quick=True), 1)
    assert sim["d_i"] == pytest.approx(50.0) and sim["d_j"] == pytest.approx(50.0)
    assert mn_point(mn_params(MODEL, 1, 1, 0, 0, True), 0)["d_i"] == pytest.approx(50)
    alone = mn_point(mn_params(SIM, 1, 0, 100, 0, True), 1)
    assert alone["d_i"] == pytest.approx(25.0) and "d_j" not in alone


def test_five_path_model_point_is_solve_multipath():
    got = five_point(five_params(MODEL, 100, True), 0)
    assert [got[f"d{u}"] for u in range(1, 6)] == pytest.approx(list(solve_multipath([0, 50, 100, 250, 500]).delays))


@pytest.mark.parametrize("mtbs", [[0], [25, 50], [0, 50, 100, 250, 500], [25, 50, 25, 250, 100], [500, 250, 0, 50, 0, 10]])
def test_solve_segments_on_a_stair_is_solve_multipath(mtbs):
    m = len(mtbs)
    got = solve_segments([(m - 1 - u, m, x) for u, x in enumerate(mtbs)])  # top path enters last
    assert got == pytest.approx(list(solve_multipath(mtbs).delays), abs=1e-6)


def test_solve_segments_homogeneous_back_to_back_is_the_stair():
    assert solve_segments([(2, 3, 0), (1, 3, 0), (0, 3, 0)]) == pytest.approx(list(solve_stair(3, 0).dmax), rel=0.2)
    assert solve_segments([(0, 2, 0), (5, 7, 0)]) == [25.0, 25.0]  # never meet


def test_two_job_layout_middle_cut():
    assert [outside_column(c) for c in range(4)] == [0, 1, 6, 7]
    paths = two_job_paths(25, 100)
    assert len(paths) == 24 and sum(p[0] == "inside" for p in paths) == 12
    # the outside job's paths through the inside columns 2..5: two per row (NETWORK.md 6.2)
    cross = [p for p in paths if p[0] == "outside" and min(p[1][0], p[2][0]) < 2 and max(p[1][0], p[2][0]) > 5]
    assert sorted(p[1][1] for p in cross) == [0, 0, 1, 1, 2, 2, 3, 3]
    right = {}
    for g in row_groups(paths):
        k = g[0][0]
        if paths[k][2][0] > paths[k][1][0]:
            right.setdefault(paths[k][1][1], []).append(sorted(paths[q][0][0] for q, _, _ in g))
    assert right == {1: [["o"], ["i"]], 2: [["i", "i", "o", "o"]], 3: [["i", "i", "i", "o", "o", "o"]]}


def test_two_job_analysis_is_symmetric_and_the_simulation_runs():
    a = two_point(two_params(MODEL, 25, 100, True), 0)
    assert a["inside"] == pytest.approx(a["inside_right"]) and a["outside"] == pytest.approx(a["outside_right"])
    d = analyse(500, 500)
    assert all(25 <= x < 40 for x in d)  # light traffic: little contention
    s = two_point(two_params(SIM, 500, 500, True), 1)
    assert 25 < s["inside"] < 40 and 25 < s["outside"] < 40
