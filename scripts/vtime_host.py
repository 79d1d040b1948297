"""Does a program's virtual time depend on the host's load? Issue 28's must-hold, measured.

The Jacobi example (docs/examples/jacobi.py) on 16 ranks of a mesh:8x8 in virtual time, CPU
counted (``--cpu-scale``, the documented default unless given), run ROUNDS times idle and
ROUNDS times with two CPU-bound hogs beside the cluster (``python -c 'while True: pass'``,
started and killed by pid), alternating (idle, hogs, hogs, idle, ...: a drift of the shared
host's other load falls on both). Prints each run's ``MPI.Wtime()`` elapsed time and the job's
mean message delay, the medians, their spreads and the ratios hogs / idle, the load average.

``--intervals`` also compares the runs' compute intervals from the program traces
($MCEMU_HOME/traces): the k-th interval of rank r is the same code in every run, so the CPU
time each one was counted, idle against hogs, is compared per interval (median of the runs),
by the interval's idle length: where the difference comes from.

    python scripts/vtime_host.py [--n 1024] [--iterations 40] [--rounds 3] [--intervals] [--probe]
        [--cpu-scale S] [--cpu-clock raw|gauged] [--repo CHECKOUT]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cluster import ScriptCluster  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
UP = ("--topology", "mesh:8x8", "--allocator", "first-fit", "--scheduler", "fcfs", "--time-unit", "1",
      "--network", "wormhole", "--net-time", "virtual")
# the example with each of its compute segments timed by the program itself (thread CPU time read
# right around the segment: no MPI layer in it), so a run says what its clock counted (the trace)
# against the program's own compute, segment by segment
PROBE = r"""
import json, sys, time
import numpy as np
from mpi4py import MPI
T = time.thread_time
seg = {}
def add(name, t):
    s = seg.setdefault(name, [0, 0.0])
    s[0] += 1
    s[1] += T() - t
world = MPI.COMM_WORLD
N, iterations = int(sys.argv[1]), int(sys.argv[2])
dims = MPI.Compute_dims(world.Get_size(), 2)
cart = world.Create_cart(dims, periods=[False, False], reorder=False)
(py, px), (cy, cx) = dims, cart.Get_coords(cart.Get_rank())
ny, nx = N // py, N // px
up, down = cart.Shift(0, 1)
left, right = cart.Shift(1, 1)
u = np.zeros((ny + 2, nx + 2))
if cy == 0:
    u[0, :] = 1.0
send_col, recv_col = np.empty(ny), np.empty(ny)
local, total = np.zeros(1), np.zeros(1)
for it in range(1, iterations + 1):
    cart.Sendrecv([u[1, 1:-1], MPI.DOUBLE], up, 0, [u[-1, 1:-1], MPI.DOUBLE], down, 0)
    cart.Sendrecv([u[-2, 1:-1], MPI.DOUBLE], down, 1, [u[0, 1:-1], MPI.DOUBLE], up, 1)
    for dest, source, col_out, col_in, tag in ((left, right, 1, -1, 2), (right, left, -2, 0, 3)):
        t = T(); send_col[:] = u[1:-1, col_out]; add("copy out", t)
        cart.Sendrecv([send_col, MPI.DOUBLE], dest, tag, [recv_col, MPI.DOUBLE], source, tag)
        t = T()
        if source != MPI.PROC_NULL:
            u[1:-1, col_in] = recv_col
        add("copy in", t)
    t = T()
    new = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    local[0] = np.sum((new - u[1:-1, 1:-1]) ** 2)
    u[1:-1, 1:-1] = new
    add("stencil", t)
    cart.Allreduce([local, MPI.DOUBLE], [total, MPI.DOUBLE], op=MPI.SUM)
