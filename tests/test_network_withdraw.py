"""Withdrawing messages from the wormhole model (issue 30: an ended job's worms must not hold up
the next job on its nodes): hand-worked cases, the model's invariants under random sends and
withdrawals, the driver's withdraw and the statistics of a job held up at its start."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.network import NetworkDriver, NetworkError, Wormhole
from scheduler.network.stats import MessageStats
from scheduler.network.wormhole import INF, _INJECT

# ------------------------------------------------------------------ the model's state, read by the tests


def in_model(net: Wormhole) -> dict:
    """tag -> "pending" (no channel yet) or "moving" (holds channels, header not arrived)."""
    out = {}
    for e in net._heap:
        if e[1] == _INJECT:
            out[e[3][3]] = "pending"
    for _, m in net._hops:
        out[m[3]] = "moving"
    for q in net.waiters:
        for m in q or ():
            out[m[3]] = "moving" if m[1] else "pending"
    return out


def check_invariants(net: Wormhole) -> None:
    """Every channel's holders and waiters agree with its release time and its booked grant."""
    grants: dict[int, float] = {}
    seen = []
    for e in net._heap:
        if e[1] == _INJECT:
            seen.append(e[3])
        else:
            assert e[3] not in grants, f"two grants booked for channel {e[3]}"
            grants[e[3]] = e[0]
    held: dict[int, object] = {}

    def holds(m):
        k = m[1]
        for r in m[0][max(0, k - m[5]):k]:
            assert r not in held, f"channel {r} held by {held[r]} and {m[3]}"
            held[r] = m[3]

    for _, m in net._hops:
        seen.append(m)
        holds(m)
    for c, q in enumerate(net.waiters):
        if q is None:
            assert c not in grants, f"a grant booked for channel {c}, which nobody waits for"
            continue
        assert q, f"channel {c}: an empty queue is None"
        for m in q:
            assert m[0][m[1]] == c
            seen.append(m)
            if m[1]:
                holds(m)
        if net.free_at[c] != INF:
            assert grants.get(c) == net.free_at[c], f"channel {c}: waiters and a known release, no grant"
        else:
            assert c not in grants
    assert {c for c, f in enumerate(net.free_at) if f == INF} == set(held)
    assert len({id(m) for m in seen}) == len(seen) == net.in_flight


def drain(net: Wormhole, until: float = INF) -> list:
    out = []
    while True:
        got = net.advance(until)
        if not got:
            return out
        out += got


# ------------------------------------------------------------------ hand-worked


def test_queued_worms_go_and_the_next_message_is_not_held_up():
    # the case: an ended job's 64 KiB worms queued at one channel; the next job's
    # message waits for the one already on its way (header arrived) and no other
    big, L = 32769, 500
    net = Wormhole("mesh:4x1", length=L)
    for i in range(50):
        net.send(0, 1, 0.0, ("old", i), big)
    (first,) = drain(net, 10.0)
    assert first.tag == ("old", 0)
    taken = []
    assert net.withdraw({("old", i) for i in range(50)}, taken) == 49
    assert sorted(taken) == [("old", i) for i in range(1, 50)]
    check_invariants(net)
    net.send(0, 1, 10.0, "new")
    got = drain(net)
    assert [d.tag for d in got] == ["new"]
    assert got[0].first == big  # channel 0 free when the old tail crossed it
    assert net.in_flight == 0 and net.withdrawn == 49 and net.delivered == 2


def test_a_grant_booked_for_a_withdrawn_waiter_goes_with_it():
    # b waits for channel 0 (released at 10): its grant is booked then; once b is withdrawn,
    # x takes the free channel at 10 and y must wait for x's tail, not be granted by b's event
    L = 10
    net = Wormhole("mesh:4x1", length=L)
    net.send(0, 1, 0.0, "a")
    net.send(0, 1, 1.0, "b")
    early = drain(net, 5.0)
    assert net.withdraw(["b"]) == 1
    check_invariants(net)
    net.send(0, 1, 10.0, "x")
    net.send(0, 1, 10.0, "y")
    got = {d.tag: d.delivered for d in early + drain(net)}
    assert got == {"a": 1 + L - 1, "x": 10 + 1 + L - 1, "y": 20 + 1 + L - 1}


