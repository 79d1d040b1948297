"""Chapter 6's reconstructed layouts and set-ups (emulator/experiments/network/ch6*.py): the
crossing counts of §6.2.4, the diagonal's contention-free paths, the stair layouts of Fig 6.1,
Scenario B's modified transpose. Fast: no experiment is run here (test_reproduce runs their
quick forms)."""
from __future__ import annotations

import pytest

from emulator import experiments
from emulator.experiments.network import ch6
from emulator.experiments.network.common import net_point
from scheduler.network.layout import check_disjoint, job_from_dict
from scheduler.network.metrics import internal_competing_level
from scheduler.topology import parse_topology

MESH = parse_topology(ch6.JOB_MESH)


def _jobs(dicts):
    return [job_from_dict(d, MESH, i) for i, d in enumerate(dicts)]


def _channels(job):
    out = []
    for p in job.paths:
        nodes = MESH.route(p.src, p.dst)
        out.append([(MESH.xy(a), MESH.xy(b)) for a, b in zip(nodes, nodes[1:])])
    return out


def test_registered():
    names = experiments.names()
    for n in ("net-fig6-2", "net-fig6-4", "net-fig6-5", "net-fig6-8", "net-fig6-11", "net-fig6-13"):
        assert n in names


def test_first_cut_crossings_match_section_6_2_4():
    """First method: 'one row to have a high congestion factor and three rows to have low'."""
    rows = ch6.crossing_counts(ch6.scenario_a(0, 0, cut=ch6.FIRST_CUT))
    assert rows == {0: 3, 1: 1, 2: 1, 3: 1}
    assert sum(rows.values()) == 6


def test_middle_cut_crossings_match_section_6_2_4():
    """Second method: 'each row to have a medium congestion factor'."""
    rows = ch6.crossing_counts(ch6.scenario_a(0, 0, cut=ch6.MIDDLE_CUT))
    assert rows == {0: 2, 1: 2, 2: 2, 3: 2}
    assert sum(rows.values()) == 8


@pytest.mark.parametrize("cut", [ch6.FIRST_CUT, ch6.MIDDLE_CUT])
def test_layout_pieces(cut):
    jobs = _jobs(ch6.scenario_a(25, 250, cut=cut))
    check_disjoint(jobs)
    inside, outside = jobs
    assert inside.name == "inside" and outside.name == "outside"
    assert len(inside.paths) == len(outside.paths) == 12
    assert {MESH.xy(v)[0] for v in inside.nodes} == set(range(cut, cut + 4))
    # the outside job keeps its logical column order across the two pieces (reading 8.23)
    cols = [MESH.xy(outside.nodes[c])[0] for c in range(4)]
    assert cols == sorted(cols) and cols[cut - 1] < cut and cols[cut] >= cut + 4
    assert {m for m in inside.mtbs} == {25.0} and {m for m in outside.mtbs} == {250.0}


@pytest.mark.parametrize("cut", [ch6.FIRST_CUT, ch6.MIDDLE_CUT])
def test_jobs_meet_only_on_row_channels(cut):
    """Y segments stay in each job's own columns: the jobs share row channels only, and the
    outside job's crossing paths enter them upstream (starting competitors of the inside job)."""
    inside, outside = _jobs(ch6.scenario_a(0, 0, cut=cut))
    ins = {c for r in _channels(inside) for c in r}
    shared = {c for r in _channels(outside) for c in r} & ins
    assert shared and all(a[1] == b[1] for a, b in shared)
    # every inside path that meets an outside path meets it as a starting competitor: the
    # outside route passes the inside path's first channel
    out_routes = _channels(outside)
    for r in _channels(inside):
        met = [o for o in out_routes if set(o) & set(r)]
        for o in met:
            assert r[0] in o


def test_internal_competing_levels():
    """§6.2.1: the 4x4 transpose has 1.33, the 4x4 diagonal 0."""
    for pattern, level in (("transpose", 16), ("diagonal", 0)):
        job = job_from_dict(ch6.job_dict("inside", pattern, 0.0), MESH, 0)
        routes = _channels(job)
        assert sum(internal_competing_level(routes, [0] * len(routes))) == level


@pytest.mark.parametrize("mtbs", [0.0, 100.0])
def test_diagonal_is_contention_free(mtbs):
    """NETWORK.md 10: the 4x4 diagonal's paths share no channel: every path has its
    contention-free delay (hops + L - 1) * T_t at any MTBS."""
    job = ch6.job_dict("inside", "diagonal", mtbs, cut=0)
    out = net_point({"topology": "mesh:4x4", "jobs": [job], "messages": 40}, 1)
    assert out["contention@inside"] == pytest.approx(0.0, abs=1e-9)
    for i in range(4):
        hops = 6 if i in (0, 3) else 2  # (0,0)<->(3,3) and (1,1)<->(2,2)
        assert out[f"delay#{i}"] == pytest.approx((hops + 499) * 0.05)


