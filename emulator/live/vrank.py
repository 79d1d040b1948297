"""One rank's clock as the virtual-time interconnect knows it (:class:`VRank`), the host CPU
time its bound grows by (:class:`CpuReader`), and which of its events end a wait (:func:`ends`);
emulator.live.vtime decides on them."""
from __future__ import annotations

import math
import os

INF = math.inf
COMPUTING, WAITING, DONE = 0, 1, 2


class CpuReader:
    """Host CPU seconds used by the main thread of a process (``reader(pid)``: the scheduler's
    run time, the clock of time.thread_time(), never ahead of it), None when it is gone. The
    interconnect reads its computing ranks' every few ms while one is awaited, so each one's
    schedstat is opened once and read with ``pread`` (1 us against 9 to open, read and close).
    A process that ended reads None (ESRCH), and its file is let go: the file stays its own,
    so a pid the system gave to another process since is never read as the rank's."""

    def __init__(self):
        self.fds: dict[int, int] = {}

    def __call__(self, pid: int) -> float | None:
        fd = self.fds.get(pid)
        if fd is None:
            try:
                fd = self.fds[pid] = os.open(f"/proc/{pid}/task/{pid}/schedstat", os.O_RDONLY)
            except OSError:
                return None
        try:
            return int(os.pread(fd, 64, 0).split(None, 1)[0]) / 1e9
        except (OSError, ValueError, IndexError):
            self.drop(pid)
            return None

    def drop(self, pid: int) -> None:
        fd = self.fds.pop(pid, None)
        if fd is not None:
            os.close(fd)

    def close(self) -> None:
        for pid in list(self.fds):
            self.drop(pid)


class VRank:
    """One rank's clock as the interconnect knows it (times in flit times)."""

    __slots__ = ("key", "job", "rank", "state", "vt", "pid", "until", "until_s", "what", "events", "sent",
                 "shared", "nsent", "ver", "frames", "match", "need", "held", "hb")

    def __init__(self, key, job, rank: int, pid: int | None):
        self.key, self.job, self.rank, self.pid = key, job, rank, pid
        self.state = COMPUTING
        self.vt = 0.0
        self.until = INF
        self.until_s = None  # ``until`` as the rank said it, in seconds: an answer then is that very number
        self.what = ""
        self.match = None  # a blocking wait's envelopes that end it (None: any event ends it)
        self.need = 1  # how many more events of ``match`` end it (a wait for several receives)
        self.held: list = []  # frames of its answers that did not wake it: they go with the next
        # (due, seq, frame, resume at, envelope or None): its deliveries and notices, not handed over
        self.events: list = []
        self.sent = 0  # its messages still in the model
        self.nsent = 0  # every message it sent (the tie key of the next: driver.send_order)
        self.shared = None  # the clock it publishes (emulator.live.vclock.ClockReader), if any
        self.ver = 0  # which of its entries in VirtualTime.heap is current (-1: forgotten)
        self.hb = None  # the bound of that entry (INF: none in the heap)
        self.frames = 0  # its frames with a clock read so far (a published record counts them too)

    def bound(self) -> float:
        if self.state == COMPUTING:
            return self.vt
        if self.state == WAITING:
            t = self.until
            if self.events and self.events[0][0] < t:
                t = self.events[0][3]  # when it resumes: its own seconds of it (an ulp may lie between)
            return t if t > self.vt else self.vt
        return INF


def ends(env, match) -> bool:
    """Whether an event of envelope ``env`` can end a wait for ``match`` (one without: it does)."""
    return env is None or any(c == env[0] and s in (None, env[1]) and t in (None, env[2]) for c, s, t in match)


__all__ = ["COMPUTING", "CpuReader", "DONE", "INF", "VRank", "WAITING", "ends"]
