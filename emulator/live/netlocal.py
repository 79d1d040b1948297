"""The interconnect's local transport: tasks on its own host reach it over a unix stream socket
(``$MCEMU_HOME/net.sock``, mode 0600), not ZeroMQ (issue 28's message rate).

Why: a Python ping-pong between two processes cost 49 us of CPU per round trip over ZeroMQ
DEALER/ROUTER ipc and 9.3 us over a unix socket: ZeroMQ hands every message to an I/O thread
on each side (two more wake-ups per hop), and with 64 ranks on 2 cores those hops were most
of a message's CPU. Here the interconnect's own loop (emulator.live.kernel) reads each
connection's fd in its thread, and a task reads its socket in its own (nodes.comm).

The wire: a stream of frames, each a 4-byte big-endian length and that many bytes (a protocol
frame, unchanged: emulator.live.protocol). Several frames written together are read in order;
nothing groups them (a ZeroMQ message of several parts was the same thing: frames in order).
A frame longer than protocol.MAX_WIRE ends its connection, as libzmq's MAXMSGSIZE did.

One accepted connection is one task (its name in the interconnect: the :class:`Conn`). Its
end of file is the task gone; the task sees the interconnect gone the same way (nodes.comm:
``net-gone``). The interconnect never blocks on a task: what the socket does not take is kept
in the connection's outbound buffer and written when the socket is writable; a connection
whose buffer passes ``OUT_LIMIT`` (a task that stopped reading) is dropped, as ZeroMQ's
high-water mark refused more. The remote path (tcp, CURVE: emulator.live.nettcp) stays ZeroMQ.
"""
from __future__ import annotations

import logging
import os
import select
import socket
import struct
import time
from collections import deque

from emulator.live import protocol as P

log = logging.getLogger("mcemu.interconnect")

_HDR = struct.Struct(">I")
_pack, _unpack_from = _HDR.pack, _HDR.unpack_from
READ = 1 << 16  # bytes asked of one recv (more when a long frame is known to be pending)
OUT_LIMIT = 256 << 20  # bytes a connection's outbound buffer may hold before it is dropped
_GONE = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)


class TooLong(Exception):
    """A frame's length above the limit: the stream cannot be trusted further."""


class Frames:
    """A byte stream cut into frames (the bytes of an incomplete one kept for the next feed)."""

    __slots__ = ("rest", "need", "limit")

    def __init__(self, limit: int):
        self.rest, self.need, self.limit = b"", 0, limit

    def feed(self, data: bytes) -> list:
        buf = self.rest + data if self.rest else data
        out, i, n = [], 0, len(buf)
        while n - i >= 4:
            size = _unpack_from(buf, i)[0]
            if size > self.limit:
                raise TooLong(size)
            end = i + 4 + size
            if end > n:
                self.rest, self.need = buf[i:], end - n
                return out
            out.append(buf[i + 4:end])
            i = end
        self.rest, self.need = (buf[i:] if i < n else b""), 0
        return out


def encode(frames) -> bytes:
    """Frames as the bytes of one write."""
    parts = []
    for f in frames:
        parts.append(_pack(len(f)))
        parts.append(f)
    return b"".join(parts)


def endpoint_path(endpoint: str) -> str:
    """``ipc://PATH`` (how MCEMU_NET names the local socket) or a bare path: the path."""
    return endpoint[len("ipc://"):] if endpoint.startswith("ipc://") else endpoint


# ---------------------------------------------------------------------- the interconnect's side


class Conn:
    """One task's connection (its name in the interconnect: hashable, compared by identity)."""

    __slots__ = ("sock", "fd", "frames", "out", "outn", "closed", "deaf", "port", "__weakref__")

    def __init__(self, sock: socket.socket, port: "Port"):
        self.sock, self.fd, self.port = sock, sock.fileno(), port
        self.frames = Frames(P.MAX_WIRE)
        self.out: list = []  # bytes the socket did not take yet, in order
        self.outn = 0
        self.closed = False
        self.deaf = False  # writes failed (the task went): frames to it are dropped, its own still read

    def fileno(self) -> int:
        return self.fd

    def write(self, frames) -> None:
        """``frames`` to the task, never blocking (module docstring)."""
        if self.deaf:
            return
        data = encode(frames)
        if self.out:
            self.out.append(data)
            self.outn += len(data)
            if self.outn > OUT_LIMIT:
                log.warning("a task's connection holds %d unread bytes: dropped", self.outn)
                self.close()
            return
        if (n := self._send(data)) is None:
            return
        if n < len(data):
            self.out.append(data[n:])
            self.outn = len(data) - n
            self.port.kernel.add_writer(self.fd, self.writable)

    def _send(self, data: bytes) -> int | None:
        """Bytes the socket took (0 when full); None when the connection went deaf."""
        try:
            return self.sock.send(data)
        except BlockingIOError:
            return 0
        except OSError as e:
            self._deafen(e)
            return None

    def writable(self) -> None:
        data = self.out[0] if len(self.out) == 1 else b"".join(self.out)
        if (n := self._send(data)) is None:
            return
        if n == len(data):
            self.out, self.outn = [], 0
            self.port.kernel.remove_writer(self.fd)
        else:
            self.out, self.outn = [data[n:]], len(data) - n

    def _deafen(self, err: OSError) -> None:
        """A write failed: the task is gone (a task that exits with frames unread makes the next
        write fail, ECONNRESET or EPIPE). What it wrote before it went is still to be read, in
        order, up to its end of file, which closes the connection: its last send (a gather's
        message to the root, written just before the rank exited) was lost when a notice to
        it, written in the same turn, closed the connection at once."""
        log.info("a task's connection takes no more frames (%s): what it wrote is still read", err)
        self.deaf = True
        self.out, self.outn = [], 0
        self.port.kernel.remove_writer(self.fd)

    def readable(self) -> None:
        """What the task wrote, each frame handed to the port's ``on_frame`` in order."""
        try:
            data = self.sock.recv(max(READ, self.frames.need))
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            return self.close()  # the task is gone (its job's end comes from the daemon)
        try:
            frames = self.frames.feed(data)
        except TooLong as e:
            log.warning("a frame of %d bytes (above %d) from a task: its connection dropped", e.args[0], P.MAX_WIRE)
            return self.close()
        self.port.deliver(self, frames)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = self.deaf = True
        k = self.port.kernel
        k.remove_reader(self.fd)
        k.remove_writer(self.fd)
        self.port.conns.discard(self)
        self.out, self.outn = [], 0
        self.sock.close()


