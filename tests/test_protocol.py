"""Protocol validation, and the daemon's handlers driven in memory (no sockets, no processes):
``Daemon.handle([identity, frame])`` with the replies read from its outbox."""
from __future__ import annotations

import math
import time

import msgpack
import pytest
from hypothesis import given, settings, strategies as st

from emulator.live import protocol as P
from emulator.live.daemon import Daemon
from emulator.live.manager import START_QUIET
from tests.fixtures.stub_daemon import Stub


# ---------------------------------------------------------------------- protocol


def test_round_trip_of_every_client_and_node_message():
    msgs = [
        ("submit", dict(id=1, request={"cube": 2}, runtime=5.0, name="a", command="true", burn=False)),
        ("submit", dict(id=2, request={"shape": [4, 2]}, runtime=1)),
        ("cancel", dict(id=3, job=7)),
        ("queue", dict(id=4, all=True)),
        ("register", dict(node=3, pid=100, host="h", tasks=[{"job": 1, "attempt": 1, "rank": 0, "pid": 5}],
                          finished=[{"job": 2, "attempt": 1, "rank": 1, "status": 0, "usage": {"utime": 0.1}}])),
        ("task_done", dict(node=3, job=1, attempt=1, rank=0, status=-9, usage={})),
        ("run", dict(job=1, attempt=1, rank=0, node=0, nodes=[0, 1], runtime_s=0.5, command=None)),
    ]
    for t, f in msgs:
        m = P.decode(P.encode(t, **f))
        assert m["type"] == t and m["v"] == P.VERSION
        for k, v in f.items():
            assert m[k] == (float(v) if k == "runtime" else v)


@pytest.mark.parametrize("frame, code", [
    (b"", "not-msgpack"),
    (b"\xc1", "not-msgpack"),
    (msgpack.packb([1, 2]), "not-a-map"),
    (msgpack.packb({"v": 2, "type": "ping", "id": 1}), "version"),
    (msgpack.packb({"v": True, "type": "ping", "id": 1}), "version"),
    (msgpack.packb({"v": 1, "type": "launch-missiles", "id": 1}), "unknown-type"),
    (msgpack.packb({"v": 1, "type": "ping"}), "missing-field"),
    (msgpack.packb({"v": 1, "type": "ping", "id": 1, "x": 0}), "unknown-field"),
    (msgpack.packb({"v": 1, "type": "cancel", "id": 1, "job": "7"}), "bad-field"),
    (msgpack.packb({"v": 1, "type": "cancel", "id": 1, "job": True}), "bad-field"),
    (msgpack.packb({"v": 1, "type": "cancel", "id": 1, "job": 0}), "bad-field"),
    (msgpack.packb({"v": 1, "type": "submit", "id": 1, "request": {"cube": 2}, "runtime": float("nan")}), "bad-field"),
    (msgpack.packb({"v": 1, "type": "submit", "id": 1, "request": {"cube": 2}, "runtime": -1}), "bad-field"),
    (msgpack.packb({"v": 1, "type": "submit", "id": 1, "request": {"pyramid": 2}, "runtime": 1}), "bad-field"),
    (msgpack.packb({"v": 1, "type": "submit", "id": 1, "request": {"shape": [4]}, "runtime": 1}), "bad-field"),
    (msgpack.packb({1: 2}), "not-msgpack"),  # non-string map keys are refused by the decoder
    (msgpack.packb(msgpack.ExtType(5, b"x")), "not-msgpack"),
    (msgpack.packb({"v": 1, "type": "ping", "id": 1}) + b"\x00", "not-msgpack"),
    (b"\x00" * (P.MAX_FRAME + 1), "too-large"),
])
def test_refused_frames_carry_a_code(frame, code):
    with pytest.raises(P.ProtocolError) as e:
        P.decode(frame)
    assert e.value.code == code
    assert str(e.value)


def test_error_keeps_the_request_id_when_it_is_readable():
    with pytest.raises(P.ProtocolError) as e:
        P.decode(msgpack.packb({"v": 1, "type": "cancel", "id": 42, "job": "x"}))
    assert e.value.req_id == 42


def test_allowed_restricts_the_types_a_peer_may_send():
    frame = P.encode("welcome", node=1, heartbeat=0.2, liveness=3)
    with pytest.raises(P.ProtocolError) as e:
        P.decode(frame, allowed=P.CLIENT_TYPES | P.NODE_TYPES)
    assert e.value.code == "unknown-type"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_decode_of_random_bytes_raises_only_protocol_errors(b):
    try:
        P.decode(b)
    except P.ProtocolError:
        pass


