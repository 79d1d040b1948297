"""Program traces (scheduler.network.trace) and their replay in the simulator (emulator.sim.replay):
hand-built traces whose replayed times are worked out by hand from the wormhole model (a lone
worm of L flits over d hops takes d + L - 1 flit times), placement changes the times of a
contended program, other traffic slows it, and bad traces are refused with clear errors."""
from __future__ import annotations

import json
import math

import pytest

from emulator.sim.replay import contiguous, free_paths, replay, scattered
from scheduler.network.trace import Trace, TraceError, build, dump, load_trace, merge

FLIT_US = 0.05
FLIT_S = FLIT_US * 1e-6


def header(nodes, topology="mesh:4x4", flit_bytes=8) -> dict:
    return {"version": 1, "job": 7, "attempt": 1, "size": len(nodes), "nodes": list(nodes),
            "topology": topology, "flit_time_us": FLIT_US, "flit_bytes": flit_bytes, "startup_flits": 0.0,
            "cpu_scale": 1.0, "time": "virtual"}


def make(nodes, events, topology="mesh:4x4") -> Trace:
    h = header(nodes, topology)
    return build([(f"rank {r}", {**h, "rank": r, "events": ev}) for r, ev in enumerate(events)])


def ping_pong(rounds: int, nbytes: int, compute: float, lat: float) -> list:
    """Rank 0 computes, sends, waits for the reply; rank 1 echoes: the recorded times when
    each message takes ``lat`` seconds."""
    e0, e1, t = [], [], 0.0
    for k in range(rounds):
        t += compute
        e0 += [["c", compute], ["s", 1, nbytes, k]]
        e1 += [["w", None, [[0, k, t + lat]], []], ["s", 0, nbytes, k]]
        e0.append(["w", None, [[1, k, t + 2 * lat]], []])
        t += 2 * lat
    return [e0 + [["e", t]], e1 + [["e", t - lat]]]


def test_ping_pong_replays_the_hand_worked_latencies():
    # node 0 = (0,0) to node 15 = (3,3): 6 hops; 800 bytes = 1 + 100 flits of 8 bytes
    d, flits = 6, 1 + 800 // 8
    lat = (d + flits - 1) * FLIT_S
    trace = make([0, 15], ping_pong(3, 800, 2e-6, lat))
    res = replay(trace, "mesh:4x4")
    assert [m["delay_us"] for m in res.messages] == [pytest.approx((d + flits - 1) * FLIT_US)] * 6
    assert all(m["flits"] == flits and m["hops"] == d for m in res.messages)
    assert res.ends == pytest.approx(trace.ends(), rel=1e-12)
    assert res.elapsed == pytest.approx(3 * (2e-6 + 2 * lat), rel=1e-12)
    assert res.recorded["max"] < 1e-9  # the recorded placement: the recorded times again
    s = res.summary
    assert s["count"] == 6 and s["mean_contention_us"] == pytest.approx(0.0, abs=1e-9) and s["slowdown"] == 1.0


def test_times_count_from_the_jobs_start_on_the_live_clock():
    """``vt0``: the replay's clocks run where the live ones did (the same rounding of seconds to
    flit times); what it reports counts from the job's start all the same."""
    d, flits = 6, 1 + 800 // 8
    lat = (d + flits - 1) * FLIT_S
    h = {**header([0, 15]), "vt0": 0.125}
    trace = build([(f"rank {r}", {**h, "rank": r, "events": ev}) for r, ev in enumerate(ping_pong(2, 800, 2e-6, lat))])
    assert trace.vt0 == 0.125 and trace.header()["vt0"] == 0.125
    res = replay(trace, "mesh:4x4")
    assert res.ends == pytest.approx(trace.ends(), rel=1e-9) and res.recorded["max"] < 1e-6
    assert res.messages[0]["sent"] == pytest.approx(2e-6, rel=1e-6)


def test_elsewhere_the_latency_follows_the_distance():
    trace = make([0, 15], ping_pong(2, 8, 1e-6, 0.0))
    res = replay(trace, "mesh:4x4", [0, 1])  # 1 hop, 2 flits: 2 flit times a message
    assert res.recorded is None
    assert [m["delay_us"] for m in res.messages] == [pytest.approx(2 * FLIT_US)] * 4
    assert res.elapsed == pytest.approx(2 * (1e-6 + 2 * 2 * FLIT_S))


