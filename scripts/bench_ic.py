"""The interconnect's own CPU per message, in memory (issue 28): ``python scripts/bench_ic.py``.

scripts/bench_mpi.py measures the whole live cluster, where 64 rank processes, the daemon and
the host's other load share two cores and the interconnect's part is one figure of CPU time.
This drives one :class:`~emulator.live.interconnect.Interconnect` of the checkout on
``PYTHONPATH`` in this process, on a fake clock, through the calls its loop makes (a task's
frames as the bytes its connection reads, cut by netlocal.Frames, handled by ``handle_frame``;
then the turn's ``pump`` and ``flush``, each connection's frames encoded for its write) and
times only those calls (``time.process_time``): the same frames every run, whatever the host
does beside it. The ranks are played by this script between the turns (not timed): 64 ranks of
one job on mesh:8x8 with the frames nodes.comm and nodes.mpi send.

* ``pingpong``: ranks 2k and 2k+1 trade an 8-byte message each way per iteration;
* ``alltoall``: every rank sends to the 63 others (a pairwise exchange), then waits for the
  63 it gets, per iteration.

In ``--time virtual`` each rank's send carries its clock and a rank that has nothing to do
says ``net_wait``; the answer (``net_go``) lets it go on. In ``--time dilated`` the fake clock
moves by ``--step`` wall seconds per turn. Prints CPU microseconds per message (the
interconnect's, per message delivered) for each case; ``--profile N`` prints cProfile's top N.

    PYTHONPATH=. python scripts/bench_ic.py
    PYTHONPATH=/work/main python scripts/bench_ic.py      # another checkout, same frames
"""
from __future__ import annotations

import argparse
import cProfile
import hashlib
import json
import pstats
import sys
import tempfile
import time
from collections import deque
from pathlib import Path

import msgpack

from emulator.live import netlocal
from emulator.live import protocol as P
from emulator.live.interconnect import Interconnect
from emulator.live.kernel import FakeClock, Kernel
from emulator.live.secret import task_secret

RANKS, JOB, PAYLOAD = 64, 1, b"\x00" * 40  # an 8-byte MPI message and its envelope


class Conn:
    """A task's connection: what the interconnect writes is encoded as for the socket and kept."""

    __slots__ = ("rank", "wrote", "digest")

    def __init__(self, rank: int):
        self.rank, self.wrote, self.digest = rank, [], hashlib.sha256()

    def write(self, frames) -> None:
        data = netlocal.encode(frames)
        self.wrote.append(data)
        self.digest.update(data)


class Rank:
    """One rank's program as the frames it sends (``said``) and reads (``take``)."""

    def __init__(self, bench, rank: int):
        self.b, self.rank, self.conn = bench, rank, Conn(rank)
        self.reader = netlocal.Frames(P.MAX_REPLY)  # what it reads
        self.reader_in = netlocal.Frames(P.MAX_WIRE)  # what the interconnect reads of it
        self.vt, self.ids, self.it, self.got = 0.0, 0, 0, 0
        self.out: list = []
        self.waiting = False

    def send(self, to: int) -> None:
        self.ids += 1
        f = {"id": self.ids, "to": to, "data": self.b.payload, "nbytes": self.b.nbytes}
        if self.b.virtual:
            f["vt"] = self.vt
        self.out.append(P.encode_unchecked("net_send", **f))

    def wait(self) -> None:
        if self.b.virtual:
            self.out.append(P.encode_unchecked("net_wait", vt=self.vt, until=None, what="Recv"))
        self.waiting = True

    def done(self) -> None:
        """The program ended: in virtual time it says so (it bounds nobody any more)."""
        self.waiting = False
        if self.b.virtual:
            self.out.append(P.encode_unchecked("net_bye", vt=self.vt))

    def take(self) -> None:
        """Read what the interconnect wrote; go on where the program can."""
        frames = []
        for data in self.conn.wrote:
            frames += self.reader.feed(data)
        self.conn.wrote.clear()
        go = False
        for f in frames:
            m = msgpack.unpackb(f)
            t = m["type"]
            if t == "net_msg":
                self.got += 1
            elif t == "net_go":
                self.vt = max(self.vt, m["vt"]) + 1e-6  # a microsecond of the program's own
                go = True
            elif t == "error":
                raise RuntimeError(f"rank {self.rank}: {m}")
        if self.waiting and (go or not self.b.virtual):
            self.b.kernel_step(self)

    def wire(self) -> bytes:
        out, self.out = netlocal.encode(self.out), []
        return out


