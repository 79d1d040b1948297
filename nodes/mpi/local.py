"""Run an mpi4py program on N local processes, like ``mpiexec`` without a cluster::

    python -m nodes.mpi.local -n 4 prog.py ARGS       (or: ... -n 4 python prog.py ARGS)

Each rank is a fresh ``python prog.py ARGS`` with ``nodes/mpi/shim`` first on PYTHONPATH (so
``from mpi4py import MPI`` is mcemu's) and MCEMU_MPI_LOCAL="rank:size:fd,fd,...": one
socketpair per pair of ranks, made here and inherited. Time is wall time; nothing is
modelled. The exit status is the first failing rank's (the others are then terminated, by
pid), 0 when all succeed; ``--timeout S`` ends a run that takes longer (status 124).

``LocalTransport`` (nodes.mpi.transport's interface) keeps sends eager without threads: a
socket is non-blocking and what it does not take at once waits in that peer's queue,
written whenever the rank next calls MPI (and at close). A peer whose socket closed can
send nothing more; a blocking wait when every peer has closed is a deadlock.
"""
from __future__ import annotations

import argparse
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import time
from collections import deque
from pathlib import Path

from nodes.mpi.errors import TransportError
from nodes.mpi.transport import WallTransport

_LEN = struct.Struct("<I")
_CHUNK = 1 << 18
SHIM = Path(__file__).resolve().parent / "shim"
ROOT = Path(__file__).resolve().parents[2]


class LocalTransport(WallTransport):
    """One rank's end of the full mesh of socketpairs (fds[r] is -1 for its own rank)."""

    def __init__(self, rank: int, size: int, fds: list[int]):
        self.rank, self.size = rank, size
        self._socks = {p: socket.socket(fileno=fd) for p, fd in enumerate(fds) if p != rank and fd >= 0}
        self._by_fd = {s.fileno(): p for p, s in self._socks.items()}
        self._inbuf = {p: bytearray() for p in self._socks}
        self._out: dict[int, deque] = {}   # peer -> buffers not yet written (in order)
        self._self: list[tuple[int, bytes]] = []
        self._poll = select.poll()
        for s in self._socks.values():
            s.setblocking(False)
            self._poll.register(s.fileno(), select.POLLIN)
        self._closed = False

    @classmethod
    def from_env(cls) -> "LocalTransport":
        rank, size, fds = os.environ["MCEMU_MPI_LOCAL"].split(":")
        return cls(int(rank), int(size), [int(f) for f in fds.split(",")])

    def send(self, dest: int, payload: bytes, nbytes: int) -> None:
        if dest == self.rank:
            self._self.append((dest, payload))
            return
        sock = self._socks.get(dest)
        if sock is None:
            raise TransportError("closed", f"rank {dest} has ended")
        frame = [_LEN.pack(len(payload)), payload]
        if dest in self._out:
            self._out[dest].extend(frame)
            return
        try:
            sent = sock.sendmsg(frame)
        except BlockingIOError:
            sent = 0
        except OSError:  # the peer ended: what it will never read is dropped, as MPI would
            return
        if sent < 4 + len(payload):
            self._queue_rest(dest, frame, sent)

    def _queue_rest(self, dest: int, frame: list, sent: int) -> None:
        rest = b"".join(frame)[sent:]
        self._out[dest] = deque([rest])
        self._poll.modify(self._socks[dest].fileno(), select.POLLIN | select.POLLOUT)

    def _flush(self, peer: int) -> None:
        q, sock = self._out[peer], self._socks[peer]
        try:
            while q:
                head = q[0]
                n = sock.send(head)
                if n < len(head):
                    q[0] = memoryview(head)[n:]
                    return
                q.popleft()
        except BlockingIOError:
            return
        except OSError:
            q.clear()
        del self._out[peer]
        self._poll.modify(sock.fileno(), select.POLLIN)

    def wait(self, block: bool, what: str) -> list[tuple[int, bytes]]:
        got, self._self = self._self, []
        while True:
            for fd, ev in self._poll.poll(0 if (got or not block) else None):
                peer = self._by_fd[fd]
                if ev & select.POLLOUT and peer in self._out:
                    self._flush(peer)
                if ev & (select.POLLIN | select.POLLHUP | select.POLLERR):
                    self._read(peer, got)
            if got or not block:
                return got
            if not self._socks:
                raise TransportError("deadlock", f"rank {self.rank} waits for {what}, but every other rank has ended")

    def _read(self, peer: int, got: list) -> None:
        sock, buf = self._socks[peer], self._inbuf[peer]
        try:
            data = sock.recv(_CHUNK)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._drop(peer)
            return
        buf += data
        off, end = 0, len(buf)
        while end - off >= 4:
            (n,) = _LEN.unpack_from(buf, off)
            if end - off - 4 < n:
                break
            got.append((peer, bytes(buf[off + 4:off + 4 + n])))
            off += 4 + n
        del buf[:off]

    def _drop(self, peer: int) -> None:
        sock = self._socks.pop(peer)
        self._poll.unregister(sock.fileno())
        self._out.pop(peer, None)
        sock.close()

    def close(self) -> None:
        """Write what is still queued (blocking: the peers are still reading or have ended)."""
        if self._closed:
            return
        self._closed = True
        for peer, q in list(self._out.items()):
            sock = self._socks[peer]
            sock.setblocking(True)
            try:
                for chunk in q:
                    sock.sendall(chunk)
            except OSError:
                pass
        self._out.clear()