json_values = st.recursive(st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats() | st.text(max_size=10),
                           lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                           max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(P.SCHEMAS)), st.dictionaries(st.sampled_from(["id", "job", "node", "request", "runtime",
                                                                         "pid", "host", "rank", "attempt", "x"]),
                                                        json_values, max_size=6))
def test_decode_of_random_maps_raises_only_protocol_errors(t, fields):
    try:
        m = P.decode(msgpack.packb({"v": 1, "type": t, **fields}))
    except P.ProtocolError:
        return
    assert m["type"] == t  # what passes has every required field
    for k, (_, required) in P.SCHEMAS[t].items():
        assert not required or k in m


def _outcome(fn, msg):
    try:
        return "ok", fn(msg)
    except P.ProtocolError as e:
        return e.code, str(e)


node_values = st.one_of(st.integers(-3, 2**21), st.sampled_from([0, 1, 2**20, 2**20 + 1, 2**31, 2**31 + 1]),
                        st.booleans(), st.none(), st.floats(-1, 1e13), st.text(max_size=4),
                        st.lists(st.integers(-2, 2**21) | st.booleans(), max_size=5),
                        st.sampled_from([math.nan, math.inf, -math.inf, "", "x" * 256, "x" * 8193, (1, 2), 1.5]))
VALID = {  # one valid message of each type that has required fields beyond id
    "register": dict(node=3, pid=100, host="h"), "heartbeat": dict(node=1),
    "task_started": dict(node=1, job=2, attempt=1, rank=0, pid=9),
    "task_done": dict(node=1, job=2, attempt=1, rank=0, status=0, usage={"utime": 0.1}), "bye": dict(node=1),
    "switched": dict(node=1, slot=2, t_first=None, t_stop=1.0, t_cont=None, running=[1], stopped=[]),
    "welcome": dict(node=1, heartbeat=0.2, liveness=3),
    "run": dict(job=1, attempt=1, rank=0, node=0, nodes=[0, 1], runtime_s=0.5, command=None, burn=False, name="j"),
    "switch": dict(slot=1, stop=[1], run=[2]), "suspend": dict(job=1), "resume": dict(job=1, attempt=2),
    "kill": dict(job=1), "ack": dict(job=1, attempt=1, rank=0), "submit": dict(id=1, request={"cube": 2}, runtime=1),
    "cancel": dict(id=1, job=1), "ok": dict(id=1, data=None), "error": dict(code="x", message="y"),
    "job": dict(job=1, state="queued", t=0.0), "node": dict(node=1, state="idle", t=0.0),
    "snapshot": dict(t=0.0, data={}),
}


@settings(max_examples=1500, deadline=None)
@given(st.sampled_from(sorted(P.SCHEMAS)), st.sampled_from([None, P.NODE_TYPES, P.TO_NODE_TYPES]),
       st.sampled_from([1, 1, 1, True, 1.0, 2]), st.data())
def test_the_fast_path_accepts_and_refuses_exactly_what_the_field_checks_do(t, allowed, v, data):
    """validate() checks a valid message with set operations and inline integer checks; the
    result (or the error code and text) must be the field-by-field check's, for a valid
    message of each type with some of its fields changed or dropped, or a field added."""
    own = sorted(P.SCHEMAS[t])
    msg = {"v": v, "type": t, **({"id": 1} if "id" in own else {}), **VALID.get(t, {})}
    if own:
        msg.update(data.draw(st.dictionaries(st.sampled_from(own), node_values, max_size=2)))
        for k in data.draw(st.lists(st.sampled_from(own), max_size=1)):
            msg.pop(k, None)
    if data.draw(st.integers(0, 9)) == 0:
        msg[data.draw(st.sampled_from(["x", "id", "job", "node"]))] = 1
    fast = _outcome(lambda m: P.validate(m, allowed), dict(msg))
    slow = _outcome(lambda m: P._validate(m, allowed), dict(msg))
    assert fast == slow


keys = st.text(min_size=1, max_size=6).filter(lambda k: k not in ("v", "type"))
values = st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1) | st.floats(allow_nan=False) | st.text(max_size=40) \
    | st.lists(st.integers(0, 1 << 20), max_size=70)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(keys, values, max_size=20), st.lists(st.dictionaries(keys, values, max_size=18), max_size=4))
