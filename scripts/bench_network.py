#!/usr/bin/env python3
"""Simulated messages per second of the wormhole network model (issue 20, "A benchmark").

Scenarios, each the way ``mcemu net simulate`` runs them (``emulator.sim.network.
simulate_network``: the closed-loop traffic, per-path statistics, utilization):

* ``transpose12-mtbs0``: a 12x12 transpose (132 paths) on a 12x12 mesh, MTBS 0;
* ``transpose12-mtbs25``: the same at MTBS 25 us;
* ``mixed32``: 8 jobs of mixed patterns on a 32x32 mesh (two transposes, a diagonal, a
  stencil, a ring, an all-to-all, a one-to-all, a random permutation; MTBS 0-250 us).

L = 500 flits, T_t = 0.05 us (the dissertation's). Method (printed with the results): one
core (the process is pinned to one CPU); each scenario is run k times (default 3) with a
fresh model and the best wall time is kept; messages = every message delivered in the run
(warm-up included, since it is simulated); messages/s = messages / wall time. Process CPU
time of the same repeat is shown too. Target: 100,000 messages per second on one core.

    python scripts/bench_network.py [--messages N] [--repeat K] [--json] [--profile]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from emulator.sim.network import simulate_network  # noqa: E402
from scheduler.network import Wormhole, parse_job  # noqa: E402

TARGET = 100_000
SCENARIOS = {
    "transpose12-mtbs0": ("mesh:12x12", ["transpose:12x12@0,0:mtbs=0"]),
    "transpose12-mtbs25": ("mesh:12x12", ["transpose:12x12@0,0:mtbs=25"]),
    "mixed32": ("mesh:32x32", [
        "transpose:8x8@0,0:mtbs=25", "transpose:4x4@8,0:mtbs=0", "diagonal:8x8@12,0:mtbs=0",
        "stencil:8x8@20,0:mtbs=50", "ring:16x4@0,8:mtbs=25", "all-to-all:4x4@16,8:mtbs=250",
        "one-to-all:2x2@20,8:mtbs=100", "permutation:8x8@0,16:mtbs=25:seed=1"]),
}


def run_once(topology, specs, messages):
    net = Wormhole(topology)
    jobs = [parse_job(s, topology, i) for i, s in enumerate(specs)]
    w0, c0 = time.perf_counter(), time.process_time()
    doc = simulate_network(net, jobs, messages=messages, seed=1)
    return time.perf_counter() - w0, time.process_time() - c0, doc["simulated_messages"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=30, help="measured messages per path (30; the slowest path decides the length: a 12x12 transpose at MTBS 0 then simulates about 750,000 messages)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--profile", action="store_true", help="profile one run of each scenario")
    args = ap.parse_args(argv)
    try:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        pinned = True
    except (AttributeError, OSError):
        pinned = False
    rows = []
    for name, (topology, specs) in SCENARIOS.items():
        best = None
        for _ in range(args.repeat):
            r = run_once(topology, specs, args.messages)
            if best is None or r[0] < best[0]:
                best = r
        wall, cpu, msgs = best
        rows.append({"scenario": name, "topology": topology, "jobs": specs, "messages": msgs,
                     "wall_seconds": wall, "cpu_seconds": cpu, "messages_per_second": msgs / wall,
                     "meets_target": msgs / wall >= TARGET})
        if args.profile:
            import cProfile
            import pstats

            prof = cProfile.Profile()
            prof.runcall(run_once, topology, specs, args.messages)
            pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(8)
    method = (f"one core ({'pinned' if pinned else 'NOT pinned'}); best of {args.repeat}; "
              f"{args.messages} measured messages per path after a warm-up of a tenth; "
              "messages/s = every simulated message (warm-up included) / wall time of simulate_network; "
              "L = 500 flits, T_t = 0.05 us")
    if args.json:
        json.dump({"method": method, "target_messages_per_second": TARGET, "results": rows}, sys.stdout, indent=2)
        print()
        return 0
    print(f"method: {method}")
    print(f"{'scenario':<22}{'messages':>10}{'wall s':>9}{'cpu s':>9}{'messages/s':>13}  target {TARGET:,}")
    for r in rows:
        print(f"{r['scenario']:<22}{r['messages']:>10,}{r['wall_seconds']:>9.2f}{r['cpu_seconds']:>9.2f}"
              f"{r['messages_per_second']:>13,.0f}  {'met' if r['meets_target'] else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
