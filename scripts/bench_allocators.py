#!/usr/bin/env python3
"""Cost of one allocate + release for every registered allocator.

Machines: hypercubes n = 6, 10, 14 and meshes 16x16, 32x32, 64x64. Every allocator that
``scheduler.allocators.names(topology)`` lists for a machine is measured on it.

Workload (the same seeded sequence of random choices for every allocator on a machine):
request sizes follow the lazy paper's uniform distribution: a k-cube with k uniform over
0..n-1 on an n-cube; on a W x H mesh a w x h submesh with w uniform over 1..W/2 and h
uniform over 1..H/2. Warm-up: allocate random requests until >= 70% of the nodes are busy
(a request that does not fit is dropped). Steady state, repeated: release one live
allocation chosen at random, then allocate random requests until the machine is >= 70%
busy again or a request fails. So the machine stays about 70% busy and fragmented, and
failed searches (the expensive case for scanning allocators) are counted as they occur.

Timing: time.perf_counter around every allocate and release call of the steady state
(warm-up is not timed). "alloc" is the mean over all allocate calls, successful or not;
"release" the mean release; "pair" = alloc + release, the cost of one allocate + release.
Each (allocator, machine) runs in its own process with a time budget (2 s of steady state,
at most 20 000 releases; --quick: 0.3 s / 2 000) and a hard timeout (warm-up included);
a cell that hits the timeout is reported as such and the allocator is not tried on larger
machines of that kind, so the whole run stays within a few minutes.

    python scripts/bench_allocators.py [--quick] [--json] [--only NAME ...]
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scheduler import allocators  # noqa: E402
from scheduler.topology import Request, parse_topology  # noqa: E402

MACHINES = ["hypercube:6", "hypercube:10", "hypercube:14", "mesh:16x16", "mesh:32x32", "mesh:64x64"]
BUSY = 0.70


def random_request(topo, rng: random.Random) -> Request:
    if topo.kind == "hypercube":
        return Request.cube(rng.randrange(max(topo.n, 1)))
    return Request.submesh(rng.randint(1, max(1, topo.width // 2)),
                           rng.randint(1, max(1, topo.height // 2)))


def measure(name: str, machine: str, budget: float, max_ops: int, seed: int = 1) -> dict:
    topo = parse_topology(machine)
    alloc = allocators.create(name, topo)
    rng = random.Random(seed)
    target = BUSY * topo.size
    live = []
    misses = 0
    while alloc.used < target and misses < 50:  # warm-up, not timed
        a = alloc.allocate(random_request(topo, rng))
        if a is None:
            misses += 1
        else:
            live.append(a)
    clock = time.perf_counter
    t_alloc = t_rel = 0.0
    n_alloc = n_rel = n_fail = 0
    busy_sum = 0.0
    start = clock()
    while n_rel < max_ops and clock() - start < budget and live:
        a = live.pop(rng.randrange(len(live)))
        t0 = clock()
        alloc.release(a)
        t_rel += clock() - t0
        n_rel += 1
        while alloc.used < target:
            req = random_request(topo, rng)
            t0 = clock()
            a = alloc.allocate(req)
            t_alloc += clock() - t0
            n_alloc += 1
            if a is None:
                n_fail += 1
                break
            live.append(a)
        busy_sum += alloc.used / topo.size
    if not n_rel or not n_alloc:
        return {"allocator": name, "machine": machine, "status": "no steady state"}
    alloc_us = t_alloc / n_alloc * 1e6
    rel_us = t_rel / n_rel * 1e6
    return {"allocator": name, "machine": machine, "status": "ok", "alloc_us": alloc_us,
            "release_us": rel_us, "pair_us": alloc_us + rel_us, "allocations": n_alloc,
            "releases": n_rel, "failed_share": n_fail / n_alloc, "mean_busy": busy_sum / n_rel}


def _worker(q, *args):
    try:
        q.put(measure(*args))
    except Exception as e:  # report, do not crash the table
        q.put({"allocator": args[0], "machine": args[1], "status": f"error: {type(e).__name__}: {e}"})


def run_cell(name: str, machine: str, budget: float, max_ops: int, timeout: float) -> dict:
    ctx = mp.get_context("fork" if sys.platform != "win32" else "spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_worker, args=(q, name, machine, budget, max_ops), daemon=True)
    p.start()
    try:
        res = q.get(timeout=timeout)
    except Exception:
        res = {"allocator": name, "machine": machine, "status": f"timeout > {timeout:.0f} s"}
    p.join(1)
    if p.is_alive():
        p.kill()  # only the worker this function started
        p.join()
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="short budgets (a smoke run)")
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    ap.add_argument("--only", nargs="*", help="measure only these allocators")
    ap.add_argument("--machines", nargs="*", default=MACHINES)
    args = ap.parse_args(argv)
    budget, max_ops, timeout = (0.3, 2000, 8.0) if args.quick else (2.0, 20000, 20.0)

    rows: list[dict] = []
    given_up: set[tuple[str, str]] = set()  # (allocator, kind) that timed out on a smaller machine
    started = time.perf_counter()
    for machine in args.machines:
        topo = parse_topology(machine)
        for name in allocators.names(topo):
            if args.only and name not in args.only:
                continue
            if (name, topo.kind) in given_up:
                rows.append({"allocator": name, "machine": machine,
                             "status": "skipped (timed out on a smaller machine)"})
                continue
            try:
                allocators.create(name, topo)
            except Exception as e:
                rows.append({"allocator": name, "machine": machine, "status": f"n/a: {e}"})
                continue
            res = run_cell(name, machine, budget, max_ops, timeout)
            if res["status"].startswith("timeout"):
                given_up.add((name, topo.kind))
            rows.append(res)
            if not args.json:
                print(f"  {name:20s} {machine:14s} {_cell(res)}", file=sys.stderr)

    def pair(name, machine):
        for r in rows:
            if r["allocator"] == name and r["machine"] == machine and r["status"] == "ok":
                return r["pair_us"]
        return None

    ratios = {}
    b6, b14, bb14 = pair("buddy", "hypercube:6"), pair("buddy", "hypercube:14"), pair("buddy-bitmap", "hypercube:14")
    if b6 and b14:
        ratios["buddy_n14_over_n6"] = b14 / b6
    if b14 and bb14:
        ratios["bitmap_over_buddy_n14"] = bb14 / b14
    doc = {"method": __doc__.split("\n\n", 1)[1].split("\n    python")[0].strip(),
           "busy_target": BUSY, "budget_s": budget, "max_releases": max_ops,
           "elapsed_s": time.perf_counter() - started, "rows": rows, "ratios": ratios}
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    _print_table(rows, args.machines, doc)
    return 0


def _cell(r: dict) -> str:
    if r["status"] != "ok":
        return r["status"]
    return f"{r['pair_us']:.1f} ({r['alloc_us']:.1f}+{r['release_us']:.1f})"


def _print_table(rows, machines, doc) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console = Console(width=max(console.width, 132))  # a pipe reports 80 columns
    table = Table(title="one allocate + release, microseconds (machine ~70% busy); --json has the split")
    table.add_column("allocator", no_wrap=True)
    for m in machines:
        table.add_column(m.replace("hypercube:", "n="), justify="right", no_wrap=True)
    names = sorted({r["allocator"] for r in rows})
    for name in names:
        cells = []
        for m in machines:
            r = next((r for r in rows if r["allocator"] == name and r["machine"] == m), None)
            cells.append("" if r is None else f"{r['pair_us']:.1f}" if r["status"] == "ok"
                         else r["status"].split(" (")[0][:20])
        table.add_row(name, *cells)
    console.print(table)
    console.print("[bold]Method.[/bold] " + " ".join(doc["method"].split()))
    ratios = doc["ratios"]
    if "buddy_n14_over_n6" in ratios:
        console.print(f"buddy pair cost n=14 / n=6: [bold]{ratios['buddy_n14_over_n6']:.2f}x[/bold] (target < 3x)")
    if "bitmap_over_buddy_n14" in ratios:
        console.print(f"buddy-bitmap / buddy at n=14: [bold]{ratios['bitmap_over_buddy_n14']:.2f}x[/bold]")
    console.print(f"elapsed {doc['elapsed_s']:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
