"""The ready-made task of ``mcemu submit --pattern``: one rank of a job whose paths run the
closed loop of scheduler.network.traffic live, through the interconnect.

``python -m nodes.pattern --shape WxH --pattern P --mtbs US --iterations N [--warmup W]``:
the paths are ``pattern_pairs(P, W, H)`` (the registry ``mcemu net`` uses); each path whose
source is this rank computes Exp(MTBS) in dilated time (MTBS network us = MTBS x D wall us),
sends, waits until the message is delivered, and again, ``W + N`` times; the first W are
sent unmeasured (the warm-up of ``mcemu net simulate``). The task also counts the messages
of the paths that end here and exits 0 once its paths are done and every message it expects
has come, so the job ends when every path has done its iterations and its run time comes
from its messages. The ranks start together (``Comm(sync=True)``), as the model's paths all
start at time 0. On exit it prints one JSON line (its counts and the lateness of the
messages it received: wall seconds after their due time), which scripts/bench_net_live.py reads.
"""
from __future__ import annotations

import argparse
import json
import random
import struct
import sys
import time

from nodes.comm import Comm


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="nodes.pattern")
    ap.add_argument("--shape", required=True)
    ap.add_argument("--pattern", required=True)
    ap.add_argument("--mtbs", type=float, default=0.0)
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--group", default=None, help="keep sending until every job of this group is done")
    a = ap.parse_args(argv)
    from scheduler.network.patterns import pattern_pairs

    w, h = (int(v) for v in a.shape.lower().split("x"))
    pairs = pattern_pairs(a.pattern, w, h)
    comm = Comm(sync=True, group=a.group)
    if comm.size != w * h:
        print(f"nodes.pattern: the job has {comm.size} ranks, the shape {w}x{h}", file=sys.stderr)
        return 2
    me = comm.rank
    total = a.warmup + a.iterations
    mine = [(pid, d) for pid, (s, d) in enumerate(pairs) if s == me]
    scale = comm.dilation / 1e6  # wall seconds per network microsecond
    rngs = {pid: random.Random(a.seed * 1_000_003 + pid) for pid, _ in mine}

    def think(pid) -> float:
        return rngs[pid].expovariate(1.0 / a.mtbs) * scale if a.mtbs > 0 else 0.0

    now = time.monotonic()
    due = {pid: now + think(pid) for pid, _ in mine}  # path -> when it sends next (idle paths)
    dest = dict(mine)
    sent = {pid: 0 for pid, _ in mine}
    done = {pid: 0 for pid, _ in mine}  # deliveries
    out: dict[int, int] = {}  # message id -> path
    received = 0
    delays: list[float] = []
    lag: list[float] = []  # wall s between a send's due time and its send (this process's delay)
    notice: list[float] = []  # wall s between a delivery's due time and its notice here
    # A path that has done its messages keeps sending, unmeasured, until every path of the job
    # has (the first barrier; with --group, of every job of the group), so that the others keep
    # its traffic to the end, as in `mcemu net simulate`. Then no new sends; each rank waits for its last delivery, and a second barrier
    # makes sure no rank leaves while a message to it is still on the way.
    bid = None
    stopping = False
    while True:
        if bid is None and all(n >= total for n in done.values()):
            bid = comm.ibarrier(a.group)
        if bid is not None and not stopping and comm.barrier_done(bid):
            stopping = True
            due.clear()
        if stopping and not out:
            break
        now = time.monotonic()
        for pid in [p for p, t in due.items() if t <= now]:
            lag.append(now - due.pop(pid))
            payload = struct.pack("<iii", me, pid, sent[pid])
            out[comm.send(dest[pid], payload, measured=a.warmup <= sent[pid] < total)] = pid
            sent[pid] += 1
        wake = min([*due.values(), *([comm.due()] if comm.inbox else [])], default=None)
        m = comm.poll(None if wake is None else max(0.0, wake - time.monotonic()))
        now = time.monotonic()
        while comm.inbox and comm.due() <= now:  # received: handed over at its delivery time
            comm.take()
            received += 1
        if m is None:
            continue
        if m["type"] == "net_delivered":
            delay, at = comm.delivered.pop(m["id"])
            notice.append(time.monotonic() - at)
            pid = out.pop(m["id"])
            done[pid] += 1
            if a.warmup < done[pid] <= total:
                delays.append(delay)
            if not stopping:
                # the computation starts when the model delivered the message (``at``), not
                # when the notice got here: its way through the interconnect and this
                # process is not the path's time (it would lower the path's rate)
                due[pid] = at + think(pid)
    comm.barrier()
    while comm.inbox:  # held messages (sent ahead of their delivery time) still count
        comm.recv()
        received += 1
    late = sorted(comm.lateness)
    q = (lambda f: late[min(len(late) - 1, int(f * len(late)))] if late else None)
    print(json.dumps({"rank": me, "paths": len(mine), "sent": sum(sent.values()), "received": received,
                      "mean_delay_us": sum(delays) / len(delays) if delays else None,
                      "lateness_p50_s": q(0.5), "lateness_p99_s": q(0.99),
                      "lateness_us": [round(x * 1e6) for x in comm.lateness],
                      "send_lag_us": [round(x * 1e6) for x in lag], "notice_us": [round(x * 1e6) for x in notice]}))
    comm.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
