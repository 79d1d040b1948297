"""Frames coalesced between the tasks and the interconnect (issue 28's message rate): what a
turn makes for one task leaves as one write to its connection (emulator.live.netlocal), and
what a rank says in virtual time until it next reads arrives as one; every frame is the frame
it was, handled in order. The live behaviour is tests/test_live_net.py and tests/test_live_vtime.py."""
from __future__ import annotations

import threading

import pytest

from emulator.live import protocol as P
from emulator.live.interconnect import AHEAD, Interconnect
from emulator.live.kernel import FakeClock, Kernel
from emulator.live.secret import task_secret
from tests.fixtures.netpeer import FakeNet


class Writes:
    """The connections' write side: every write as [connection's name, frames...]."""

    def __init__(self):
        self.messages = []

    def conn(self, name: bytes):
        return _Conn(self, name)


class _Conn:
    def __init__(self, writes, name):
        self.writes, self.name = writes, name

    def write(self, frames):
        self.writes.messages.append([self.name, *frames])


def _ic(tmp_path, **cfg):
    ic = Interconnect(tmp_path, {"topology": "mesh:4x4", "net_dilation": 1000.0, **cfg}, kernel=Kernel(FakeClock()))
    ic.router = Writes()
    ic.conns = {n: ic.router.conn(n) for n in (b"a", b"b", b"c")}
    return ic


def _handle(ic, name, *frames):
    """What connection ``name`` wrote, read in one turn."""
    conn = ic.conns[name]
    if not frames:
        ic.handle([conn], 0.0)
    for f in frames:
        ic.handle_frame(conn, f, 0.0)


def _hello(ic, rank, nodes=(0, 3), **kw):
    return P.encode("net_hello", job=7, attempt=1, rank=rank, nodes=list(nodes),
                    secret=task_secret(ic.jobs.key, 7, 1, rank), **kw)


def _decoded(message):
    return [message[0]] + [P.decode(f, max_size=P.MAX_REPLY) for f in message[1:]]


def test_a_turns_frames_for_a_task_leave_as_one_message_in_order(tmp_path):
    ic = _ic(tmp_path)
    _handle(ic, b"a", _hello(ic, 0))
    _handle(ic, b"b", _hello(ic, 1))
    assert ic.router.messages == []  # nothing before the turn ends
    ic.flush()
    assert [m[0] for m in ic.router.messages] == [b"a", b"b"] and all(len(m) == 2 for m in ic.router.messages)
    ic.router.messages.clear()
    # two sends in one message of rank 0: both injected, in order
    _handle(ic, b"a", P.encode("net_send", id=1, to=1, data=b"one"), P.encode("net_send", id=2, to=1, data=b"two"))
    assert ic.net.sent == 2 and [rec[4] for rec in ic.msgs.values()] == [1, 2]
    ic.driver.advance(1.0)
    ic.dilated.release(1.0)
    ic.flush()
    by = {m[0]: _decoded(m)[1:] for m in ic.router.messages}
    assert len(ic.router.messages) == 2  # one message each: the receiver's payloads, the sender's notices
    assert [(m["type"], m["data"]) for m in by[b"b"]] == [("net_msg", b"one"), ("net_msg", b"two")]
    assert [(m["type"], m["id"]) for m in by[b"a"]] == [("net_delivered", 1), ("net_delivered", 2)]
    assert by[b"b"][0]["due"] <= by[b"b"][1]["due"] and by[b"b"][0]["due"] > AHEAD


def test_a_bad_part_is_refused_alone_and_the_others_go_on(tmp_path):
    ic = _ic(tmp_path)
    _handle(ic, b"a", _hello(ic, 0))
    _handle(ic, b"b", _hello(ic, 1))
    ic.flush()
    ic.router.messages.clear()
    _handle(ic, b"a", b"\xc1garbage", P.encode("net_send", id=3, to=9, data=b"x"),
            P.encode("net_send", id=4, to=1, data=b"ok"))
    _handle(ic, b"c")  # a message of no frames (the tcp port's ZeroMQ path)
    ic.flush()
    got = {m[0]: _decoded(m)[1:] for m in ic.router.messages}
    assert [m["code"] for m in got[b"a"]] == ["not-msgpack", "bad-rank"] and got[b"a"][1]["id"] == 3
    assert got[b"c"][0]["code"] == "frames"
    assert ic.net.sent == 1  # the good send after the bad parts


def test_comm_holds_virtual_time_frames_until_it_reads_and_reads_a_message_of_parts(tmp_path, monkeypatch):
    from nodes.comm import Comm

    ep = f"ipc://{tmp_path}/net.sock"
    for k, v in {"MCEMU_JOB_ID": "7", "MCEMU_ATTEMPT": "1", "MCEMU_RANK": "0", "MCEMU_NODES": "0,1",
                 "MCEMU_PROMPT_WAKEUPS": "0"}.items():
        monkeypatch.setenv(k, v)
    r = FakeNet(tmp_path / "net.sock")
    got = {}

    def serve():
        [frame] = r.read()
        r.send(P.encode("net_welcome", job=7, rank=0, size=2, dilation=1.0, flit_time_us=0.05, length_flits=500,
                        time="virtual", vt0=0.0, flit_bytes=2))
        parts = r.read()  # two sends and the wait: one write
        got["parts"] = [P.decode(f, max_size=P.MAX_FRAME + P.MAX_PAYLOAD) for f in parts]
        r.send(P.encode("net_msg", source=1, data=b"a", due=0.5), P.encode("net_msg", source=1, data=b"b", due=0.6),
               P.encode("net_go", vt=0.6))
        got["bye"] = [P.decode(f) for f in r.read()]

    t = threading.Thread(target=serve)
    t.start()
    try:
        with Comm(ep, timeout=5) as c:
            c.hold = True  # one MPI call's span (nodes.mpi.live)
            c.send(1, b"x", vt=0.1, nbytes=1)
            c.send(1, b"y", vt=0.2, nbytes=1)
            assert len(c._outq) == 2  # held: nothing is decided by when they arrive
            frames, at = c.vwait(0.2, None, "recv")
            assert [(m["type"], m["data"]) for m in frames] == [("net_msg", b"a"), ("net_msg", b"b")] and at == 0.6
            c.bye(0.7)
    finally:
        t.join(5)
        r.close()
    assert [(m["type"], m.get("id"), m["vt"]) for m in got["parts"]] == [
        ("net_send", 1, 0.1), ("net_send", 2, 0.2), ("net_wait", None, 0.2)]
    assert [m["type"] for m in got["bye"]] == ["net_bye"]


def test_comm_refuses_a_bad_send_at_the_sender(tmp_path, monkeypatch):
    """The fields a caller gives are still checked where it calls (the rest is nodes.comm's own)."""
    from nodes.comm import Comm

    c = Comm.__new__(Comm)
    c.flow, c.hold, c._ids, c._outq = False, True, 0, []  # held: the check is at the call, not the flush
    with pytest.raises(P.ProtocolError):
        c.send(-1, b"x")
    with pytest.raises(P.ProtocolError):
        c.send(1, b"x" * (P.MAX_PAYLOAD + 1))
    assert c._outq == []
