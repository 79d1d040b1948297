"""The wormhole timing model, traffic, patterns and placed jobs: hand-worked timings
(NETWORK.md 10), properties, seeded determinism and bad input."""
from __future__ import annotations

import json
import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from emulator.cli import main
from emulator.sim.network import simulate_network
from scheduler.network import Channels, NetworkDriver, NetworkError, Path, Traffic, Wormhole, parse_job
from scheduler.network.layout import check_disjoint, job_from_dict
from scheduler.network.patterns import pattern_pairs
from scheduler.topology import Mesh


def run_until_delivered(net: Wormhole) -> list:
    out = []
    while net.next_time() is not None:
        out += net.advance()
    return out


# ------------------------------------------------------------------ timing, hand-worked


@pytest.mark.parametrize("topology,src,dst,hops", [("mesh:8x8", 0, 63, 14), ("mesh:8x8", 9, 10, 1),
                                                    ("hypercube:7", 0, 127, 7), ("hypercube:4", 5, 6, 2)])
@pytest.mark.parametrize("length", [500, 3, 1])
def test_lone_message_takes_hops_plus_length_minus_one(topology, src, dst, hops, length):
    net = Wormhole(topology, length=length)
    net.send(src, dst, 10.0, "m")
    (d,) = run_until_delivered(net)
    assert d.hops == hops and d.sent == 10.0
    assert d.delivered - d.sent == hops + length - 1


def test_microseconds_of_a_lone_path():
    net = Wormhole("mesh:16x16")
    net.send(0, 5, 0.0)
    (d,) = run_until_delivered(net)
    assert net.us(d.delivered - d.sent) == pytest.approx((5 + 500 - 1) * 0.05)


def test_second_worm_on_the_same_route_waits_for_the_first_tail():
    # first worm holds channel 0 until its tail crosses it at t = L; the second header waits
    # there, then follows the first tail one channel behind: uncontended from then on
    L, d = 20, 4
    net = Wormhole("mesh:8x1", length=L)
    net.send(0, d, 0.0, "a")
    net.send(0, d, 3.0, "b")
    got = {x.tag: x for x in run_until_delivered(net)}
    assert got["a"].delivered == d + L - 1
    assert got["b"].delivered == L + d + L - 1
    # all of b's contention is at its starting channel: it got it at L, sent at 3
    assert (got["a"].first, got["b"].first) == (0.0, L)


def test_blocked_header_keeps_its_channels():
    # b (0->3) holds channels 0,1 and blocks on channel 2, held by a (2->4); c (1->2) wants
    # channel 1, which b keeps while blocked, so c waits for b's tail, not just a's
    L = 10
    net = Wormhole("mesh:8x1", length=L)
    net.send(2, 4, 0.0, "a")  # channels 2,3; channel 2 free at t = L
    net.send(0, 3, 0.0, "b")  # reaches channel 2 at t = 2, waits until L
    net.send(1, 2, 1.5, "c")  # channel 1 held by b since t = 1
    got = {x.tag: x for x in run_until_delivered(net)}
    assert got["a"].delivered == 2 + L - 1
    # b gets channel 2 at L, header at node 3 at L + 1; channel 1 released L - 1 later... at
    # tdest + L - d + k = (L + 1) + L - 3 + 1
    assert got["b"].delivered == L + 1 + L - 1
    assert got["c"].delivered == (L + 1) + L - 3 + 1 + 1 + L - 1


def test_short_worms_release_channels_behind_them():
    # L = 2 on a 6-hop route: the tail frees each channel two hops behind the header, so a
    # second worm entering behind the first is not held up for the whole route
    net = Wormhole("mesh:8x1", length=2)
    net.send(0, 6, 0.0, "a")
    net.send(0, 6, 0.5, "b")
    got = {x.tag: x for x in run_until_delivered(net)}
    assert got["a"].delivered == 6 + 1
    assert got["b"].delivered == 2 + 6 + 1  # waits for channel 0 until t = 2, then free


@pytest.mark.parametrize("lv,want", [(1, [25.0]), (3, [50.0, 100.0, 100.0]),
                                     (5, [50.0, 100.0, 200.0, 400.0, 400.0])])
def test_stair_at_mtbs_0(lv, want):
    """NETWORK.md 4.3 / 10: the stair at MTBS 0, top to bottom (the hop terms vanish in the
    mean: every message of a path waits whole message times)."""
    net = Wormhole("mesh:16x16")
    doc = simulate_network(net, [parse_job(f"stair:{lv}@0,0:mtbs=0", net.channels.topology)], messages=300)
    got = [p["mean_delay_us"] for p in doc["paths"]]
    if lv == 1:
        assert got[0] == pytest.approx(25.0)  # (1 + 500 - 1) x 0.05
    else:
        assert got == pytest.approx(want, abs=1e-9)


def test_diagonal_has_no_contention_at_any_rate():
    net = Wormhole("mesh:8x8")
    doc = simulate_network(net, [parse_job("diagonal:4x4@2,2:mtbs=0", "mesh:8x8")], messages=200)
    assert len(doc["paths"]) == 4
    for p in doc["paths"]:
        assert p["mean_contention_us"] == 0 and p["mean_delay_us"] == p["contention_free_us"]