def test_encode_each_gives_each_message_as_if_packed_alone(common, each):
    """The common fields packed once, each message's own appended (map headers of 1, 3 bytes)."""
    each = [{k: v for k, v in e.items() if k not in common} for e in each]
    frames = P.encode_each("t", common, each)
    assert len(frames) == len(each)
    for f, e in zip(frames, each):
        assert msgpack.unpackb(f) == msgpack.unpackb(P.encode_unchecked("t", **common, **e))


def test_encode_each_refuses_a_field_given_twice_and_makes_the_daemons_run_messages():
    with pytest.raises(ValueError):
        P.encode_each("run", {"job": 1}, [{"job": 2}])
    with pytest.raises(ValueError):
        P.encode_each("run", {"job": 1}, [{"type": "x"}])
    nodes = list(range(64, 128))
    common = dict(job=3, attempt=1, nodes=nodes, runtime_s=0.5, command=None, burn=False, name="job3")
    frames = P.encode_each("run", common, [{"rank": r, "node": n} for r, n in enumerate(nodes)])
    for r, (f, n) in enumerate(zip(frames, nodes)):
        assert P.decode(f, allowed=P.TO_NODE_TYPES) == {"v": P.VERSION, "type": "run", **common, "rank": r, "node": n}


def test_the_fast_path_decodes_what_the_daemon_and_the_nodes_send():
    nodes = list(range(64))
    run = P.decode(P.encode_unchecked("run", job=3, attempt=1, rank=5, node=5, nodes=nodes, runtime_s=2,
                                      command=None, burn=False, name="job3"), allowed=P.TO_NODE_TYPES)
    assert run["nodes"] == nodes and run["runtime_s"] == 2.0 and isinstance(run["runtime_s"], float)
    with pytest.raises(P.ProtocolError, match="nodes"):
        P.decode(P.encode_unchecked("run", job=3, attempt=1, rank=5, node=5, nodes=[0, True], runtime_s=2))
    with pytest.raises(P.ProtocolError, match="rank"):
        P.decode(P.encode_unchecked("task_started", node=1, job=3, attempt=1, rank=-1, pid=7))


# ---------------------------------------------------------------------- daemon handlers in memory


def test_submit_runs_on_registered_nodes_and_completes(tmp_path):
    s = Stub(tmp_path)
    r = s.call("submit", request={"cube": 1}, runtime=2)
    assert r["type"] == "ok" and r["data"]["state"] == "queued"  # no node is up yet
    runs = s.register_all()
    assert sorted(m["node"] for _, m in runs) == [0, 1]
    assert all(i == b"n%d" % m["node"] and m["nodes"] == [0, 1] for i, m in runs)
    assert {m["rank"] for _, m in runs} == {0, 1}
    assert runs[0][1]["runtime_s"] == pytest.approx(2 * 0.01)
    jid = r["data"]["job"]
    for i, m in runs:
        out = s.send(i, "task_done", node=m["node"], job=jid, attempt=1, rank=m["rank"], status=0, usage={"utime": 0.5})
        assert out[0][1]["type"] == "ack"
    q = s.call("queue", all=True)["data"]["jobs"]
    assert q[0]["state"] == "completed" and q[0]["exit"] == [0, 0] and q[0]["usage"]["utime"] == 1.0
    assert [n["state"] for n in s.call("nodes")["data"]["nodes"]] == ["idle"] * 4


def test_a_processor_count_runs_that_many_tasks_and_holds_its_whole_allocation(tmp_path):
    """3 processors on a hypercube: a 2-cube is allocated (4 nodes), 3 tasks run (mpiexec -n 3),
    and the fourth node is held: busy in the monitor's snapshot and counted in the job's nodes
    for node-time, as the simulator counts the allocation."""
    from emulator.live import views

    s = Stub(tmp_path)
    s.register_all()
    out = s.send(b"client", "submit", id=1, request={"nodes": 3}, runtime=5)
    runs = sorted(m["rank"] for _, m in out if m["type"] == "run")
    assert runs == [0, 1, 2] and all(m["nodes"] == next(iter(s.d.jobs.values())).nodes for _, m in out
                                     if m["type"] == "run")
    (jr,) = s.d.jobs.values()
    assert len(jr.nodes) == 3 and len(jr.spare) == 1 and sorted(jr.nodes + jr.spare) == [0, 1, 2, 3]
    snap = views.snapshot(s.d)
    assert snap["nodes"] == ["busy"] * 4 and sorted(snap["running"][str(jr.id)]) == [0, 1, 2, 3]
    for r, n in enumerate(jr.nodes):
        s.send(b"n%d" % n, "task_done", node=n, job=jr.id, attempt=1, rank=r, status=0, usage={})
    assert jr.state == "completed" and jr.exit == [0, 0, 0]
    assert views.snapshot(s.d)["nodes"] == ["idle"] * 4


