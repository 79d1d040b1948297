#!/usr/bin/env python3
"""A fingerprint of the simulator's seeded numbers, to show that a change (a faster data
structure, a refactoring) changes no decision (issue 18, "A faster simulator with identical
decisions").

It runs ``mcemu simulate --json --jobs-out FILE`` in-process for a fixed set of seeded
configurations -- lazy (threshold checked at releases, the default, and at every event; fixed,
none and literal thresholds), scan, fcfs, static, bwq, helm, mq-scan over the hypercube
allocators, the size reductions (rsr, limit), mesh allocators, the gang policies, the NASA
iPSC/860 replay with fcfs, lazy and scan -- and writes, per configuration, the JSON document
(without its wall-clock fields) and the per-job CSV (submit, start, finish, wait, allocated
nodes of every completed job; gang runs have no CSV). Two directories written before and
after a change must be identical byte for byte:

    python scripts/sim_fingerprint.py /tmp/fp-before            # on the old tree
    python scripts/sim_fingerprint.py /tmp/fp-after --compare /tmp/fp-before

``--repo DIR`` fingerprints another checkout (e.g. a copy of the tree before the change);
``--only TEXT`` runs the configurations whose name contains TEXT. The NASA log is read from
``../shared/traces`` next to the repository (``--trace FILE`` otherwise; its configurations
are skipped when it is missing). About a minute and a half of CPU for all of them.
"""
from __future__ import annotations

import argparse
import contextlib
import filecmp
import io
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT.parent / "shared" / "traces" / "NASA-iPSC-1993-3.1-cln.swf.gz"


def configs(trace: Path | None) -> list[tuple[str, list[str]]]:
    out: list[tuple[str, list[str]]] = []

    def add(name, *argv):
        out.append((name, list(argv)))

    h10 = ["--topology", "hypercube:10", "--allocator", "buddy", "--scheduler", "lazy"]
    for seed in (1, 2, 3):
        for svc in ("uniform", "hyperexp"):
            for load in ("0.3", "0.7", "0.9"):
                common = ["--load", load, "--service", svc, "--time", "3000", "--seed", str(seed)]
                add(f"lazy-rel-{svc}-{load}-s{seed}", *h10, *common)
                add(f"lazy-evt-{svc}-{load}-s{seed}", *h10, "--param", "threshold_check=event", *common)
    for seed in (1, 2):
        for params in (["threshold=20"], ["threshold=none"], ["literal=true"],
                       ["threshold=5", "threshold_check=event"]):
            add(f"lazy-{'-'.join(params)}-s{seed}", *h10, *sum([["--param", p] for p in params], []),
                "--load", "0.8", "--service", "hyperexp", "--time", "2000", "--seed", str(seed))
        for sch in ("fcfs", "scan-up", "scan-down", "static", "bwq", "helm", "mq-scan"):
            for alloc in ("buddy", "buddy-bitmap", "gray-code", "free-list", "modified-buddy", "mss",
                          "tree-collapsing", "multiple-gray-code", "naive"):
                add(f"{sch}-{alloc}-s{seed}", "--topology", "hypercube:8", "--allocator", alloc, "--scheduler", sch,
                    "--load", "0.8", "--service", "hyperexp", "--time", "1500", "--seed", str(seed))
        for sch in ("lazy", "fcfs"):
            add(f"{sch}-pc-graph-s{seed}", "--topology", "hypercube:7", "--allocator", "pc-graph", "--scheduler", sch,
                "--load", "0.8", "--time", "1000", "--seed", str(seed))
        for red in ("rsr:4", "limit:2", "limit:greedy", "limit:average"):
            for sch in ("fcfs", "lazy", "scan-up"):
                add(f"{sch}-{red}-s{seed}", "--topology", "hypercube:8", "--allocator", "buddy", "--scheduler", sch,
                    "--reduction", red, "--load", "0.9", "--jobs", "3000", "--warmup", "300", "--seed", str(seed))
        for alloc in ("first-fit", "best-fit", "frame-sliding", "buddy-2d", "naive", "multiple-buddy",
                      "multiple-buddy-ch6", "naive-ch6"):
            for sch in ("fcfs", "lazy", "scan-up"):
                add(f"mesh-{sch}-{alloc}-s{seed}", "--topology", "mesh:16x16", "--allocator", alloc, "--scheduler", sch,
                    "--load", "0.8", "--time", "1500", "--seed", str(seed))
        for g in ("round-robin", "two-queue", "modified-two-queue", "multilevel", "fb"):
            add(f"gang-{g}-s{seed}", "--topology", "hypercube:6", "--allocator", "buddy", "--gang", g,
                "--load", "0.8", "--jobs", "600", "--seed", str(seed))
    for svc in ("uniform", "hyperexp"):  # the benchmark's runs (scripts/bench_sim.py)
        for check in ("release", "event"):
            add(f"bench-{svc}-{check}", *h10, "--param", f"threshold_check={check}", "--load", "0.7",
                "--service", svc, "--time", "10000", "--seed", "1")
    if trace is not None:
        for alloc, sch in (("naive", "fcfs"), ("buddy", "lazy"), ("buddy", "scan-up")):
            add(f"nasa-{sch}-{alloc}", "--topology", "hypercube:7", "--allocator", alloc, "--scheduler", sch,
                "--trace", str(trace))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="directory to write the fingerprint to")
    ap.add_argument("--compare", type=Path, default=None, help="a fingerprint directory to diff against")
    ap.add_argument("--repo", type=Path, default=ROOT, help="the checkout to fingerprint (default: this one)")
    ap.add_argument("--only", default=None, help="only the configurations whose name contains this")
    ap.add_argument("--trace", type=Path, default=TRACE, help="the NASA iPSC/860 log")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(args.repo.resolve()))
    from emulator.cli import main as mcemu

    args.out.mkdir(parents=True, exist_ok=True)
    trace = args.trace if args.trace.exists() else None
    t0 = time.process_time()
    failed, n = [], 0
    for name, run in configs(trace):
        if args.only and args.only not in name:
            continue
        n += 1
        gang = "--gang" in run
        csv = args.out / f"{name}.jobs.csv"
        if csv.exists():
            csv.unlink()
        full = ["simulate", *run, "--json"] + ([] if gang else ["--jobs-out", str(csv)])
        buf, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
                rc = mcemu(full)
        except SystemExit as e:
            rc = e.code
        try:
            doc = json.loads(buf.getvalue())
            for key in ("wall_seconds", "events_per_second", "jobs_written"):  # the clock and the path
                doc.pop(key, None)
            text = json.dumps(doc, indent=1, sort_keys=True)
        except ValueError:
            failed.append(name)
            text = f"rc={rc}\n{buf.getvalue()}\n{err.getvalue()}"
        (args.out / f"{name}.json").write_text(text)
    print(f"{n} configurations in {time.process_time() - t0:.1f} CPU s -> {args.out}"
          + (f"; no JSON from {failed}" if failed else ""), file=sys.stderr)
    if args.compare is None:
        return 0
    names = sorted(p.name for p in args.out.iterdir())
    missing = sorted({p.name for p in args.compare.iterdir()} - set(names)) if not args.only else []
    differ = [f for f in names if not (args.compare / f).exists()
              or not filecmp.cmp(args.out / f, args.compare / f, shallow=False)]
    if differ or missing:
        print(f"DIFFERENT: {len(differ)} files differ or are new {differ[:10]}, {len(missing)} missing {missing[:10]}")
        return 1
    print(f"IDENTICAL: {len(names)} files byte for byte equal to {args.compare}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