class Bench:
    def __init__(self, home: Path, kernel_name: str, time_mode: str, iterations: int, step: float, nbytes: int = 8):
        self.nbytes, self.payload = nbytes, PAYLOAD + b"\x00" * (nbytes - 8)
        self.virtual = time_mode == "virtual"
        self.name, self.iterations, self.step = kernel_name, iterations, step
        cfg = {"topology": "mesh:8x8", "net_dilation": 1000.0, "net_time": time_mode, "flit_bytes": 2}
        self.clock = FakeClock(1.0)
        self.ic = Interconnect(home, cfg, kernel=Kernel(self.clock))
        self.ranks = [Rank(self, r) for r in range(RANKS)]
        self.by_conn = {r.conn: r for r in self.ranks}
        self.cpu = 0.0
        self.turns = 0

    # the programs ---------------------------------------------------------------------------

    def start(self, r: Rank) -> None:
        if self.name == "pingpong" and r.rank % 2:
            r.wait()
        else:
            self.kernel_step(r, first=True)

    def kernel_step(self, r: Rank, first: bool = False) -> None:
        """``r`` may go on: its next sends and wait, or the end."""
        if self.name == "pingpong":  # even: send, then wait for the reply; odd: the other way round
            even = r.rank % 2 == 0
            if not (even and first):
                if r.got < r.it + 1:
                    return r.wait() if self.virtual else None
                if even:
                    r.it += 1
            if r.it >= self.iterations:
                return r.done()
            r.send(r.rank ^ 1)
            if not even:
                r.it += 1
            if r.it < self.iterations or even:
                r.wait()
            else:
                r.done()
            return
        if not first:  # all-to-all: an iteration ends when its 63 messages are in
            if r.got < (r.it + 1) * (RANKS - 1):
                return r.wait() if self.virtual else None
            r.it += 1
            if r.it >= self.iterations:
                return r.done()
        for k in range(1, RANKS):
            r.send((r.rank + k) % RANKS)
        r.wait()

    # the loop -------------------------------------------------------------------------------

    def turn(self, ready: list) -> None:
        """One turn of the interconnect's loop: what ``ready`` ranks wrote, then pump and flush."""
        ic, now = self.ic, self.clock.now()
        t0 = time.process_time()
        for r, data in ready:
            for f in r.reader_in.feed(data):
                ic.handle_frame(r.conn, f, now)
        ic.pump()
        ic.flush()
        self.cpu += time.process_time() - t0
        self.turns += 1

    def run(self, per_turn: int = 1) -> dict:
        ic = self.ic
        for r in self.ranks:
            hello = P.encode("net_hello", job=JOB, attempt=1, rank=r.rank, nodes=list(range(RANKS)), sync=True,
                             secret=task_secret(ic.jobs.key, JOB, 1, r.rank))
            self.turn([(r, netlocal.encode([hello]))])
        for r in self.ranks:
            r.take()
            self.start(r)
        delivered0 = sum(r.got for r in self.ranks)
        cpu0, turns0 = self.cpu, self.turns
        idle = 0
        while True:
            talking = deque(r for r in self.ranks if r.out)
            if not talking:
                if all(not r.waiting for r in self.ranks) or idle > 100_000:
                    break
                idle += 1
            while talking or not idle:
                ready = [(r, r.wire()) for r in (talking.popleft() for _ in range(min(per_turn, len(talking))))]
                self.turn(ready)
                if not self.virtual:
                    self.clock.advance(self.step)
                for r in self.ranks:
                    if r.conn.wrote:
                        r.take()
                if not talking:
                    break
            if not self.virtual and not any(r.out for r in self.ranks):
                self.clock.advance(self.step)
                self.turn([])
                for r in self.ranks:
                    if r.conn.wrote:
                        r.take()
        n = sum(r.got for r in self.ranks) - delivered0
        cpu = self.cpu - cpu0
        return {"case": f"{self.name} {'virtual' if self.virtual else 'dilated'}", "messages": n,
                "turns": self.turns - turns0, "ic_cpu_s": round(cpu, 4),
                "us_per_msg": round(1e6 * cpu / n, 2) if n else None,
                "digest": hashlib.sha256(b"".join(r.conn.digest.digest() for r in self.ranks)).hexdigest()[:16]}


def _profiled(b: Bench, a) -> dict:
    """``b`` run under cProfile, its top ``a.profile`` functions (by own time) on stderr."""
    prof = cProfile.Profile()
    prof.enable()
    res = b.run(a.per_turn)
    prof.disable()
    print(f"--- {res['case']}", file=sys.stderr)
    pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(a.profile)
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--time", choices=("virtual", "dilated", "both"), default="both")
    ap.add_argument("--kernel", choices=("pingpong", "alltoall", "both"), default="both")
    ap.add_argument("--iterations", type=int, default=None, help="default: 300 ping-pong, 4 all-to-all")
    ap.add_argument("--step", type=float, default=0.0002, help="dilated: wall seconds the fake clock moves per turn")
    ap.add_argument("--bytes", type=int, default=8, help="bytes of a message (default 8)")
    ap.add_argument("--per-turn", type=int, default=1, help="ranks read per turn of the loop (default 1)")
    ap.add_argument("--profile", type=int, default=0, metavar="N", help="print cProfile's top N (by own time)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    out = []
    for mode in (("virtual", "dilated") if a.time == "both" else (a.time,)):
        for k in (("pingpong", "alltoall") if a.kernel == "both" else (a.kernel,)):
            with tempfile.TemporaryDirectory(prefix="mcbench-ic-") as home:
                b = Bench(Path(home), k, mode, a.iterations or (300 if k == "pingpong" else 4), a.step, a.bytes)
                out.append(_profiled(b, a) if a.profile else b.run(a.per_turn))
    if a.json:
        print(json.dumps(out))
    else:
        for r in out:
            print(f"{r['case']:20s} {r['messages']:7d} msgs {r['turns']:7d} turns  interconnect "
                  f"{r['ic_cpu_s']:.3f} s CPU = {r['us_per_msg']} us/msg  (frames' digest {r['digest']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
