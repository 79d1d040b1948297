"""The interconnect's local transport (emulator.live.netlocal): frames cut from a stream
wherever it breaks, a task that does not read never blocks the interconnect (its bytes wait in
its connection's buffer, and past the bound the connection is dropped), and a connection that
lies about a frame's length, or ends, costs only itself."""
from __future__ import annotations

import struct
import time

import pytest

from emulator.live import netlocal
from emulator.live import protocol as P
from emulator.live.kernel import Kernel


def test_frames_come_out_whole_wherever_the_stream_is_cut():
    frames = [b"", b"a", b"x" * 70_000, bytes(range(256)) * 3]
    wire = netlocal.encode(frames)
    for step in (1, 3, 4, 5, 4096, len(wire)):
        f = netlocal.Frames(P.MAX_WIRE)
        got = []
        for i in range(0, len(wire), step):
            got += f.feed(wire[i:i + step])
        assert got == frames and f.rest == b"" and f.need == 0
    with pytest.raises(netlocal.TooLong):
        netlocal.Frames(100).feed(struct.pack(">I", 101))


class _Echo:
    """A port on a wall-clock kernel that answers every frame with ``reply(frame)``, written at
    the end of the turn as the interconnect does."""

    def __init__(self, tmp_path, reply=lambda f: [f]):
        self.k = Kernel()
        self.out = []
        self.port = netlocal.Port(str(tmp_path / "net.sock"), self.k, lambda c, f, now: self.out.append((c, f)))
        self.port.serve()
        self.reply = reply

    def recv(self, link, timeout=5.0):
        """The link's next frame, the port's loop turning meanwhile (it writes what waits)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.turns()
            got = link.recv(0.01)
            if got is not None:
                return got
        return None

    def turns(self, n=1):
        for _ in range(n):
            self.k.run_once(0.01)
            out, self.out = self.out, []
            for c, f in out:
                c.write(self.reply(f))


def test_the_socket_is_the_owners_alone_and_each_connection_is_one_name(tmp_path):
    e = _Echo(tmp_path)
    assert (tmp_path / "net.sock").stat().st_mode & 0o777 == 0o600
    with netlocal.Link(str(tmp_path / "net.sock")) as a, netlocal.Link(str(tmp_path / "net.sock")) as b:
        a.send_many([b"1", b"2"])
        b.send(b"3")
        e.turns(3)
        assert [a.recv(5), a.recv(5), b.recv(5)] == [b"1", b"2", b"3"]
        assert len(e.port.conns) == 2
    e.turns(3)
    assert not e.port.conns  # their end of file closed them here
    e.port.close()


def test_a_task_that_does_not_read_never_blocks_and_is_dropped_past_the_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(netlocal, "OUT_LIMIT", 8 << 20)
    big = b"y" * (256 << 10)
    e = _Echo(tmp_path, reply=lambda f: [big] * 4 if f == b"flood" else [f])
    path = str(tmp_path / "net.sock")
    with netlocal.Link(path) as slow, netlocal.Link(path) as other:
        slow.send(b"flood")
        e.turns(3)
        # what the socket did not take waits in its connection, and the loop goes on
        conn = next(c for c in e.port.conns if c.out)
        assert conn.outn > 0
        other.send(b"ping")
        e.turns(3)
        assert other.recv(5) == b"ping"
        got = [e.recv(slow) for _ in range(4)]  # read now: all of it, in order
        assert got == [big] * 4
        e.turns(2)
        assert not conn.out
        for _ in range(12):  # 12 MiB asked of a task that reads nothing: past the bound
            slow.send(b"flood")
            e.turns(2)
        assert conn.closed and len(e.port.conns) == 1
        other.send(b"still here")
        e.turns(3)
        assert other.recv(5) == b"still here"
    e.port.close()


def test_a_frame_longer_than_the_wire_allows_ends_only_its_connection(tmp_path):
    e = _Echo(tmp_path)
    path = str(tmp_path / "net.sock")
    with netlocal.Link(path) as bad, netlocal.Link(path) as good:
        bad.sock.sendall(struct.pack(">I", P.MAX_WIRE + 1) + b"z" * 64)
        e.turns(3)
        with pytest.raises(netlocal.Gone):
            bad.sock.settimeout(5)
            while True:
                bad._got.extend(bad.read())
        good.send(b"ok")
        e.turns(3)
        assert good.recv(5) == b"ok" and len(e.port.conns) == 1
    e.port.close()


def test_a_link_sees_the_interconnect_gone_after_what_it_sent_before(tmp_path):
    e = _Echo(tmp_path)
    with netlocal.Link(str(tmp_path / "net.sock")) as a:
        a.send(b"last")
        e.turns(3)
        e.port.close()
        assert a.recv(5) == b"last"
        with pytest.raises(netlocal.Gone):
            a.recv(5)
        a.send(b"into the void")  # a write to a closed connection is dropped, not raised
    assert netlocal.request(str(tmp_path / "net.sock"), b"x", 0.5) is None


def test_a_task_that_exits_after_its_last_send_has_it_read_though_a_write_to_it_fails(tmp_path):
    """A rank sends its last message (a gather's, to the root) and exits with frames of ours
    unread; a frame written to it before its bytes are read fails (ECONNRESET): its last send
    is still read and handed over, and its end of file then closes the connection (a lost last
    send hung the root for ever: 2 runs in 7 of the 64-rank all-to-all bench)."""
    e = _Echo(tmp_path)
    link = netlocal.Link(str(tmp_path / "net.sock"))
    link.send(b"hello")
    e.turns(3)
    (conn, _), = [(c, None) for c in e.port.conns]
    conn.write([b"unread"])  # waits in the task's socket: it exits without reading it
    e.out.clear()
    link.send(b"last send")
    link.close()
    conn.write([b"a notice"])  # the task is gone: the write fails
    assert conn.deaf and not conn.closed
    got = []
    deadline = time.monotonic() + 5
    while not conn.closed and time.monotonic() < deadline:
        e.k.run_once(0.01)
        got += [f for _, f in e.out]
        e.out.clear()
    assert got == [b"last send"] and conn.closed and not e.port.conns
    conn.write([b"after the end"])  # dropped, not raised
    e.port.close()