def test_cut_releases_a_blocked_worms_channels_now():
    # b (0->3) holds channels 0, 1 and waits at channel 2 (a's until L); c (1->2) waits for
    # channel 1. Cut at 4, b's channels go: c gets channel 1 at 4, not after b's tail
    L = 10
    net = Wormhole("mesh:8x1", length=L)
    net.send(2, 4, 0.0, "a")
    net.send(0, 3, 0.0, "b")
    net.send(1, 2, 1.5, "c")
    early = drain(net, 4.0)
    assert in_model(net) == {"b": "moving", "c": "pending"}
    assert net.withdraw({"b"}) == 1
    check_invariants(net)
    got = {d.tag: d for d in early + drain(net)}
    assert set(got) == {"a", "c"}
    assert got["c"].first == 4.0 and got["c"].delivered == 4 + 1 + L - 1
    assert net.busy_time(0) == 4.0  # b held channel 0 from 0 to the cut


def test_without_cut_a_worm_on_its_way_finishes():
    L = 10
    net = Wormhole("mesh:8x1", length=L)
    net.send(2, 4, 0.0, "a")
    net.send(0, 3, 0.0, "b")
    net.send(1, 2, 1.5, "c")
    early = drain(net, 4.0)
    assert net.withdraw({"b", "c"}, cut=False) == 1  # c had no channel; b goes on
    check_invariants(net)
    assert {d.tag: d.delivered for d in early + drain(net)} == {"a": 2 + L - 1, "b": L + 1 + L - 1}


def test_a_message_to_its_own_node_and_unknown_tags():
    net = Wormhole("mesh:2x2", length=4)
    net.send(3, 3, 2.0, "self")
    net.send(0, 3, 0.0, "other")
    assert net.withdraw({"self", "nobody", None}) == 1
    assert [d.tag for d in drain(net)] == ["other"]


@pytest.mark.parametrize("bad", ["ab", b"ab", [["unhashable"]], 5])
def test_bad_tags_are_refused_and_change_nothing(bad):
    net = Wormhole("mesh:4x1", length=5)
    net.send(0, 3, 0.0, "a")
    drv = NetworkDriver(net)
    with pytest.raises(NetworkError, match="collection"):
        drv.withdraw(bad, 2.0)
    assert net.now == 0.0 and net.in_flight == 1 and in_model(net) == {"a": "pending"}


# ------------------------------------------------------------------ the driver


def test_driver_withdraws_at_a_time_and_keeps_certain_deliveries():
    L = 10
    drv = NetworkDriver(Wormhole("mesh:4x1", length=L))
    drv.send(0, 1, 0.0, "a")  # header arrives at 1: certain
    drv.send(0, 1, 0.0, "b")  # waits for channel 0
    drv.send(2, 3, 5.0, "c")  # not injected yet
    assert sorted(drv.withdraw(["a", "b", "c"], 2.0)) == ["b", "c"]
    assert drv.net.now == 2.0
    assert [(t, d.tag) for t, d in drv.due(INF)] == [(L, "a")]
    drv.advance(INF)
    assert drv.due(INF) == [] and drv.net.next_time() is None


def test_a_job_held_up_at_its_start_says_so():
    # the warm-up message takes the whole wait: slowdown 1.0, but the unmeasured contention shows it
    drv = NetworkDriver(Wormhole("mesh:4x1", length=10))
    stats = MessageStats()
    drv.send(0, 1, 0.0, "old", 100)
    drv.send(0, 1, 1.0, "warm-up")
    drv.advance(INF)
    for _, d in drv.due(INF):
        if d.tag == "warm-up":
            drv.record(stats, d, measured=False)
            done = d.delivered
    drv.send(0, 1, done, "measured")  # the closed loop: the next message once the last is in
    drv.advance(INF)
    ((_, d),) = drv.due(INF)
    drv.record(stats, d)
    s = stats.summary(lambda t: t)
    assert s["slowdown"] == 1.0 and s["count"] == 1 and s["messages"] == 2
    assert s["unmeasured_contention_us"] == 100 - 1  # waited for the old tail: sent at 1, first at 100
    fresh = MessageStats()
    fresh.add(10.0, 10.0, 10.0)
    assert fresh.summary(lambda t: t)["unmeasured_contention_us"] is None