def _mesh(n: int) -> list[list[int]]:
    """fds[r][p]: rank r's end of its socketpair with rank p (-1 for p == r)."""
    fds = [[-1] * n for _ in range(n)]
    for a in range(n):
        for b in range(a + 1, n):
            sa, sb = socket.socketpair()
            for s in (sa, sb):
                s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 21)
            fds[a][b], fds[b][a] = sa.detach(), sb.detach()
    return fds


def _env(rank: int, size: int, fds: list[int]) -> dict:
    env = dict(os.environ)
    path = [str(SHIM), str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(path)
    env["MCEMU_MPI_LOCAL"] = f"{rank}:{size}:{','.join(map(str, fds))}"
    env.pop("MCEMU_NET", None)
    return env


def launch(n: int, argv: list[str]) -> list[subprocess.Popen]:
    fds = _mesh(n)
    procs = []
    try:
        for r in range(n):
            mine = [f for f in fds[r] if f >= 0]
            procs.append(subprocess.Popen([sys.executable, *argv], env=_env(r, n, fds[r]), pass_fds=mine))
    finally:
        for row in fds:
            for f in row:
                if f >= 0:
                    os.close(f)
    return procs


def _stop(procs: list[subprocess.Popen]) -> None:
    """Terminate by pid whatever still runs; SIGKILL what ignores SIGTERM for 2 s."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 2
    for p in procs:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def supervise(procs: list[subprocess.Popen], timeout: float | None) -> int:
    """Wait for the ranks: the first non-zero status ends the run (and is its status)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while True:
            codes = [p.poll() for p in procs]
            bad = [c for c in codes if c not in (None, 0)]
            if bad:
                _stop(procs)
                return bad[0] if bad[0] > 0 else 128 - bad[0]
            if all(c == 0 for c in codes):
                return 0
            if deadline is not None and time.monotonic() > deadline:
                print(f"nodes.mpi.local: timed out after {timeout} s", file=sys.stderr)
                _stop(procs)
                return 124
            _wait_any(procs)
    except KeyboardInterrupt:
        _stop(procs)
        return 130


def _wait_any(procs: list[subprocess.Popen]) -> None:
    """Sleep until some rank may have ended (a pidfd where the OS has them), at most 50 ms."""
    try:
        fds = [os.pidfd_open(p.pid) for p in procs if p.returncode is None]
    except (AttributeError, OSError):
        time.sleep(0.05)
        return
    try:
        select.select(fds, [], [], 0.05)
    finally:
        for fd in fds:
            os.close(fd)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m nodes.mpi.local", description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", "--np", type=int, required=True, help="number of ranks")
    ap.add_argument("--timeout", type=float, default=None, help="end the run after this many seconds (status 124)")
    ap.add_argument("program", nargs=argparse.REMAINDER, help="prog.py ARGS (a leading 'python' is dropped)")
    a = ap.parse_args(argv)
    prog = list(a.program)
    if prog and Path(prog[0]).name.startswith("python") and not prog[0].endswith(".py"):
        prog = prog[1:]
    if a.np < 1 or not prog:
        ap.error("give -n N (N >= 1) and a program")
    return supervise(launch(a.np, prog), a.timeout)


if __name__ == "__main__":
    sys.exit(main())