def test_heartbeat_waves_wait_while_a_job_starts(tmp_path):
    """Between a job's ``run`` messages and its last ``task_started``, the loop holds its
    heartbeat waves and snapshots back (START_QUIET at most); a start that never completes
    stops holding them when the window ends."""
    s = Stub(tmp_path)
    s.register_all()
    assert s.d.quiet_until == 0.0
    t = time.monotonic()
    jid = s.call("submit", request={"cube": 1}, runtime=5)["data"]["job"]
    assert s.d.starting == {jid} and t < s.d.quiet_until <= time.monotonic() + START_QUIET
    s.send(b"n0", "task_started", node=0, job=jid, attempt=1, rank=0, pid=10)
    assert s.d.quiet_until > 0.0  # one task still to start
    s.send(b"n1", "task_started", node=1, job=jid, attempt=1, rank=1, pid=11)
    assert s.d.starting == set() and s.d.quiet_until == 0.0


def test_a_heartbeat_frame_counts_for_its_own_node_only(tmp_path):
    s = Stub(tmp_path)
    s.register_all()
    s.d.nodes[1].last = 0.0
    assert s.send(b"n1", "heartbeat", node=1) == [] and s.d.nodes[1].last > 0.0
    s.d.nodes[1].last = 0.0
    s.send(b"n0", "heartbeat", node=1)  # node 0's connection cannot keep node 1 alive
    assert s.d.nodes[1].last == 0.0
    assert s.send(b"stranger", "heartbeat", node=1)[0][1]["code"] == "unregistered"


def test_bad_requests_get_clear_errors_and_change_nothing(tmp_path):
    s = Stub(tmp_path)
    s.register_all()
    r = s.call("submit", request={"cube": 3}, runtime=1)
    assert r["type"] == "error" and r["code"] == "bad-request" and "3-cube" in r["message"]
    r = s.call("cancel", job=99)
    assert r["type"] == "error" and r["code"] == "not-active"
    out = s.send(b"stranger", "task_done", node=0, job=1, attempt=1, rank=0, status=0, usage={})
    assert out[0][1]["code"] == "unregistered"
    out = s.send(b"n0", "task_done", node=1, job=1, attempt=1, rank=0, status=0, usage={})
    assert out[0][1]["code"] == "bad-node"
    out = s.send(b"x", "register", node=4, pid=1, host="h")
    assert out[0][1]["code"] == "bad-node"
    s.d.handle([b"x", b"a", b"b"])
    assert P.decode(s.d.outbox.pop()[1])["code"] == "frames"
    assert s.call("queue", all=True)["data"]["jobs"] == []
    assert s.d.next_id == 1


def test_missed_heartbeats_requeue_then_fail(tmp_path):
    s = Stub(tmp_path, max_requeue=1)
    s.register_all()
    jid = s.call("submit", request={"cube": 1}, runtime=5)["data"]["job"]
    job = s.d.jobs[jid]
    assert job.state == "running" and job.nodes == [0, 1]
    s.d.nodes[0].last = time.monotonic() - 10  # node 0 went silent
    s.d.from_nodes.purge(time.monotonic())
    kills = [(i, P.decode(f)) for i, f in s.d.outbox if P.decode(f)["type"] == "kill"]
    assert [i for i, _ in kills] == [b"n1"]  # the other task is killed
    assert job.state == "running" and job.attempt == 2 and 0 not in job.nodes  # requeued elsewhere
    s.d.outbox.clear()
    s.d.nodes[job.nodes[0]].last = time.monotonic() - 10
    s.d.from_nodes.purge(time.monotonic())
    assert job.state == "failed" and "2 faults, more than --max-requeue 1" in job.reason, job.reason
    assert s.d.node_state(0) == "down"
    s.d.outbox.clear()
    out = s.send(b"n0-again", "register", node=0, pid=999, host="h")  # it comes back
    assert out[0][1]["type"] == "welcome" and s.d.node_state(0) == "idle"