def test_a_timed_wait_without_messages_moves_the_clock_by_its_timeout():
    trace = make([0, 1], [[["w", 0.5, [], []], ["w", None, [], []], ["c", 0.25], ["e", 0.75]], [["e", 0.0]]])
    res = replay(trace, "mesh:4x4")
    assert res.ends == [0.75, 0.0] and res.elapsed == 0.75


def test_notices_wait_for_the_delivery_of_own_sends():
    lat = (1 + 2 - 1) * FLIT_S
    trace = make([0, 1], [[["s", 1, 8, 0], ["w", None, [], [[1, 0, lat]]], ["e", lat]], [["e", 0.0]]])
    res = replay(trace, "mesh:4x4")
    assert res.ends[0] == pytest.approx(lat) and res.recorded["max"] < 1e-9


def stencil_exchange(w: int, h: int, rounds: int, nbytes: int) -> list:
    """Each rank of a w x h grid sends to its grid neighbours, then waits for theirs."""
    events = []
    for r in range(w * h):
        x, y = r % w, r // w
        peers = [(y + dy) * w + x + dx for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1))
                 if 0 <= x + dx < w and 0 <= y + dy < h]
        ev = []
        for k in range(rounds):
            ev += [["c", 1e-6]] + [["s", p, nbytes, k] for p in peers]
            ev.append(["w", None, [[p, k, 0.0] for p in peers], []])
        events.append(ev + [["e", 0.0]])
    return events


def test_a_scattered_placement_is_slower_for_a_contended_pattern():
    trace = make(range(16), stencil_exchange(4, 4, 3, 4000))
    near = replay(trace, "mesh:16x16", contiguous(trace, "mesh:16x16"))
    far = replay(trace, "mesh:16x16", scattered(trace, "mesh:16x16", seed=3))
    assert near.placement == tuple(y * 16 + x for y in range(4) for x in range(4))  # first fit: the corner
    assert len(set(far.placement)) == 16 and far.placement != near.placement
    assert far.elapsed > near.elapsed
    assert far.summary["mean_delay_us"] > near.summary["mean_delay_us"]
    assert far.summary["mean_contention_us"] > near.summary["mean_contention_us"]
    assert near.summary["count"] == far.summary["count"] == 3 * 48


def test_other_traffic_on_the_free_nodes_slows_the_program():
    trace = make([0, 3], ping_pong(5, 4000, 1e-6, 0.0))
    alone = replay(trace, "mesh:4x4")
    bg = free_paths("ring", 0.0, "mesh:4x4", alone.placement)
    assert bg and not any(p.src in (0, 3) or p.dst in (0, 3) for p in bg)
    busy = replay(trace, "mesh:4x4", background=bg)
    assert busy.elapsed > alone.elapsed and busy.summary["mean_contention_us"] > 0
    assert busy.background["paths"] == len(bg) and busy.background["count"] > 0
    with pytest.raises(TraceError, match="one of the program's"):
        replay(trace, "mesh:4x4", background=free_paths("ring", 0.0, "mesh:4x4", [0]))


def test_a_square_pattern_runs_on_the_largest_square_of_free_nodes():
    paths = free_paths("transpose", 10.0, "mesh:4x4", [0, 1, 2, 3, 4, 5, 6])  # 9 free: 3x3
    assert len(paths) == 6 and all(p.mtbs == 10.0 for p in paths)


def test_directory_and_merged_file_load_the_same_trace(tmp_path):
    events = ping_pong(2, 16, 1e-6, 0.0)
    d = tmp_path / "job-7"
    d.mkdir()
    for r, ev in enumerate(events):
        (d / f"rank-{r}.json").write_text(json.dumps({**header([0, 5]), "rank": r, "events": ev}))
    t = load_trace(d)
    assert t.size == 2 and t.nodes == (0, 5) and t.flits(16) == 3
    merged = merge(d, tmp_path / "trace.json")
    assert merged == t == load_trace(tmp_path / "trace.json")
    dump(t, tmp_path / "again.json")
    assert load_trace(tmp_path / "again.json") == t