def test_scenario_b_modified_transpose():
    assert ch6.choose_removed_path() == ch6.REMOVED
    for transpose_inside in (True, False):
        dicts = ch6.scenario_b(transpose_inside, 50)
        jobs = _jobs(dicts)
        check_disjoint(jobs)
        tr = jobs[0] if transpose_inside else jobs[1]
        dg = jobs[1] if transpose_inside else jobs[0]
        assert len(tr.paths) == 11 and len(dg.paths) == 4
        (i, j), (k, l) = ch6.REMOVED
        assert (i * 4 + j, k * 4 + l) not in tr.ranks
    # reading 8.20 cannot be met exactly on this layout: every removal leaves a mismatch,
    # in either orientation of the pieces
    for pieces in (ch6.ORDERED, ch6.SWAPPED):
        assert min(ch6.removal_mismatch(t, pieces) for t in ch6.transpose_paths()) > (0, 0)
    assert ch6.crossing_counts(ch6.scenario_b(True, 0)) == {0: 1, 1: 1, 2: 1, 3: 1}
    assert sum(ch6.crossing_counts(ch6.scenario_b(False, 0)).values()) == 7


@pytest.mark.parametrize("cut", [ch6.FIRST_CUT, ch6.MIDDLE_CUT])
def test_orientations_share_the_crossing_counts(cut):
    """8.23: the counts of §6.2.4 do not tell the two orientations of the pieces apart."""
    a = ch6.crossing_counts(ch6.scenario_a(0, 0, cut, pieces=ch6.ORDERED))
    b = ch6.crossing_counts(ch6.scenario_a(0, 0, cut, pieces=ch6.SWAPPED))
    assert a == b
    inside = ch6.piece_columns("inside", cut, pieces=ch6.SWAPPED)
    outside = ch6.piece_columns("outside", cut, pieces=ch6.SWAPPED)
    assert sorted(inside + outside) == list(range(8))


def test_orientation_decides_whether_the_jobs_meet():
    """The readings of ch6_layouts: Scenario A's jobs meet with the ordered pieces, Scenario
    B's only with the swapped ones (ordered, the diagonal inside shares no channel)."""
    assert ch6.interactions(ch6.scenario_a(0, 0, pieces=ch6.ORDERED))["pairs"] == 20
    assert ch6.interactions(ch6.scenario_a(0, 0, pieces=ch6.SWAPPED))["pairs"] == 4
    assert ch6.interactions(ch6.scenario_b(False, 0, None, ch6.ORDERED))["pairs"] == 0
    assert ch6.interactions(ch6.scenario_b(True, 0, None, ch6.ORDERED))["pairs"] == 2
    assert ch6.interactions(ch6.scenario_b(False, 0, pieces=ch6.SWAPPED))["pairs"] > 0
    assert ch6.interactions(ch6.scenario_b(True, 0, pieces=ch6.SWAPPED))["pairs"] > 0
    assert (ch6.A_PIECES, ch6.B_PIECES) == (ch6.ORDERED, ch6.SWAPPED)


def test_diagonal_inside_alone_when_ordered():
    """With the ordered pieces the inside diagonal keeps its contention-free delay next to
    the outside transpose: the reason Scenario B uses the swapped pieces."""
    jobs = ch6.scenario_b(False, 0, None, ch6.ORDERED)
    out = net_point({"topology": ch6.JOB_MESH, "jobs": jobs, "messages": 30}, 1)
    assert out["contention@inside"] == pytest.approx(0.0, abs=1e-9)


def test_five_path_layouts():
    assert ch6.layout_mtbs("a", 100) == (0.0, 50.0, 100.0, 250.0, 500.0)
    assert ch6.layout_mtbs("b", 100) == (500.0, 250.0, 100.0, 50.0, 0.0)
    assert ch6.stair_spec((0, 50, 100, 250, 500)) == "stair:5@0,0:mtbs=0/50/100/250/500"


def test_stair_at_mtbs_zero_is_exact():
    """NETWORK.md 10: a 5-layer stair at MTBS 0 has delays 50, 100, 200, 400, 400 us."""
    got = [d for d, _ in ch6.ch6_paths.stair_sim((0.0,) * 5, 30, 1)]
    assert got == pytest.approx([50, 100, 200, 400, 400], abs=0.5)


def test_competitor_setups():
    assert ch6.competitors_mtbs("starting", 3, 25, 100) == (25.0, 100.0, 100.0, 100.0)
    assert ch6.competitors_mtbs("intermediate", 3, 25, 100) == (100.0, 100.0, 100.0, 25.0)
    # the starting path's only contention is at its starting channel: at most one message
    d, c = ch6.ch6_paths.stair_sim(ch6.competitors_mtbs("starting", 5, 0, 0), 50, 2)[0]
    assert c <= 25.0 + 1e-6