def test_started_is_published_for_every_attempt(tmp_path):
    """A requeued job's tasks start again: its "started" event must come again too (a
    client waiting for it, e.g. the latency benchmark, would otherwise wait forever)."""
    s = Stub(tmp_path, max_requeue=1)
    s.register_all()
    jid = s.call("submit", request={"cube": 0}, runtime=5)["data"]["job"]
    job = s.d.jobs[jid]

    def started_events():
        return [P.decode(f) for topic, f in s.d.events if topic == b"job" and P.decode(f)["state"] == "started"]

    first = job.nodes[0]
    s.send(b"n%d" % first, "task_started", node=first, job=jid, attempt=1, rank=0, pid=7)
    assert [e["job"] for e in started_events()] == [jid]
    s.d.events.clear()
    s.d.nodes[first].last = time.monotonic() - 10  # its node goes silent: requeued elsewhere
    s.d.from_nodes.purge(time.monotonic())
    assert job.state == "running" and job.attempt == 2 and job.nodes[0] != first
    assert started_events() == []  # not before the new task reports
    second = job.nodes[0]
    s.send(b"n%d" % second, "task_started", node=second, job=jid, attempt=2, rank=0, pid=8)
    assert [(e["job"], e["info"]["attempt"]) for e in started_events()] == [(jid, 2)]


def test_journal_replay_rebuilds_the_policy_state(tmp_path):
    s = Stub(tmp_path)
    s.register_all()
    a = s.call("submit", request={"cube": 1}, runtime=5)["data"]["job"]
    b = s.call("submit", request={"cube": 2}, runtime=5)["data"]["job"]  # waits behind a
    c = s.call("submit", request={"cube": 0}, runtime=5)["data"]["job"]
    s.call("cancel", job=c)
    s.d.journal.commit()
    before = {j: (r.state, r.nodes, r.attempt) for j, r in s.d.jobs.items()}
    s.d.journal.db.close()
    d2 = Daemon(tmp_path, {}, grace=0.5)  # the settings come from the journal
    assert {j: (r.state, r.nodes, r.attempt) for j, r in d2.jobs.items()} == before
    assert before[a][0] == "running" and before[b][0] == "queued" and before[c][0] == "cancelled"
    assert d2.policy.allocator.free_count == 2 and d2.next_id == c + 1
    assert d2.down == set()  # nodes up before the crash get a grace period
    with pytest.raises(ValueError, match="journal was started with"):
        Daemon(tmp_path, {"topology": "hypercube:3"})


def test_reregistration_reconciles_tasks(tmp_path):
    s = Stub(tmp_path)
    s.register_all()
    jid = s.call("submit", request={"cube": 1}, runtime=5)["data"]["job"]
    # node 0 reconnects (same process): it reports its task alive and a stale one to kill
    out = s.send(b"n0b", "register", node=0, pid=100, host="h",
                 tasks=[{"job": jid, "attempt": 1, "rank": 0, "pid": 7}, {"job": 55, "attempt": 1, "rank": 0, "pid": 8}])
    types = [(m["type"], m.get("job")) for _, m in out]
    assert ("kill", 55) in types and ("run", jid) not in types
    # node 1 reconnects without its task and with its result: counted once, acked
    out = s.send(b"n1b", "register", node=1, pid=101, host="h",
                 finished=[{"job": jid, "attempt": 1, "rank": 1, "status": 0, "usage": {}}])
    assert ("ack", jid) in [(m["type"], m.get("job")) for _, m in out]
    s.send(b"n0b", "task_done", node=0, job=jid, attempt=1, rank=0, status=0, usage={})
    assert s.d.jobs[jid].state == "completed"
    # a node restarted (new pid) loses its tasks: the job is requeued
    j2 = s.call("submit", request={"cube": 0}, runtime=5)["data"]["job"]
    n = s.d.jobs[j2].nodes[0]
    s.send(b"new", "register", node=n, pid=4242, host="h")
    assert s.d.jobs[j2].attempt == 2 and s.d.jobs[j2].faults == 1


def test_snapshot_events_decode_with_running_jobs(tmp_path):
    # the monitor decodes PUB snapshots with the same strict decoder: map keys must be strings
    s = Stub(tmp_path)
    s.register_all()
    r = s.call("submit", request={"cube": 1}, runtime=50)
    frame = P.encode_unchecked("snapshot", t=s.d.now(), data=s.d.snapshot())
    m = P.decode(frame, max_size=P.MAX_REPLY)
    assert m["data"]["running"] == {str(r["data"]["job"]): [0, 1]}