def test_back_to_back_utilization():
    # one path of d hops, MTBS 0: its first channel is reserved L of every d + L - 1
    net = Wormhole("mesh:8x1", length=50)
    doc = simulate_network(net, [parse_job("pairs:4x1@0,0:paths=0-3:mtbs=0", "mesh:8x1")], messages=100,
                           warmup=10)
    first = next(c for c in doc["channels"] if c["from"] == 0)
    assert first["utilization"] == pytest.approx(50 / (3 + 50 - 1), rel=1e-3)


def test_hypercube_transpose_runs():
    net = Wormhole("hypercube:7")
    doc = simulate_network(net, [parse_job("transpose:4x4@000****:mtbs=25", "hypercube:7"),
                                 parse_job("ring:4x4@16:mtbs=25", "hypercube:7", 1)], messages=100)
    assert [j["paths"] for j in doc["jobs"]] == [12, 16]
    assert doc["network"]["routing"] == "e-cube"
    assert all(p["mean_delay_us"] >= p["contention_free_us"] for p in doc["paths"])


# ------------------------------------------------------------------ properties


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 15), st.integers(0, 15), st.integers(0, 40)), min_size=1, max_size=12),
       st.integers(1, 30))
def test_every_message_arrives_no_sooner_than_alone(msgs, length):
    net = Wormhole("mesh:4x4", length=length)
    for i, (s, d, t) in enumerate(sorted(msgs, key=lambda m: m[2])):
        net.send(s, d, float(t), i)
    got = run_until_delivered(net)
    assert len(got) == len(msgs)
    ch = Channels("mesh:4x4")
    for x in got:
        s, d, t = sorted(msgs, key=lambda m: m[2])[x.tag]
        assert x.hops == len(ch.route(s, d))
        assert x.delivered - x.sent >= x.hops + length - 1
    assert all(0 <= u <= 1 + 1e-9 for u in net.utilization(t1=max(x.delivered for x in got)))


@settings(max_examples=60, deadline=None)
@given(st.permutations(range(16)), st.integers(1, 600))
def test_channel_disjoint_messages_never_wait(perm, length):
    """Messages whose routes share no channel are delivered exactly as if alone."""
    ch = Channels("mesh:4x4")
    used, chosen = set(), []
    for s, d in zip(range(16), perm):
        r = set(ch.route(s, d))
        if s != d and not (r & used):
            used |= r
            chosen.append((s, d))
    net = Wormhole(ch, length=length)
    for i, (s, d) in enumerate(chosen):
        net.send(s, d, 0.0, i)
    for x in run_until_delivered(net):
        assert x.delivered - x.sent == x.hops + length - 1


def test_seeded_runs_are_identical_and_seeds_matter():
    def doc(seed):
        net = Wormhole("mesh:8x8")
        jobs = [parse_job("transpose:4x4@0,0:mtbs=25", "mesh:8x8"), parse_job("all-to-all:2x2@4,4:mtbs=50", "mesh:8x8", 1)]
        return simulate_network(net, jobs, messages=200, seed=seed)

    a, b, c = doc(3), doc(3), doc(4)
    assert json.dumps(a) == json.dumps(b)
    assert json.dumps(a) != json.dumps(c)


# ------------------------------------------------------------------ patterns and jobs


def test_patterns_on_a_4x4():
    assert len(pattern_pairs("transpose", 4, 4)) == 12
    assert pattern_pairs("diagonal", 4, 4) == [(0, 15), (5, 10), (10, 5), (15, 0)]
    assert len(pattern_pairs("all-to-all", 4, 4)) == 240
    assert len(pattern_pairs("stencil", 4, 4)) == 2 * (2 * 4 * 3)
    assert pattern_pairs("ring", 2, 2) == [(0, 1), (1, 2), (2, 3), (3, 0)]
    assert pattern_pairs("one-to-all", 2, 2) == [(0, 1), (0, 2), (0, 3)]
    perm = pattern_pairs("permutation", 4, 4, seed=7)
    assert sorted(d for _, d in perm) == sorted(s for s, _ in perm)  # a permutation minus fixed points
    assert pattern_pairs("stair", 4, 1) == [(2, 3), (1, 3), (0, 3)]


def test_job_spec_places_ranks_row_major():
    j = parse_job("transpose:2x2@3,1:mtbs=25:name=t", "mesh:8x8")
    assert j.name == "t" and j.nodes == (11, 12, 19, 20) and j.mtbs == (25.0, 25.0)
    assert [(p.src, p.dst) for p in j.paths] == [(12, 19), (19, 12)]
    s = parse_job("stair:5@0,0:mtbs=0/50/100/250/500", "mesh:16x16")
    assert s.mtbs == (0.0, 50.0, 100.0, 250.0, 500.0) and [p.src for p in s.paths] == [4, 3, 2, 1, 0]
    c = parse_job("ring:2x2@0*1*", "hypercube:4")
    assert c.nodes == (2, 3, 6, 7)


