"""The output of a node whose output directory is not the daemon's (another host, another
MCEMU_HOME) reaches the daemon's ``output/`` (emulator.live.outsink, nodes.outfwd), where
``mcemu run`` streams it. In memory first (the daemon's handler: only the node running the
task, bounded frames, offsets, a cap; bad frames change nothing), then with real processes:
a node of another home joined over tcp with its key, and ``mcemu run --label``."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import msgpack
import pytest

from conftest import ALLOCATOR, SCHEDULER, free_port, node_states, wait_for
from emulator.live import outsink
from emulator.live import protocol as P
from nodes.outfwd import POLL_BYTES, OutputForwarder
from test_cli_run import Run
from tests.fixtures.stub_daemon import Stub


def _job(s: Stub, command="echo hi"):
    """Every node registered and a 2-cube command job running on nodes 0..3 (rank r on node r)."""
    s.register_all()
    assert s.call("submit", request={"cube": 2}, runtime=50.0, command=command)["type"] == "ok"
    (jr,) = s.d.jobs.values()
    assert jr.state == "running" and jr.nodes == [0, 1, 2, 3]
    return jr


def _out(s: Stub, node: int, **f):
    f = {"node": node, "job": 1, "attempt": 1, "rank": node, "offset": 0, "data": b"", **f}
    return s.send(b"n%d" % node, "output", **f)


def _raw(s: Stub, ident: bytes, **fields) -> list:
    """A frame the encoder would refuse, as a hostile peer sends it; the replies."""
    s.d.handle([ident, msgpack.packb({"v": P.VERSION, "type": "output", **fields}, use_bin_type=True)])
    out = [(i, P.decode(fr, max_size=P.MAX_REPLY)) for i, fr in s.d.outbox]
    s.d.outbox.clear()
    return out


def test_the_running_node_writes_its_ranks_file_once_in_order_and_a_resend_adds_nothing(tmp_path):
    s = Stub(tmp_path)
    welcome = s.send(b"n0", "register", node=0, pid=100, host="far")[0][1]
    assert welcome["output_id"] == outsink.output_id(tmp_path / "output")  # the id nodes compare with
    jr = _job(s)
    f = tmp_path / "output" / f"job{jr.id}.2.out"
    assert _out(s, 2, data=b"one\ntw") == []
    assert _out(s, 2, data=b"one\ntw") == []            # a resend (a reconnection): nothing twice
    assert _out(s, 2, offset=4, data=b"two\nthr") == []  # overlapping: only what is new
    assert f.read_bytes() == b"one\ntwo\nthr"
    # a gap (a frame lost): nothing written, the node is told where to send from, once
    out = _out(s, 2, offset=20, data=b"later\n")
    assert [(i, m["type"], m["offset"], m["rank"]) for i, m in out] == [(b"n2", "output_at", 11, 2)]
    assert _out(s, 2, offset=30, data=b"later\n") == []
    assert f.read_bytes() == b"one\ntwo\nthr"
    _out(s, 2, offset=11, data=b"ee\n")
    assert f.read_bytes() == b"one\ntwo\nthree\n" and oct(f.stat().st_mode & 0o777) == "0o600"
    # a daemon restarted (its memory of the task lost): the node sends all again from the start,
    # rewritten in place, so that `mcemu run`, which reads on from where it was, sees nothing twice
    s.d.from_nodes.output.outs.clear()
    _out(s, 2, data=b"one\n")
    assert f.read_bytes() == b"one\ntwo\nthree\n"
    _out(s, 2, offset=4, data=b"two\nthree\nfour\n")
    assert f.read_bytes() == b"one\ntwo\nthree\nfour\n"
    # an older cluster's file of this job id (another t0) is not this attempt's: it starts afresh
    s.d.from_nodes.output.outs.clear()
    (tmp_path / "output" / f".job{jr.id}.2.attempt").write_text("1 12.5")
    _out(s, 2, data=b"one\n")
    assert f.read_bytes() == b"one\n"
    _out(s, 2, offset=4, data=b"two\nthree\n")
    # its end: later frames of that task are stale and change nothing
    s.send(b"n2", "task_done", node=2, job=jr.id, attempt=1, rank=2, status=0, usage={})
    assert _out(s, 2, offset=14, data=b"after the end\n") == []
    assert f.read_bytes() == b"one\ntwo\nthree\n"


def test_a_gap_still_there_later_is_answered_again(tmp_path, monkeypatch):
    """The answer to a gap may be lost with its connection: the node would send past it for ever."""
    s = Stub(tmp_path)
    _job(s)
    assert [m["offset"] for _, m in _out(s, 1, offset=5, data=b"x")] == [0]
    assert _out(s, 1, offset=6, data=b"y") == []
    monkeypatch.setattr(outsink, "ASK_AGAIN", -1.0)
    assert [m["offset"] for _, m in _out(s, 1, offset=7, data=b"z")] == [0]


def test_output_of_a_task_the_node_does_not_run_is_refused_and_changes_nothing(tmp_path):
    s = Stub(tmp_path)
    jr = _job(s)
    out = _out(s, 1, rank=2, data=b"not mine\n")  # node 1 runs rank 1, not rank 2
    assert [(i, m["type"], m["code"]) for i, m in out] == [(b"n1", "error", "forbidden")]
    assert _out(s, 1, attempt=2, rank=1, data=b"no such attempt\n") == []  # stale: dropped
    assert _out(s, 1, job=99, rank=1, data=b"no such job\n") == []
    out = s.send(b"n1", "output", node=2, job=1, attempt=1, rank=2, offset=0, data=b"posing as node 2\n")
    assert [m["code"] for _, m in out] == ["bad-node"]
    out = s.send(b"stranger", "output", node=1, job=1, attempt=1, rank=1, offset=0, data=b"x\n")
    assert [m["code"] for _, m in out] == ["unregistered"]
    assert not list((tmp_path / "output").glob("job*"))
    s.call("cancel", job=jr.id)
    (tmp_path / "synthetic").mkdir()
    s2 = Stub(tmp_path / "synthetic")
    _job(s2, command=None)
    assert [m["code"] for _, m in _out(s2, 0, data=b"a synthetic task prints nothing\n")] == ["forbidden"]


@pytest.mark.parametrize("fields, code", [
    ({"data": b"x" * (P.MAX_CHUNK + 1)}, "bad-field"),            # one frame is at most 64 KiB
    ({"offset": -1, "data": b"x"}, "bad-field"),
    ({"offset": P.MAX_OFFSET + 1, "data": b"x"}, "bad-field"),
    ({"job": "../../etc/passwd", "data": b"x"}, "bad-field"),     # no path from the wire
    ({"rank": 1.5, "data": b"x"}, "bad-field"),
    ({"job": True, "data": b"x"}, "bad-field"),
    ({"data": "text, not bytes"}, "bad-field"),
    ({"data": b"x", "path": "/tmp/x"}, "unknown-field"),
    ({"data": None}, "bad-field"),
])
def test_a_hostile_frame_gets_an_error_and_changes_nothing(tmp_path, fields, code):
    s = Stub(tmp_path)
    _job(s)
    msg = {"node": 1, "job": 1, "attempt": 1, "rank": 1, "offset": 0, **fields}
    out = _raw(s, b"n1", **msg)
    assert [(i, m["type"], m["code"]) for i, m in out] == [(b"n1", "error", code)]
    assert not list((tmp_path / "output").glob("job*"))
    assert _out(s, 1, data=b"fine\n") == [] and (tmp_path / "output" / "job1.1.out").read_bytes() == b"fine\n"


def test_a_chunk_larger_than_any_frame_is_refused_before_it_is_decoded(tmp_path):
    s = Stub(tmp_path)
    _job(s)
    out = _raw(s, b"n1", node=1, job=1, attempt=1, rank=1, offset=0, data=b"x" * P.MAX_FRAME)
    assert [m["code"] for _, m in out] == ["too-large"]
    assert not list((tmp_path / "output").glob("job*"))


def test_past_the_cap_one_line_says_the_output_was_cut(tmp_path, monkeypatch):
    monkeypatch.setattr(outsink, "MAX_OUTPUT", 10)
    s = Stub(tmp_path)
    _job(s)
    _out(s, 0, data=b"12345\n678")
    _out(s, 0, offset=9, data=b"9abc\ndef\n")
    _out(s, 0, offset=18, data=b"more\n")
    lines = (tmp_path / "output" / "job1.0.out").read_bytes().split(b"\n")
    assert lines[:2] == [b"12345", b"6789"] and b"was cut here" in lines[2] and lines[3:] == [b""]


def test_a_new_attempt_starts_its_file_afresh(tmp_path):
    s = Stub(tmp_path)
    jr = _job(s)
    _out(s, 3, data=b"first attempt\n")
    s.send(b"n3", "register", node=3, pid=999, host="h")  # node 3 restarted: its task lost, the job requeued
    assert (jr.state, jr.attempt, jr.nodes) == ("running", 2, [0, 1, 2, 3]), jr.reason
    assert _out(s, 3, attempt=2, data=b"second\n") == []
    assert (tmp_path / "output" / "job1.3.out").read_bytes() == b"second\n"
    assert _out(s, 3, offset=14, data=b"late\n") == []  # the old attempt's: dropped
    assert (tmp_path / "output" / "job1.3.out").read_bytes() == b"second\n"


def test_a_node_forwards_only_from_another_directory(tmp_path):
    mine, other = tmp_path / "home" / "output", tmp_path / "elsewhere"
    theirs = outsink.make_output_id(mine)
    assert outsink.make_output_id(mine) == theirs  # kept: made once
    other.mkdir()

    def forwarder(d):
        f = OutputForwarder(SimpleNamespace(output_dir=str(d) if d else None, clock=time.monotonic))
        f.welcome({"output_id": theirs})
        return f.on
    assert not forwarder(mine)  # the daemon's own directory: its file is the one `mcemu run` reads
    assert forwarder(other) and forwarder(tmp_path / "missing")
    assert not forwarder(None)  # no output kept, none to send
    f = OutputForwarder(SimpleNamespace(output_dir=str(other), clock=time.monotonic))
    f.welcome({})  # a daemon that asks for none
    assert not f.on


def _agent(tmp_path, sent, ok=lambda: True):
    """What the forwarder uses of the agent (nodes.agent): its tasks, its clock, its socket."""
    def send(type_, **f):
        if not ok():
            return False
        sent.append((type_, f))
        return True
    table = SimpleNamespace(tasks={})
    return SimpleNamespace(node=5, output_dir=str(tmp_path), clock=time.monotonic, table=table, _send=send)


def test_a_forwarding_node_reads_bounded_chunks_and_sends_a_tasks_end_after_its_output(tmp_path):
    sent, full = [], []
    a = _agent(tmp_path, sent, ok=lambda: not full)
    fwd = OutputForwarder(a)
    fwd.welcome({"output_id": "daemons"})  # this directory holds no id: forward
    out = tmp_path / "job1.0.out"
    body = bytes(range(256)) * 4096 + b"end\n"  # 1 MiB and a line
    out.write_bytes(body)
    t = SimpleNamespace(job=1, attempt=1, rank=0, out=str(out))
    a.table.tasks[(1, 1)] = t
    assert fwd.started(t) is not None
    fwd.poll()
    frames = [f for ty, f in sent if ty == "output"]
    assert sum(len(f["data"]) for f in frames) == POLL_BYTES  # one look is bounded: the loop goes on
    assert all(len(f["data"]) <= P.MAX_CHUNK for f in frames) and fwd.due <= time.monotonic()
    full.append(1)  # the socket's queue is full: nothing is taken as sent
    fwd.poll()
    assert len([f for ty, f in sent if ty == "output"]) == len(frames) and fwd.due > time.monotonic()
    full.clear()
    del a.table.tasks[(1, 1)]  # it ended: its task_done waits for the rest of its output
    rec = {"job": 1, "attempt": 1, "rank": 0, "status": 0, "usage": {}}
    assert fwd.hold(t, rec) and (1, 1) in fwd.held
    fwd.rewind({"job": 1, "attempt": 1, "rank": 0, "offset": 1000})  # the daemon lacks a lost frame
    for _ in range(100):
        if (1, 1) not in fwd.held:
            break
        fwd.poll()
    assert sent[-1] == ("task_done", {"node": 5, **rec}) and fwd.due is None
    got = bytearray()
    for ty, f in sent[:-1]:
        assert ty == "output" and f["offset"] <= len(got)
        got[f["offset"]:f["offset"] + len(f["data"])] = f["data"]
    assert bytes(got) == body
    # a reconnection before the daemon acknowledged that end: sent again from the start, then the end
    sent.clear()
    fwd.registering()
    assert (1, 1) in fwd.held and fwd.due == 0.0
    while (1, 1) in fwd.held:
        fwd.poll()
    assert sum(len(f["data"]) for ty, f in sent if ty == "output") == len(body) and sent[-1][0] == "task_done"
    fwd.acked((1, 1))
    sent.clear()
    fwd.registering()
    assert not fwd.held and not fwd.at and sent == []
    # a node of the daemon's own directory sends nothing and holds no task's end
    fwd = OutputForwarder(_agent(tmp_path, sent := []))
    fwd.welcome({"output_id": outsink.make_output_id(tmp_path)})
    assert fwd.started(t) is None and not fwd.hold(t, rec) and sent == []


# ---------------------------------------------------------------------- real processes

PROG = """\
import os, sys, time
r = int(os.environ["MCEMU_RANK"])
pad = "." * int(sys.argv[3]) if len(sys.argv) > 3 else ""
for i in range(int(sys.argv[2])):
    print("line", i, "of", r, pad, "at", repr(time.time()))
