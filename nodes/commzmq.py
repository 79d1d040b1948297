"""A task's ZeroMQ link to the interconnect's tcp port (emulator.live.nettcp): the path of a
task whose node was joined from another host. Tasks on the interconnect's own host use its
local socket instead (emulator.live.netlocal.Link); nodes.comm.Comm speaks to either through
the same four calls: ``send``, ``send_many``, ``read`` and ``close``, and waits on ``waits``."""
from __future__ import annotations

import os

import zmq
from zmq.utils.monitor import parse_monitor_message

from emulator.live.netlocal import Gone

# what ends a wait: the connection dropped, or the interconnect refused this task's key
_GONE = zmq.EVENT_DISCONNECTED | zmq.EVENT_HANDSHAKE_FAILED_AUTH


class Refused(Gone):
    """The interconnect refused this task's key at the handshake."""

    refused = True


class ZmqLink:
    def __init__(self, endpoint: str):
        self.endpoint = endpoint
        self.ctx = zmq.Context()
        if os.sched_getscheduler(0) == os.SCHED_OTHER:
            # the I/O thread at SCHED_BATCH (as the daemon's): at SCHED_NORMAL it preempts the
            # task for each frame
            self.ctx.set(zmq.THREAD_SCHED_POLICY, os.SCHED_BATCH)
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 1000)  # the last sends reach the interconnect before exit
        self.sock.setsockopt(zmq.SNDHWM, 100_000)
        self.sock.setsockopt(zmq.RCVHWM, 100_000)
        self._curve()
        # the interconnect's death (or restart, which forgets this task's hello) is a dropped
        # connection: seen here, it ends a wait with an error instead of a hang for ever
        self.mon = self.sock.get_monitor_socket(_GONE)
        self.mon.setsockopt(zmq.LINGER, 0)
        self.sock.connect(endpoint)
        self.waits = (self.sock, self.mon)

    def _curve(self):
        """A CURVE client with its node's credential (MCEMU_NET_KEY, from its agent:
        nodes.taskenv.remote_env); none for an ``--insecure`` cluster's plain port."""
        path = os.environ.get("MCEMU_NET_KEY")
        if not path:
            return
        from emulator.live import auth, keys  # lazy: only a remote task needs them
        from nodes.comm import CommError

        try:
            auth.curve_client(self.sock, path)
        except keys.KeyFileError as e:  # e.g. a task running as an account that cannot read its node's key
            self.sock.close(linger=0)
            self.ctx.term()
            raise CommError("bad-key", f"cannot reach the interconnect at {self.endpoint}: {e}") from None

    def send(self, frame: bytes) -> None:
        self.sock.send(frame)

    def send_many(self, frames) -> None:
        self.sock.send_multipart(frames)

    def read(self) -> list:
        """The frames of one message that has arrived (maybe none); Gone (Refused) once the
        monitor says the connection dropped (the key was refused)."""
        if self.sock.poll(0):
            return self.sock.recv_multipart()
        if not self.mon.poll(0):
            return []
        events = [parse_monitor_message(self.mon.recv_multipart())["event"]]
        while self.mon.poll(0):
            events.append(parse_monitor_message(self.mon.recv_multipart())["event"])
        if zmq.EVENT_HANDSHAKE_FAILED_AUTH in events:
            raise Refused(self.endpoint)
        raise Gone(self.endpoint)

    def close(self, linger: int | None = None) -> None:
        self.sock.disable_monitor()
        self.mon.close(linger=0)
        self.sock.close(linger=linger)
        self.ctx.term()


__all__ = ["Refused", "ZmqLink"]