# ------------------------------------------------------------------ properties

TOPOLOGY, NODES, LONGEST = "mesh:4x2", 8, 12
# sends bunched in time on a small machine, so that worms meet and queue; withdrawals while they do
message = st.tuples(st.integers(0, NODES - 1), st.integers(0, NODES - 1), st.integers(0, 20),
                    st.integers(1, LONGEST))
withdrawal = st.tuples(st.integers(0, 40), st.lists(st.integers(0, 29), max_size=20))
messages = st.lists(message, min_size=1, max_size=30)  # indices of a withdrawal: modulo their number


def run(msgs, withdrawals, cut, mode="withdraw"):
    """Send ``msgs`` (src, dst, at, length; tag: the index) and withdraw (time, indices) at the
    given times, advancing the model to each action's time. ``mode`` "nothing": withdraw only
    the indices no message in the model answers to (unknown, delivered, not yet sent, and
    without ``cut`` those on their way); "skip": advance to the times but do not call.
    Returns (deliveries, model, the tags each withdrawal took)."""
    net = Wormhole(TOPOLOGY, length=6)
    actions = sorted([(at, 0, i) for i, (_, _, at, _) in enumerate(msgs)] +
                     [(t, 1, k) for k, (t, _) in enumerate(withdrawals)])
    out, took = [], []
    for t, kind, i in actions:
        out += drain(net, t)
        if kind == 0:
            src, dst, at, length = msgs[i]
            net.send(src, dst, at, i, length)
        elif mode != "skip":
            state = in_model(net)
            goes = {"pending", "moving"} if cut else {"pending"}
            tags = {x % len(msgs) for x in withdrawals[i][1]}
            if mode == "nothing":
                tags = {x for x in tags if state.get(x) not in goes} | {"unknown"}
            want = {x for x in tags if state.get(x) in goes}
            taken = []
            assert net.withdraw(tags, taken, cut) == len(taken) == len(want)
            assert set(taken) == want
            took.append(want)
            check_invariants(net)
            if cut and tags >= set(state):  # all of it: what is left goes within the longest tail
                assert max(net.free_at) <= net.now + LONGEST
    out += drain(net)
    return out, net, took


@settings(max_examples=300, deadline=None)
@given(messages, st.lists(withdrawal, max_size=4), st.booleans())
def test_random_withdrawals_keep_the_model_whole(msgs, withdrawals, cut):
    out, net, took = run(msgs, withdrawals, cut)
    taken = set().union(*took)
    tags = [d.tag for d in out]
    assert len(tags) == len(set(tags)), "a message delivered twice"
    assert set(tags) == set(range(len(msgs))) - taken  # no taken one, ever; every other one
    assert net.in_flight == 0 and net.withdrawn == len(taken) and net.delivered == len(out)
    assert net._heap == [] and not net._hops and all(q is None for q in net.waiters)
    assert INF not in net.free_at  # every channel free at the end
    for d in out:
        src, dst, at, length = msgs[d.tag]
        assert d.delivered >= at + d.hops + length - 1


@settings(max_examples=200, deadline=None)
@given(messages, st.lists(withdrawal, max_size=4), st.booleans())
def test_a_withdrawal_of_nothing_changes_nothing(msgs, withdrawals, cut):
    """The run is the one without the calls, cut into the same advances."""
    out, net, took = run(msgs, withdrawals, cut, "nothing")
    plain, plain_net, _ = run(msgs, withdrawals, cut, "skip")
    assert not any(took) and net.withdrawn == 0
    assert out == plain
    assert net.busy == plain_net.busy and net.free_at == plain_net.free_at and net.now == plain_net.now
