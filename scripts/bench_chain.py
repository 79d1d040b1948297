"""The floor under a virtual-time ping-pong (issue 28's 20,000 messages/s): ``python
scripts/bench_chain.py``.

In virtual time a ping-pong's messages form one chain (docs/ARCHITECTURE.md, "Limits"): the
interconnect answers the rank furthest behind, that rank runs until its next send, and only then
can the next answer be decided. Each message therefore costs one wake-up of the interconnect and
one of a rank, one after the other, whatever the number of cores. This script measures what such
a chain costs on this host with no emulator at all: a hub process and N worker processes, each
on a unix socket pair (as a rank and the interconnect are); the hub sends 32 bytes to worker
``k mod N`` and waits for its 32-byte answer, STEPS times. Before answering, a worker touches W
small dicts of its own (``--work``: 0, 100, 1000), a stand-in for the Python state that a rank's
MPI call reads (its matcher, requests, frames, the interpreter's caches of its modules).
``--bytes B`` makes the token B bytes (65536: bench_mpi's large messages), read whole at each
end, and the hub relays each answer it read to the next worker, as the interconnect relays a
message: two copies through the kernel a step, as a message makes from rank to rank.

Printed: steps/s and wall, hub and workers' CPU microseconds a step, for N = 2 (two processes
that take turns: their caches stay warm) and N = 64 (64 ranks of bench_mpi's ping-pong: each
worker wakes after the 63 others have run and finds its caches cold). The ratio of the two is
what 64 ranks cost over 2 for the same work, and steps/s at N = 64 bounds what a virtual-time
ping-pong of 64 ranks could carry with that much work on the chain.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import sys
import time


def read(sock: socket.socket, view: memoryview) -> bool:
    """Fill ``view`` from ``sock``; False at its end."""
    got = 0
    while got < len(view):
        n = sock.recv_into(view[got:])
        if not n:
            return False
        got += n
    return True


def worker(sock: socket.socket, work: int, nbytes: int) -> None:
    state = [{f"k{j}": j for j in range(8)} for _ in range(work)]
    buf = memoryview(bytearray(nbytes))
    while read(sock, buf):
        total = 0
        for d in state:
            total += d["k3"]
        sock.sendall(buf)


def chain(n: int, steps: int, work: int, nbytes: int = 32) -> dict:
    """One run: the hub's chain through ``n`` workers (forked; each waited for by pid)."""
    pairs = [socket.socketpair() for _ in range(n)]
    pids = []
    try:
        for i in range(n):
            pid = os.fork()
            if pid == 0:  # the worker: its own end only
                code = 0
                try:
                    for j, (a, b) in enumerate(pairs):
                        a.close()
                        if j != i:
                            b.close()
                    worker(pairs[i][1], work, nbytes)
                except BaseException:  # noqa: BLE001  (a child never returns into the caller)
                    code = 1
                os._exit(code)
            pids.append(pid)
        for _, b in pairs:
            b.close()
        hub = [a for a, _ in pairs]
        msg = memoryview(bytearray(b"x" * nbytes))
        for s in hub:  # every worker started and has built its state
            s.sendall(msg)
            read(s, msg)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0, c0 = time.perf_counter(), time.process_time()
        for k in range(steps):  # the answer read is what the next worker gets
            s = hub[k % n]
            s.sendall(msg)
            read(s, msg)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        for a, _ in pairs:  # a worker ends at its socket's end
            a.close()
        for pid in pids:
            os.waitpid(pid, 0)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    kids = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {"workers": n, "work": work, "bytes": nbytes, "steps": steps, "steps_per_s": steps / wall,
            "us_per_step": 1e6 * wall / steps, "hub_cpu_us": 1e6 * cpu / steps, "workers_cpu_us": 1e6 * kids / steps}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=20_000)
    p.add_argument("--work", type=int, nargs="+", default=[0, 100, 1000], help="dicts a worker reads a step")
    p.add_argument("--workers", type=int, nargs="+", default=[2, 64])
    p.add_argument("--bytes", type=int, default=32, help="the token's bytes (65536: a large message)")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    if a.bytes < 1 or a.steps < 1:
        p.error("--bytes and --steps must be at least 1")
    rows = [chain(n, a.steps, w, a.bytes) for w in a.work for n in a.workers]
    if a.json:
        print(json.dumps({"rows": rows, "cores": os.cpu_count(), "load": os.getloadavg()}))
        return 0
    print(__doc__.split("\n\n")[1])
    print(f"{'work':>6} {'workers':>7} {'steps/s':>9} {'us/step':>8} {'hub CPU us':>10} {'workers CPU us':>14}")
    for r in rows:
        print(f"{r['work']:>6} {r['workers']:>7} {r['steps_per_s']:>9,.0f} {r['us_per_step']:>8.1f} "
              f"{r['hub_cpu_us']:>10.1f} {r['workers_cpu_us']:>14.1f}")
    print(f"token {a.bytes} bytes; load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