def test_a_deadlocked_trace_names_the_ranks():
    trace = make([0, 1], [[["w", None, [[1, 0, 0.0]], []], ["s", 1, 8, 0], ["e", 0.0]],
                          [["w", None, [[0, 0, 0.0]], []], ["s", 0, 8, 0], ["e", 0.0]]])
    with pytest.raises(TraceError, match="deadlocks.*rank 0 waits for message 0 from rank 1.*rank 1 waits"):
        replay(trace, "mesh:4x4")


@pytest.mark.parametrize("mutate, message", [
    (lambda rs: rs.pop(1), r"partial trace: rank\(s\) 1 of 2 missing"),
    (lambda rs: rs[0]["events"].insert(0, ["x", 1]), "unknown event kind 'x'"),
    (lambda rs: rs[0]["events"].insert(0, ["w", None, [[1, 4, 0.0]], []]), "never sent"),
    (lambda rs: rs[0]["events"].insert(0, ["c", -1.0]), "negative time"),
    (lambda rs: rs[0]["events"].insert(0, ["w", None, [[1, 0, -2.0]], []]), "negative due"),
    (lambda rs: rs[0]["events"].insert(0, ["w", -1, [], []]), "negative timeout"),
    (lambda rs: rs[1]["events"].pop(), "do not end with"),
    (lambda rs: rs[1].update(rank=0), "rank 0 also in"),
    (lambda rs: rs[1].update(topology="mesh:8x8"), "topology = 'mesh:8x8'"),
    (lambda rs: rs[0]["events"].insert(0, ["s", 2, 8, 0]), r"rank 2 is not in 0\.\.1"),
    (lambda rs: rs[0]["events"].insert(0, ["s", 1, 8, 5]), "message 5 to rank 1, expected 0"),
    (lambda rs: rs[0].pop("flit_bytes"), "missing field"),
    (lambda rs: rs[0].update(version=2), "version 2"),
])
def test_bad_traces_are_refused_with_a_clear_error(mutate, message):
    ranks = [{**header([0, 3]), "rank": r, "events": ev} for r, ev in enumerate(ping_pong(1, 8, 1e-6, 0.0))]
    mutate(ranks)
    with pytest.raises(TraceError, match=message):
        build([(f"rank-{i}.json", r) for i, r in enumerate(ranks)])


def test_unreadable_traces(tmp_path):
    with pytest.raises(TraceError, match="no such trace"):
        load_trace(tmp_path / "nope")
    with pytest.raises(TraceError, match="no rank-<r>.json files"):
        load_trace(tmp_path)
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(TraceError, match="not JSON"):
        load_trace(tmp_path / "bad.json")


def test_placements_are_checked():
    trace = make([0, 15], ping_pong(1, 8, 1e-6, 0.0))
    for bad, message in (([0], "placement of 1 nodes"), ([2, 2], "names a node twice"), ([0, 16], "not in mesh:4x4")):
        with pytest.raises(TraceError, match=message):
            replay(trace, "mesh:4x4", bad)
    assert math.isfinite(replay(trace, "hypercube:4", contiguous(trace, "hypercube:4")).elapsed)


def test_mcemu_net_replay(tmp_path, capsys):
    from emulator.cli import main

    lat = (6 + 101 - 1) * FLIT_S
    dump(make([0, 15], ping_pong(2, 800, 2e-6, lat)), tmp_path / "t.json")
    assert main(["net", "replay", str(tmp_path / "t.json"), "--out", str(tmp_path / "m.csv")]) == 0
    out = capsys.readouterr().out
    assert "replayed on mesh:4x4, placement contiguous" in out and "replay vs live: max difference 0.000 %" in out
    assert len((tmp_path / "m.csv").read_text().splitlines()) == 1 + 4
    (tmp_path / "p.json").write_text("[[0, 0], [1, 0]]")
    assert main(["net", "replay", str(tmp_path / "t.json"), "--mesh", "8x8", "--placement", str(tmp_path / "p.json"),
                 "--background", "ring:50", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["nodes"] == [0, 1] and doc["recorded"] is None and doc["background"]["paths"] == 62
    assert doc["messages"]["count"] == 4 and doc["elapsed_s"] > 2 * (2e-6 + 2 * 2 * FLIT_S)
    assert main(["net", "replay", str(tmp_path / "t.json"), "--placement", "scattered", "--background", "x:1"]) == 2
    assert "unknown pattern 'x'" in capsys.readouterr().err
