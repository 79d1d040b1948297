"""The pattern task (nodes.pattern) on a cluster in virtual time (``--net-time virtual``).

The same paths and seeds as the dilated task and as ``mcemu net simulate``: each path whose
source is this rank sends, waits for its delivery notice, computes Exp(MTBS) and sends again;
but its times are the rank's virtual clock, moved by the interconnect (emulator.live.vtime),
not the wall's: a wait until the next send (``until``) is answered with the deliveries and
notices due before it, or at it with nothing. Thinking uses no CPU time here: the MTBS is the
path's, so the task reports no CPU time and its clock moves only by the waits.

The end is the dilated task's, in virtual time: once its paths have done their messages a rank
enters a barrier (its job's, or its group's) and keeps sending unmeasured until the barrier is
done (at the latest entry), then waits for its last notices, and a second barrier makes sure
no rank leaves while a message to it is on the way.
"""
from __future__ import annotations

import struct

from nodes.comm import Comm
from nodes.pattern import Ending
from scheduler.network.traffic import Path, PathLoop


class VirtualPatternTask(Ending):
    """This rank's paths on ``comm`` in virtual time (``a``: nodes.pattern's options)."""

    def __init__(self, a, comm: Comm, pairs):
        self.comm, self.me = comm, comm.rank
        self.total = a.warmup + a.iterations
        self.clock = float(comm.welcome["vt0"])
        think = a.mtbs * 1e-6  # virtual seconds
        self.paths = {pid: PathLoop(Path(s, d, a.mtbs), pid, a.seed, think, warmup=a.warmup, measure=a.iterations)
                      for pid, (s, d) in enumerate(pairs) if s == self.me}
        self.due = {pid: p.first(self.clock) for pid, p in self.paths.items()}
        self.out: dict[int, int] = {}  # message id -> path
        self.received = 0
        self.barriers: set = set()

    def run(self, group: str | None) -> None:
        bid, stopping = None, False
        while True:
            bid, stopping = self.ending(bid, stopping, lambda: self.comm.ibarrier(group, vt=self.clock),
                                        self.barriers.__contains__)
            if stopping and not self.out:
                break
            for pid in [p for p, t in self.due.items() if t <= self.clock]:
                del self.due[pid]
                p = self.paths[pid]
                mid = self.comm.send(p.dst, struct.pack("<iii", self.me, pid, p.sent - 1), measured=p.measured_send(),
                                     vt=self.clock, notice=True)
                self.out[mid] = pid
            self._wait(min(self.due.values(), default=None))
        last = self.comm.ibarrier(vt=self.clock)
        while last not in self.barriers:
            self._wait(None)
        self.comm.bye(self.clock)

    def _wait(self, until: float | None) -> None:
        """One wait: until ``until`` (None: the next event), then what it brought."""
        frames, at = self.comm.vwait(self.clock, until, "pattern")
        for m in frames:
            t = m["type"]
            if t == "net_msg":
                self.received += 1
            elif t == "net_delivered":
                pid = self.out.pop(m["id"])
                nxt = self.paths[pid].on_delivery(m["due"], m["delay_us"], 0.0, 0.0)
                if nxt is not None:
                    self.due[pid] = nxt
            elif t == "ok":
                self.barriers.add(m["id"])
        self.clock = max(self.clock, at)

    def report(self) -> dict:
        delays = [d for p in self.paths.values() for d in p.delays]
        return {"rank": self.me, "paths": len(self.paths), "sent": sum(p.sent for p in self.paths.values()),
                "received": self.received, "mean_delay_us": sum(delays) / len(delays) if delays else None,
                "clock_s": self.clock - float(self.comm.welcome["vt0"]), "time": "virtual"}


__all__ = ["VirtualPatternTask"]
