"""The ready-made task of ``mcemu submit --pattern``: one rank of a job whose paths run the
closed loop of scheduler.network.traffic live, through the interconnect.

``python -m nodes.pattern --shape WxH --pattern P --mtbs US --iterations N [--warmup W]``:
the paths are ``pattern_pairs(P, W, H)`` (the registry ``mcemu net`` uses); each path whose
source is this rank is a :class:`~scheduler.network.traffic.PathLoop`, the simulator's loop
with the simulator's seeds: it computes Exp(MTBS) in dilated time (MTBS network us = MTBS x D
wall us), sends, waits until the message is delivered, and again, ``W + N`` times; the first
W are sent unmeasured (the warm-up of ``mcemu net simulate``). The task also counts the
messages of the paths that end here and exits 0 once its paths are done and every message it
expects has come, so the job ends when every path has done its iterations and its run time
comes from its messages. The ranks start together (``Comm(sync=True)``), as the model's paths
all start at time 0. On exit it prints one JSON line (its counts and the lateness of the
messages it received: wall seconds after their due time), which scripts/bench_net_live.py reads.

A path that has done its messages keeps sending, unmeasured, until every path of the job has
(the first barrier; with --group, of every job of the group), so that the others keep its
traffic to the end, as in ``mcemu net simulate``. Then no new sends; each rank waits for its
last delivery, and a second barrier makes sure no rank leaves while a message to it is still
on the way.
"""
from __future__ import annotations

import argparse
import json
import struct
import sys

from nodes.comm import Comm, CommError
from scheduler.network.patterns import pattern_pairs
from scheduler.network.stats import percentile
from scheduler.network.traffic import Path, PathLoop


class Ending:
    """How both pattern tasks (this one, dilated; nodes.vpattern, virtual) end (module
    docstring): once its paths have done their messages a rank enters a barrier; when the
    barrier is done its paths stop (one message each may still be on the way)."""

    def ending(self, bid, stopping: bool, enter, done) -> tuple:
        """(barrier id, stopping) after this turn; ``enter()`` enters the barrier, ``done(id)``
        says whether it is done."""
        if bid is None and all(p.delivered >= self.total for p in self.paths.values()):
            bid = enter()
        if bid is not None and not stopping and done(bid):
            stopping = True
            self.due.clear()
            for p in self.paths.values():
                p.stop()
        return bid, stopping


class PatternTask(Ending):
    """This rank's paths on ``comm`` (the options ``a`` of :func:`main`)."""

    def __init__(self, a, comm: Comm, pairs):
        self.comm, self.me = comm, comm.rank
        self.total = a.warmup + a.iterations
        think = a.mtbs * comm.dilation / 1e6  # wall seconds: one network us lasts `dilation` wall us
        self.paths = {pid: PathLoop(Path(s, d, a.mtbs), pid, a.seed, think, warmup=a.warmup, measure=a.iterations)
                      for pid, (s, d) in enumerate(pairs) if s == self.me}
        now = comm.now()
        self.due = {pid: p.first(now) for pid, p in self.paths.items()}  # path -> its next send (idle paths)
        self.out: dict[int, int] = {}  # message id -> path
        self.received = 0
        self.lag: list[float] = []  # wall s between a send's due time and its send (this process's delay)
        self.notice: list[float] = []  # wall s between a delivery's due time and its notice here

    def run(self, group: str | None) -> None:
        comm = self.comm
        bid, stopping = None, False
        while True:
            bid, stopping = self.ending(bid, stopping, lambda: comm.ibarrier(group), comm.barrier_done)
            if stopping and not self.out:
                break
            self._send_due(comm.now())
            wake = min([*self.due.values(), *([comm.due()] if comm.inbox else [])], default=None)
            m = comm.poll(None if wake is None else max(0.0, wake - comm.now()))
            now = comm.now()
            while comm.inbox and comm.due() <= now:  # received: handed over at its delivery time
                comm.take()
                self.received += 1
            if m is not None and m["type"] == "net_delivered":
                self._delivered(m["id"])
        comm.barrier()
        while comm.inbox:  # held messages (sent ahead of their delivery time) still count
            comm.recv()
            self.received += 1

    def _send_due(self, now: float) -> None:
        for pid in [p for p, t in self.due.items() if t <= now]:
            self.lag.append(now - self.due.pop(pid))
            p = self.paths[pid]
            payload = struct.pack("<iii", self.me, pid, p.sent - 1)
            self.out[self.comm.send(p.dst, payload, measured=p.measured_send())] = pid

    def _delivered(self, mid: int) -> None:
        delay, at = self.comm.delivered.pop(mid)
        self.notice.append(self.comm.now() - at)
        pid = self.out.pop(mid)
        # the computation starts when the model delivered the message (``at``), not when the
        # notice got here: its way through the interconnect and this process is not the path's
        # time (it would lower the path's rate)
        nxt = self.paths[pid].on_delivery(at, delay, 0.0, 0.0)
        if nxt is not None:
            self.due[pid] = nxt

    def report(self) -> dict:
        delays = [d for p in self.paths.values() for d in p.delays]
        late = sorted(self.comm.lateness)
        q = (lambda pct: percentile(late, pct) if late else None)
        return {"rank": self.me, "paths": len(self.paths), "sent": sum(p.sent for p in self.paths.values()),
                "received": self.received, "mean_delay_us": sum(delays) / len(delays) if delays else None,
                "lateness_p50_s": q(50), "lateness_p99_s": q(99),
                "lateness_us": [round(x * 1e6) for x in self.comm.lateness],
                "send_lag_us": [round(x * 1e6) for x in self.lag], "notice_us": [round(x * 1e6) for x in self.notice]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="nodes.pattern")
    ap.add_argument("--shape", required=True)
    ap.add_argument("--pattern", required=True)
    ap.add_argument("--mtbs", type=float, default=0.0)
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--group", default=None, help="keep sending until every job of this group is done")
    ap.add_argument("--group-jobs", type=int, default=None,
                    help="virtual time: the group's jobs start together once this many are in")
    a = ap.parse_args(argv)
    w, h = (int(v) for v in a.shape.lower().split("x"))
    pairs = pattern_pairs(a.pattern, w, h)
    comm = Comm(sync=True, group=a.group, group_jobs=a.group_jobs if a.group else None)
    if comm.size != w * h:
        print(f"nodes.pattern: the job has {comm.size} ranks, the shape {w}x{h}", file=sys.stderr)
        return 2
    if comm.welcome.get("time") == "virtual":
        from nodes.vpattern import VirtualPatternTask

        task = VirtualPatternTask(a, comm, pairs)
    else:
        task = PatternTask(a, comm, pairs)
    task.run(a.group)
    print(json.dumps(task.report()))
    comm.close()
    return 0


def _main() -> int:
    """The task's entry: an interconnect that refuses or goes away is one line on stderr (the
    line ``mcemu queue`` shows of a failed task), not a traceback."""
    try:
        return main()
    except CommError as e:
        print(f"nodes.pattern: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(_main())