def test_job_file_dicts():
    j = job_from_dict({"name": "out", "pattern": "transpose", "shape": "2x2",
                       "nodes": [[0, 0], [1, 0], [5, 0], [6, 0]], "mtbs": 25}, "mesh:8x8")
    assert j.nodes == (0, 1, 5, 6) and len(j.paths) == 2
    p = job_from_dict({"paths": [[0, 7], [7, 0]], "mtbs": [25, 250]}, "mesh:8x8")
    assert [(x.src, x.dst, x.mtbs) for x in p.paths] == [(0, 7, 25.0), (7, 0, 250.0)]


@pytest.mark.parametrize("spec,needle", [
    ("transpose:4x4@14,0", "does not fit"),
    ("transpose:4x3@0,0", "square"),
    ("stair:5@0,0:mtbs=-1", "MTBS"),
    ("stair:5@0,0:mtbs=1/2", "2 MTBS values for 5 paths"),
    ("nosuch:4x4@0,0", "unknown pattern"),
    ("transpose@0,0", "shape"),
    ("transpose:4x4", "PATTERN"),
    ("transpose:4x4@a,b", "@X,Y"),
    ("transpose:4x4@0,0:mtbs", "KEY=VALUE"),
])
def test_bad_job_specs(spec, needle):
    with pytest.raises(NetworkError, match=needle):
        parse_job(spec, "mesh:16x16")


def test_overlapping_jobs_are_refused():
    a, b = parse_job("transpose:4x4@0,0", "mesh:8x8", 0), parse_job("diagonal:4x4@3,3", "mesh:8x8", 1)
    with pytest.raises(NetworkError, match="overlap at node 27"):
        check_disjoint([a, b])


def test_bad_model_input():
    net = Wormhole("mesh:4x4")
    with pytest.raises(NetworkError, match="not in mesh"):
        net.send(0, 99)
    net.send(0, 3, 5.0)
    net.advance(100.0)
    with pytest.raises(NetworkError, match="cannot send at 1"):
        net.send(0, 3, 1.0)
    with pytest.raises(NetworkError):
        Wormhole("mesh:4x4", length=0)
    with pytest.raises(NetworkError, match="MTBS"):
        Path(0, 1, float("nan"))
    with pytest.raises(NetworkError, match="iterations"):
        Traffic(NetworkDriver(net)).add(Path(0, 1, 0.0), iterations=0)


@pytest.mark.parametrize("argv,needle", [
    (["--mesh", "16x16", "--job", "transpose:4x4@14,0"], "does not fit"),
    (["--mesh", "16x16", "--job", "transpose:4x4@0,0", "--job", "diagonal:4x4@2,2"], "overlap"),
    (["--mesh", "16x16", "--job", "stair:5@0,0:mtbs=-3"], "MTBS"),
    (["--mesh", "16x16"], "at least one --job"),
    (["--mesh", "16x16", "--job", "stair:3@0,0", "--messages", "0"], "--messages"),
])
def test_cli_bad_input_is_one_line(argv, needle, capsys):
    assert main(["net", "simulate", *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


def test_cli_json_document(capsys):
    assert main(["net", "simulate", "--mesh", "8x8", "--job", "transpose:4x4@0,0:mtbs=25",
                 "--job", "diagonal:4x4@4,0:mtbs=250", "--messages", "100", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [j["name"] for j in doc["jobs"]] == ["j0", "j1"]
    assert len(doc["paths"]) == 16 and doc["warmup_messages_per_path"] == 10
    p = doc["paths"][0]
    assert set(p) >= {"source", "destination", "mtbs_us", "messages", "mean_delay_us", "p95_delay_us",
                      "mean_contention_us"}
    assert all(0 <= c["utilization"] <= 1 for c in doc["channels"])
    assert Mesh(8, 8).size == 64


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0, 1, 4, 5]), st.integers(0, 15)), min_size=2, max_size=8),
       st.lists(st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0, 7.0]), min_size=1, max_size=5), st.integers(2, 10))
@example([(1, 8), (4, 8), (4, 15), (5, 3), (1, 12)], [1.5, 0.5], 2)  # ordered by the cut before
def test_how_advance_is_cut_does_not_change_anything(pairs, steps, length):
    """Back-to-back closed loops (a reply at the very delivery time, where ties are exact):
    advancing in one go or in arbitrary slices gives the same deliveries (the live cluster
    advances the model by wall-clock slices, the simulator by deliveries)."""
    pairs = [(s, d) for s, d in pairs if s != d] or [(0, 15), (3, 12)]

    def run(cuts):
        net = Wormhole("mesh:4x4", length=length)
        for i, (s, d) in enumerate(pairs):
            net.send(s, d, 0.0, i)
        out, k = [], 0
        while len(out) < 6 * len(pairs):
            until = net.now + cuts[k % len(cuts)] if cuts else math.inf
            k += 1
            for x in net.advance(until):
                out.append(x)
                s, d = pairs[x.tag]
                net.send(s, d, x.delivered, x.tag)
        return sorted(out, key=lambda x: (x.delivered, x.tag))[: 5 * len(pairs)]

    assert run([]) == run(steps)