print("SEG " + json.dumps(seg), flush=True)
"""
BUCKETS = (2e-6, 5e-6, 10e-6, 20e-6, 50e-6, 100e-6, 1e-3, float("inf"))  # upper edges, seconds


def jacobi(c: ScriptCluster, n: int, iterations: int, probe: bool = False, timeout: float = 300) -> dict:
    prog = c.repo / "docs" / "examples" / "jacobi.py"
    if probe:
        prog = c.home / "jacobi_probe.py"
        prog.write_text(PROBE)
    jid = c.json("submit", "--shape", "4x4", "--runtime", "3000", "--name", "jacobi",
                 "--command", f"{sys.executable} {prog} {n} {iterations}")["job"]
    c.mcemu("wait", str(jid), "--timeout", str(timeout), timeout=timeout + 30)
    deadline = time.monotonic() + 10
    while True:  # the last statistics may follow the job's end
        row = next(j for j in c.json("queue", "--all")["jobs"] if j["id"] == jid)
        comm = row.get("comm") or {}
        traces = sorted((c.home / "traces" / f"job-{jid}").glob("rank-*.json"))
        if row["state"] != "running" and comm.get("messages") and len(traces) == 16:
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"job {jid}: {row['state']} {row.get('reason')}, {len(traces)} traces")
        time.sleep(0.2)
    if row["state"] != "completed":
        raise RuntimeError(f"job {jid} {row['state']}: {row.get('reason')}")
    out = (c.home / "output" / f"job{jid}.0.out").read_text()
    m = re.search(r"elapsed ([0-9.eE+-]+) s", out)
    elapsed = float(m.group(1)) if m else float("nan")
    segs = {}
    if probe:
        for r in range(16):
            line = next(x for x in (c.home / "output" / f"job{jid}.{r}.out").read_text().splitlines() if x.startswith("SEG "))
            for name, (cnt, cpu) in json.loads(line[4:]).items():
                segs[name] = segs.get(name, 0.0) + cpu
    comp = {}
    for t in traces:
        doc = json.loads(t.read_text())
        comp[doc["rank"]] = [e[1] for e in doc["events"] if e[0] == "c"]
    vt_end = max(json.loads(t.read_text())["events"][-1][1] for t in traces)
    return {"elapsed": elapsed, "delay": comm["mean_delay_us"], "messages": comm["messages"], "comp": comp,
            "segs": segs, "end": vt_end}


def with_hogs(c: ScriptCluster, fn):
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        return fn()
    finally:
        for h in hogs:  # by pid, each
            h.kill()
            h.wait(timeout=10)


def spread(xs: list[float]) -> str:
    m = statistics.median(xs)
    return f"median {m:.6g}, range {min(xs):.6g}..{max(xs):.6g} ({(max(xs) - min(xs)) / m * 100:.1f} %)"


def intervals(idle: list[dict], hogs: list[dict]) -> None:
    """Per interval (rank, k): the median over the runs of each condition; summed by idle length."""
    keys = [(r, k) for r, xs in idle[0]["comp"].items() for k in range(len(xs))]
    same = all(len(run["comp"][r]) == len(idle[0]["comp"][r]) for run in idle + hogs for r in idle[0]["comp"])
    if not same:
        print("intervals: the runs' traces differ in their number of intervals; not compared")
        return
    sums = {b: [0, 0.0, 0.0] for b in BUCKETS}
    for r, k in keys:
        a = statistics.median(run["comp"][r][k] for run in idle)
        b = statistics.median(run["comp"][r][k] for run in hogs)
        edge = next(e for e in BUCKETS if a < e)
        s = sums[edge]
        s[0], s[1], s[2] = s[0] + 1, s[1] + a, s[2] + b
    total = sum(s[1] for s in sums.values())
    print(f"{'idle length <':>14} {'intervals':>9} {'idle CPU s':>11} {'share':>6} {'hogs CPU s':>11} {'hogs/idle':>9}")
    for edge, (cnt, a, b) in sums.items():
        if cnt:
            print(f"{edge * 1e6:>12.0f}us {cnt:>9} {a:>11.6f} {a / total * 100:>5.1f}% {b:>11.6f} {b / a:>9.3f}")


def segments(idle: list[dict], hogs: list[dict]) -> None:
    """The program's own segments (all ranks' CPU, medians of the runs) against what the clocks counted."""
    med = lambda runs, f: statistics.median(f(r) for r in runs)  # noqa: E731
    rows = [(name, lambda r, n=name: r["segs"][n]) for name in idle[0]["segs"]]
    rows.append(("segments, all", lambda r: sum(r["segs"].values())))
    rows.append(("counted (trace)", lambda r: sum(sum(x) for x in r["comp"].values())))
    rows.append(("counted - segments", lambda r: sum(sum(x) for x in r["comp"].values()) - sum(r["segs"].values())))
    rows.append(("last clock (s)", lambda r: r["end"]))
    print(f"{'CPU s, 16 ranks':>20} {'idle':>10} {'hogs':>10} {'hogs/idle':>9}")
    for name, f in rows:
        a, b = med(idle, f), med(hogs, f)
        print(f"{name:>20} {a:>10.6f} {b:>10.6f} {b / a - 1:>+9.1%}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1024, help="the grid (default %(default)s, the example's)")
    ap.add_argument("--iterations", type=int, default=40, help="sweeps (default %(default)s)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repo", type=Path, default=ROOT, help="the checkout whose cluster runs (default: this one)")
    ap.add_argument("--cpu-scale", default=None, help="mcemu up --cpu-scale (default: its default)")
    ap.add_argument("--cpu-clock", default=None, help="mcemu up --cpu-clock (default: its default)")
    ap.add_argument("--intervals", action="store_true", help="compare the compute intervals (traces)")
    ap.add_argument("--probe", action="store_true", help="run the example with its compute segments timed by "
                    "itself (no elapsed time): what the clock counted against the program's own compute")
    a = ap.parse_args(argv)
    extra = [*(["--cpu-scale", a.cpu_scale] if a.cpu_scale else []), *(["--cpu-clock", a.cpu_clock] if a.cpu_clock else [])]
    c = ScriptCluster(a.repo, Path(tempfile.mkdtemp(prefix="mcemu-vtime-host-")))
    idle, hogs = [], []
    try:
        c.mcemu("up", "--detach", *UP, *extra)
        c.record()
        run = lambda: jacobi(c, a.n, a.iterations, a.probe)  # noqa: E731
        for i in range(a.rounds):
            order = ("idle", "hogs") if i % 2 == 0 else ("hogs", "idle")
            for cond in order:
                r = run() if cond == "idle" else with_hogs(c, run)
                (idle if cond == "idle" else hogs).append(r)
                print(f"round {i} {cond:4}: elapsed {r['elapsed']:.6f} s, mean delay {r['delay']:.4f} us, "
                      f"{r['messages']} messages, load {os.getloadavg()[0]:.1f}", flush=True)
    finally:
        left = c.stop()
        subprocess.run(["rm", "-rf", str(c.home)], check=False)
        if left:
            print(f"killed by pid after mcemu down: {left}")
    print(f"\n{a.repo}: Jacobi {a.n}x{a.n} {a.iterations} sweeps, 16 ranks, mesh:8x8, {' '.join(extra) or 'default clock'}")
    for name, key in (("elapsed (s)", "elapsed"), ("mean delay (us)", "delay")):
        xi, xh = [r[key] for r in idle], [r[key] for r in hogs]
        paired = statistics.median(h / i for i, h in zip(xi, xh))  # a round's two runs are adjacent
        print(f"{name}: idle {spread(xi)}; hogs {spread(xh)}; hogs/idle: medians "
              f"{statistics.median(xh) / statistics.median(xi) - 1:+.2%}, rounds' ratios' median {paired - 1:+.2%}")
    if a.intervals:
        intervals(idle, hogs)
    if a.probe:
        segments(idle, hogs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
