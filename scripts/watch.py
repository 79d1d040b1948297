#!/usr/bin/env python
"""Watch the running cluster's events: one line per job or node state change, and a summary
line per daemon snapshot. ``python scripts/watch.py [--json] [--snapshots]``; Ctrl-C stops.
(The full Rich view is ``mcemu monitor``.)"""
import argparse
import json
import sys

from emulator.live.client import Events


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--connect", help="the daemon's events endpoint (default: MCEMU_HOME's ipc socket)")
    ap.add_argument("--json", action="store_true", help="print each event as one JSON line")
    ap.add_argument("--snapshots", action="store_true", help="also print the periodic snapshots")
    a = ap.parse_args(argv)
    ev = Events(a.connect)
    try:
        while True:
            r = ev.recv(1.0)
            if r is None:
                continue
            topic, m = r
            if topic == b"snapshot" and not a.snapshots:
                continue
            if a.json:
                print(json.dumps(m, default=str), flush=True)
            elif topic == b"job":
                info = m.get("info") or {}
                nodes = info.get("nodes") or []
                where = f" on {len(nodes)} nodes {nodes[:8]}{'...' if len(nodes) > 8 else ''}" if nodes else ""
                print(f"{m['t']:10.2f}  job {m['job']:>6} {m['state']:<10}{where}", flush=True)
            elif topic == b"node":
                print(f"{m['t']:10.2f}  node {m['node']:>5} {m['state']}", flush=True)
            else:
                d = m["data"]
                if d.get("shutdown"):
                    print(f"{m['t']:10.2f}  daemon shut down", flush=True)
                    return 0
                states = {}
                for s in d["nodes"]:
                    states[s] = states.get(s, 0) + 1
                print(f"{m['t']:10.2f}  snapshot nodes {states} running {len(d['running'])} "
                      f"queued {len(d['queued'])}", flush=True)
    except KeyboardInterrupt:
        return 0
    finally:
        ev.close()


if __name__ == "__main__":
    sys.exit(main())