class Port:
    """The listening socket at ``path`` (mode 0600); ``on_frame(conn, frame, now)`` for every
    frame read, on ``kernel``'s loop."""

    def __init__(self, path: str, kernel, on_frame):
        self.path, self.kernel, self.on_frame = path, kernel, on_frame
        try:
            os.unlink(path)  # a stale socket of a killed interconnect
        except FileNotFoundError:
            pass
        s = self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)  # never open to others, not even between bind and chmod
        try:
            s.bind(path)
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        s.listen(1024)
        s.setblocking(False)
        self.conns: set = set()

    def serve(self) -> None:
        self.kernel.add_reader(self.sock.fileno(), self._accept)

    def _accept(self) -> None:
        for _ in range(256):
            try:
                s, _addr = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:  # EMFILE and the like: the others go on
                log.warning("cannot accept a task's connection: %s", e)
                return
            s.setblocking(False)
            c = Conn(s, self)
            self.conns.add(c)
            self.kernel.add_reader(c.fd, c.readable)

    def deliver(self, conn: Conn, frames: list) -> None:
        now = self.kernel.now()
        on_frame = self.on_frame
        for f in frames:
            try:
                on_frame(conn, f, now)
            except Exception:  # a bug on one message must not take the network down
                log.exception("failed on a message")

    def close(self) -> None:
        for c in list(self.conns):
            if c.out:  # what the last turn made: one try, without waiting
                try:
                    c.sock.send(b"".join(c.out))
                except OSError:
                    pass
            c.close()
        self.kernel.remove_reader(self.sock.fileno())
        self.sock.close()


# ---------------------------------------------------------------------- a task's side


class Gone(Exception):
    """The interconnect closed the connection (it died, or dropped this task)."""

    refused = False  # nodes.commzmq.Refused: the tcp port refused the task's key


class Link:
    """A task's (or a tool's) connection to the interconnect's local socket at ``path``.
    Writes block (the interconnect always reads); reads do not (:meth:`read`)."""

    def __init__(self, path: str):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.connect(path)
        except OSError:
            self.sock.close()
            raise
        self.fd = self.sock.fileno()
        self.frames = Frames(P.MAX_REPLY)
        self.broken = False
        self._got: deque = deque()

    def fileno(self) -> int:
        return self.fd

    @classmethod
    def connect(cls, path: str, deadline: float) -> "Link | None":
        """A link, retried until ``deadline`` (monotonic) while nothing listens (an interconnect
        that is starting or restarting); None at the deadline."""
        while True:
            try:
                return cls(path)
            except (FileNotFoundError, ConnectionRefusedError):
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                time.sleep(min(0.05, left))

    def send(self, frame: bytes) -> None:
        self.send_many((frame,))

    def send_many(self, frames) -> None:
        """Frames in one write. A connection the interconnect closed takes nothing more: its end
        shows on the next read (frames it sent before are read first)."""
        if self.broken:
            return
        try:
            self.sock.sendall(encode(frames))
        except _GONE:
            self.broken = True

    def read(self) -> list:
        """The frames that have arrived (maybe none); :class:`Gone` at the end of the stream."""
        try:
            data = self.sock.recv(max(READ, self.frames.need), socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return []
        except _GONE:
            data = b""
        if not data:
            raise Gone(self.path)
        return self.frames.feed(data)

    def recv(self, timeout: float) -> bytes | None:
        """The next frame within ``timeout`` seconds, or None (tools and tests: blocking)."""
        deadline = time.monotonic() + timeout
        while not self._got:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.sock], [], [], left)[0]:
                return None
            self._got.extend(self.read())
        return self._got.popleft()

    def close(self) -> None:
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def request(path: str, frame: bytes, timeout: float) -> bytes | None:
    """One request to the interconnect and its reply (``mcemu net links``, the monitor); None
    when nothing listens or no reply comes within ``timeout`` seconds."""
    try:
        with Link(path) as link:
            link.send(frame)
            return link.recv(timeout)
    except (OSError, Gone):
        return None


__all__ = ["Conn", "Frames", "Gone", "Link", "OUT_LIMIT", "Port", "TooLong", "encode", "endpoint_path", "request"]
