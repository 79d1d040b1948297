"""The interconnect's loop (a mixin of emulator.live.interconnect.Interconnect): what the live
kernel reads (the local tasks' socket, the remote tasks', the daemon's events and replies), its
timers and deadline, and the order of a turn's end: the model's hand-overs first, then one
flush, so that they leave with the turn's replies. Closing reports every job once more."""
from __future__ import annotations

import logging
import signal

import zmq

from emulator.live import protocol as P
from emulator.live.ic_virtual import DEADLOCK_CHECK
from emulator.live.netlinks import LINK_WINDOW

log = logging.getLogger("mcemu.interconnect")

REPORT_EVERY = 0.5  # seconds between a job's ``comm`` reports while its messages flow


class Serving:
    def serve(self) -> None:
        k = self.kernel
        self.local.serve()
        if self.remote is not None:
            k.add_reader(self.remote.sock, self._drain_remote)
            if self.remote.zap is not None:
                k.add_reader(self.remote.zap.sock, self.remote.zap.handle)
            self.remote.watch(k)
        k.add_reader(self.sub, self._drain_events)
        k.add_reader(self.daemon, self._drain_daemon)
        k.add_deadline(self.next_wake)
        k.after_turn(self.pump)
        k.after_turn(self.flush)  # after the model's hand-overs: they go out with the replies of the turn
        k.every(REPORT_EVERY, self.report_all)
        k.every(LINK_WINDOW, self.links.roll)
        if self.virtual:
            k.every(DEADLOCK_CHECK, self.virtual.check)
        for s in (signal.SIGTERM, signal.SIGINT):
            k.on_signal(s, k.stop)
        try:
            k.run()
        finally:
            k.close()

    def _drain_events(self):
        while self.sub.poll(0):
            topic, frame = self.sub.recv_multipart()
            try:
                self.on_event(topic, P.decode(frame, max_size=P.MAX_REPLY))
            except P.ProtocolError:
                log.warning("an event that does not decode: dropped")

    def _drain_daemon(self):
        while self.daemon.poll(0):
            self.daemon.recv()  # ok / error of a comm report: nothing to do

    def _drain_remote(self):
        """Tasks of other hosts (ZeroMQ, nettcp); the local ones are read by netlocal.Port."""
        r = self.remote.sock
        now = self.kernel.now()
        for _ in range(4096):
            try:
                frames = r.recv_multipart(flags=zmq.NOBLOCK, copy=False)
            except zmq.Again:
                break
            if (frames := self.remote.admit(frames)) is None:
                continue  # a revoked key's connection
            try:
                self.handle(frames, now)
            except Exception:  # a bug on one message must not take the network down
                log.exception("failed on a message")

    def close(self):
        self.report_all()
        self.flush()
        if self.local is not None:
            self.local.close()
        for s in (self.sub, self.daemon):
            s.close(linger=0 if s is not self.daemon else 200)
        if self.remote is not None:
            self.remote.close()
        self.ctx.term()
