"""Gang slot-switch skew on the live cluster (issue 7, "Live").

For each machine size, task kind and priority setting: start a cluster with the
``round-robin`` gang policy (one slot = one time unit), submit two whole-machine jobs that
outlast the run, let the daemon switch slots, and read the nodes' own CLOCK_MONOTONIC stamps
(shared by every process on one host) from ``status()["gang_switches"]``:

* skew: from the first node's first signal to the last node's last signal of one switch
  (SIGSTOP of the outgoing task, then SIGCONT of the incoming one, on every node);
* cont skew: the spread of the SIGCONTs alone;
* latency: from the daemon handing the switch to ZeroMQ to the last node's last signal.

Task kinds: ``sleep`` (the synthetic task, a sleeping process) and ``burn`` (a CPU-bound
loop: every node's running task competes with the agents for the cores). ``--rt`` runs the
daemon and the nodes (and their ZeroMQ threads) at SCHED_RR where permitted; tasks always
run at normal priority.

    python scripts/bench_gang_live.py                   # 16, 64, 256 nodes; sleep, burn; rt off/on
    python scripts/bench_gang_live.py --sizes 64 --kinds burn --rt on --switches 80
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from emulator.cli import exit_on_termination  # noqa: E402
from emulator.cli.cluster import start_cluster, stop_cluster  # noqa: E402
from emulator.live.client import Client  # noqa: E402


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return None
    k = (len(xs) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def one(n_nodes: int, kind: str, rt: bool, switches: int, slot_s: float) -> dict:
    dim = n_nodes.bit_length() - 1
    home = Path(tempfile.mkdtemp(prefix="mcemu-bench-gang-"))
    os.environ["MCEMU_HOME"] = str(home)
    res = {"nodes": n_nodes, "kind": kind, "rt": rt, "slot_s": slot_s}
    try:
        st = start_cluster(home, topology=f"hypercube:{dim}", allocator="buddy", gang="round-robin",
                           params=["slot=1.0"], time_unit=slot_s, heartbeat=0.5, liveness=20,
                           rt_priority=10 if rt else None, timeout=120)
        res["rt_granted"] = bool(st.get("rt"))
        c = Client(home=home, timeout=10.0)
        try:
            ids = c.submit_many([{"request": {"cube": dim}, "runtime": 1e6, "burn": kind == "burn"}] * 2)
            warm = 3  # the first switches include creating the tasks

            t = time.monotonic()
            deadline = t + switches * slot_s * 3 + 30
            while True:  # until enough switches reached every node, or the deadline
                st = c.status()
                sw = [s for s in st["gang_switches"] or [] if s["switch"] > warm]
                full = [s for s in sw if s["nodes"] == n_nodes]
                if len(full) >= switches or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            res["wall_s"] = round(time.monotonic() - t, 1)
            res["incomplete"] = len(sw) - len(full)  # switches some node had not reported
            if not full:
                raise RuntimeError(f"no switch reached all {n_nodes} nodes in {res['wall_s']} s")
            res["switches_total"] = st["gang"]["slot"]["number"]
            down = st["nodes"].get("down", 0)
            res["nodes_down"] = down
            for k in ("skew", "cont_skew", "latency"):
                xs = [s[k] * 1000 for s in full if s[k] is not None]
                res[f"{k}_p50_ms"] = round(pct(xs, 50), 3)
                res[f"{k}_p99_ms"] = round(pct(xs, 99), 3)
                res[f"{k}_max_ms"] = round(max(xs), 3)
            res["samples"] = len(full)
            for j in ids:
                c.cancel(j)
        finally:
            c.close()
    except Exception as e:  # report and go on with the next configuration
        res["error"] = f"{type(e).__name__}: {e}"
    finally:
        stop_cluster(home)
        shutil.rmtree(home, ignore_errors=True)
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="16,64,256")
    ap.add_argument("--kinds", default="sleep,burn")
    ap.add_argument("--rt", choices=["off", "on", "both"], default="both")
    ap.add_argument("--switches", type=int, default=60, help="switches measured per configuration (<= 95)")
    ap.add_argument("--slot", type=float, default=0.1, help="slot length in seconds")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    rts = {"off": [False], "on": [True], "both": [False, True]}[a.rt]
    out = {"load_before": os.getloadavg(), "cpus": os.cpu_count(), "runs": []}
    if not a.json:
        print(f"load average {out['load_before'][0]:.2f} {out['load_before'][1]:.2f} {out['load_before'][2]:.2f}, "
              f"{out['cpus']} CPUs; slot {a.slot * 1000:.0f} ms, {a.switches} switches each")
        print(f"{'nodes':>5} {'task':>5} {'rt':>3} | {'skew p50':>9} {'p99':>8} {'max':>8} | "
              f"{'cont p50':>9} {'p99':>8} | {'lat p50':>8} {'p99':>8} | load1")
    for n in map(int, a.sizes.split(",")):
        for kind in a.kinds.split(","):
            for rt in rts:
                r = one(n, kind, rt, min(a.switches, 95), a.slot)
                r["load1_after"] = round(os.getloadavg()[0], 2)
                out["runs"].append(r)
                if a.json:
                    continue
                if "error" in r:
                    print(f"{n:>5} {kind:>5} {'on' if rt else 'off':>3} | error: {r['error']}")
                    continue
                rt_s = ("on" if r["rt_granted"] else "no!") if rt else "off"
                print(f"{n:>5} {kind:>5} {rt_s:>3} | {r['skew_p50_ms']:>7.2f}ms {r['skew_p99_ms']:>6.2f}ms "
                      f"{r['skew_max_ms']:>6.2f}ms | {r['cont_skew_p50_ms']:>7.2f}ms {r['cont_skew_p99_ms']:>6.2f}ms | "
                      f"{r['latency_p50_ms']:>6.2f}ms {r['latency_p99_ms']:>6.2f}ms | {r['load1_after']}"
                      + (f"  ({r['nodes_down']} nodes down)" if r["nodes_down"] else "")
                      + (f"  (only {r['samples']} complete switches)" if r["samples"] < min(a.switches, 95) else ""),
                      flush=True)
    out["load_after"] = os.getloadavg()
    if a.json:
        print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    with exit_on_termination():  # SIGTERM still stops the cluster it started
        sys.exit(main())