deadline = time.monotonic() + 60
while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
    time.sleep(0.02)
for i in range(int(sys.argv[2]) if pad else 0):
    print("after", i, "of", r, pad)
print("bye", r, file=sys.stderr)
"""
UP = ("--topology", "hypercube:2", "--allocator", ALLOCATOR, "--scheduler", SCHEDULER)


def _far_node(cluster, tmp_path):
    """A cluster on tcp whose node 3 is an agent of another MCEMU_HOME with its own key (``mcemu
    node`` as on another host); (the agent's process, the tcp port, its home)."""
    cluster.mcemu("keys", "init", "--admin", "boss")
    cluster.mcemu("keys", "issue", "rack", "--role", "node", "--nodes", "3")
    port = free_port()
    cluster.up(*UP, "--listen", f"127.0.0.1:{port}")
    os.kill(node_states(cluster)[3]["pid"], signal.SIGKILL)  # node 3 leaves this host
    wait_for(lambda: node_states(cluster)[3]["state"] == "down", 10, "node 3 down")
    far = tmp_path / "far"
    far.mkdir(mode=0o700)
    joiner = subprocess.Popen([sys.executable, "-m", "emulator", "node", "--connect", f"tcp://127.0.0.1:{port}",
                               "--id", "3", "--key", str(cluster.home / "keys" / "issued" / "rack.toml")],
                              env=dict(cluster.env, MCEMU_HOME=str(far)), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    cluster.record(joiner)
    wait_for(lambda: node_states(cluster)[3]["pid"] == joiner.pid and node_states(cluster)[3]["state"] == "idle",
             15, "node 3 joined from another home")
    return joiner, port, far


def _stop(*procs) -> None:
    """Stop the test's own processes by pid: SIGTERM (a run cancels its job, a node ends its
    tasks), SIGKILL after 10 s."""
    procs = [p for p in procs if p is not None]
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)


def _lines(run, r: int) -> list[str]:
    return [x.split(" at ")[0].rstrip("\n") for x in run.lines if x.startswith(f"{r}: ")]


@pytest.mark.live
def test_mcemu_run_streams_the_ranks_of_a_node_of_another_home_once(cluster, tmp_path):
    joiner, run = None, None
    try:
        joiner, _, far = _far_node(cluster, tmp_path)
        prog, go, n = tmp_path / "prog.py", tmp_path / "go", 300
        prog.write_text(PROG)
        run = Run(cluster, "-n", 4, "--cube", 2, "--label", sys.executable, prog, go, n)
        # streamed while the ranks run (they wait for the go), the far rank's as the others'
        wait_for(lambda: any(x.startswith(f"3: line {n - 1} of 3 ") for x in run.lines), 30, "the far rank's lines")
        assert run.p.poll() is None
        go.touch()
        rc, err = run.finish()
        assert rc == 0, err
        for r in range(4):
            mine = _lines(run, r)
            assert mine == [f"{r}: line {i} of {r} " for i in range(n)] + [f"{r}: bye {r}"], (r, mine[-3:])
        # the far node wrote its file in its own home; the daemon's copy is the same bytes
        far_file, here = far / "output" / "job1.3.out", cluster.home / "output" / "job1.3.out"
        assert far_file.read_bytes() == here.read_bytes()
        assert not (far / "output" / "job1.0.out").exists()
    finally:
        _stop(run and run.p, joiner)


@pytest.mark.live
def test_the_far_ranks_output_is_whole_and_once_over_a_daemon_killed_and_recovered(cluster, tmp_path):
    joiner, run = None, None
    try:
        joiner, port, far = _far_node(cluster, tmp_path)
        prog, go, n = tmp_path / "prog.py", tmp_path / "go", 2000
        prog.write_text(PROG)
        # 2,000 lines of 100 bytes before and after the kill: several frames each way
        run = Run(cluster, "-n", 4, "--cube", 2, "--label", sys.executable, prog, go, n, 60)
        wait_for(lambda: any(x.startswith(f"3: line {n - 1} of 3 ") for x in run.lines), 30, "the far rank's lines")
        os.kill(cluster.daemon_pid(), signal.SIGKILL)
        cluster.client.close()
        cluster._client = None
        wait_for(lambda: cluster.daemon_pid() is None, 5, "the daemon to be gone")
        cluster.mcemu("up", "--detach", "--listen", f"127.0.0.1:{port}")  # recovers its journal
        cluster.record()
        wait_for(lambda: node_states(cluster)[3]["pid"] == joiner.pid and node_states(cluster)[3]["state"] != "down",
                 20, "the far node back with its task")
        go.touch()
        rc, err = run.finish()
        assert rc == 0, err
        pad = "." * 60
        for r in range(4):
            want = [f"{r}: line {i} of {r} {pad}" for i in range(n)]
            want += [f"{r}: after {i} of {r} {pad}" for i in range(n)] + [f"{r}: bye {r}"]
            assert _lines(run, r) == want, r
        assert (far / "output" / "job1.3.out").read_bytes() == (cluster.home / "output" / "job1.3.out").read_bytes()
    finally:
        _stop(run and run.p, joiner)
