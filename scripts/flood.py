#!/usr/bin/env python3
"""The flood of issue 30: can one client stall the cluster?

A client key (over tcp, CURVE) queues ``--jobs`` jobs as fast as it can (pipelined, the
``Client.submit_many`` window), then sends ``--queries`` ``queue --all`` requests back to back
(all sent before the first reply is read: the unpaged request of any client, old or new),
while the admin (the cluster's owner, over ipc) pings the daemon on a schedule of one ping
every 20 ms, each ping's time counted from when it was due (``_pinger``). Reported:

* the queueing time and how many submits were accepted (refusals counted by their code:
  a quota or a rate limit);
* each ``queue --all`` reply's time (from its send to its reply) and row count;
* the admin's ping round trip during the flood: p50, p99, max;
* the nodes the daemon declared down (the journal's ``node_down`` inputs) and the jobs that
  failed (the journal's ``jobs`` rows), counted a few seconds after the flood.

    python scripts/flood.py                       # 20,000 jobs, 40 queue --all, hypercube:3
    python scripts/flood.py --jobs 2000 --queries 20
    python scripts/flood.py --repo /tmp/flood-old # another checkout (the old tree)
    python scripts/flood.py --as-admin            # the flood from the admin (no quota, no rate)

The cluster is brought up in its own MCEMU_HOME with the checkout's ``mcemu up --detach``,
brought down with ``mcemu down``, and whatever of its processes is left is stopped by PID.
The client and the pinger are processes of their own, running the checkout's client code, so
that neither shares this script's interpreter. Exit status 0 when no node was declared down,
no job failed and the admin's ping p99 is under 100 ms.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _cluster import ScriptCluster

ROOT = Path(__file__).resolve().parents[1]
PING_EVERY = 0.02


# ---------------------------------------------------------------- the two workers (own processes)

def _pinger(home: str, stop_file: str) -> None:
    """Pings on a fixed schedule (every PING_EVERY); each ping's time is counted from when it
    was due, not from when it could be sent: a sequential pinger stuck behind one 2.5 s stall
    would otherwise count it once instead of for each of the 125 pings it held up (the
    "coordinated omission" of wrk2 and HdrHistogram)."""
    from emulator.live.client import Client

    out = []
    with Client(home=Path(home), timeout=120.0) as c:
        due = time.monotonic()
        while not os.path.exists(stop_file):
            c.ping()
            done = time.monotonic()
            while due <= done:  # every ping due meanwhile waited until now
                out.append((due, done - due))
                due += PING_EVERY
            time.sleep(max(0.0, due - time.monotonic()))
    print(json.dumps(out))


def _flooder(endpoint: str | None, home: str, key: str | None, jobs: int, queries: int, runtime: float) -> None:
    from emulator.live import protocol as P
    from emulator.live.client import Client, DaemonError

    res: dict = {}
    with Client(endpoint, timeout=300.0, home=Path(home) if home else None, key=key) as c:
        t0 = time.monotonic()
        got = c.submit_many([{"request": {"nodes": 1}, "runtime": runtime, "name": f"f{i}"} for i in range(jobs)])
        res["submit_s"] = time.monotonic() - t0
        res["submit_start"], res["submit_end"] = t0, time.monotonic()
        refused: dict[str, int] = {}
        for g in got:
            if isinstance(g, DaemonError):
                refused[g.code] = refused.get(g.code, 0) + 1
        res["accepted"] = sum(1 for g in got if not isinstance(g, DaemonError))
        res["refused"] = refused
        sent = {}
        for _ in range(queries):  # back to back: every request out before the first reply is read
            rid = next(c._ids)
            c.sock.send(P.encode("queue", id=rid, all=True))
            sent[rid] = time.monotonic()
        replies = []
        deadline = time.monotonic() + 600
        while len(replies) < queries and time.monotonic() < deadline:
            if not c.sock.poll(1000):
                continue
            m = P.decode(c.sock.recv(), max_size=P.MAX_REPLY)
            if m.get("id") in sent:
                rows = len(m["data"]["jobs"]) if m["type"] == "ok" else -1
                replies.append((time.monotonic() - sent.pop(m["id"]), rows))
        res["queries"] = replies
        res["flood_end"] = time.monotonic()
    print(json.dumps(res))


# ---------------------------------------------------------------- the cluster

class Cluster(ScriptCluster):
    """The flooded cluster (scripts/_cluster.py); a client key of the environment is not its."""

    def __init__(self, repo: Path, home: Path):
        super().__init__(repo, home)
        self.env.pop("MCEMU_KEY", None)

    def journal(self, sql: str) -> int:
        db = sqlite3.connect(f"file:{self.home / 'journal.db'}?mode=ro", uri=True, timeout=10)
        try:
            return db.execute(sql).fetchone()[0]
        finally:
            db.close()


def _free_port() -> int:
    for _ in range(200):
        with socket.socket() as s1, socket.socket() as s2:
            s1.bind(("127.0.0.1", 0))
            port = s1.getsockname()[1]
            try:
                s2.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
            return port
    raise RuntimeError("no two free tcp ports")


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def _worker(c: Cluster, *args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(Path(__file__).resolve()), *args], cwd=c.repo, env=c.env,
                            stdout=subprocess.PIPE, text=True)


def run(a) -> dict:
    repo = Path(a.repo).resolve()
    home = Path(tempfile.mkdtemp(prefix="mcemu-flood-"))
    c = Cluster(repo, home)
    stop_file = home / "stop-pinging"
    procs: list[subprocess.Popen] = []
    try:
        c.mcemu("keys", "init", "--admin", "boss")
        c.mcemu("keys", "issue", "mallory")
        port = _free_port()
        c.mcemu("up", "--detach", "--no-restart", "--topology", a.topology, "--scheduler", "fcfs",
                "--listen", f"127.0.0.1:{port}", "--json")
        c.record()
        pinger = _worker(c, "--role", "pinger", "--home", str(home), "--stop-file", str(stop_file))
        procs.append(pinger)
        time.sleep(0.5)  # a few pings before the flood
        if a.as_admin:
            target = ["--home", str(home)]
        else:
            target = ["--endpoint", f"tcp://127.0.0.1:{port}", "--key", str(home / "keys/issued/mallory.toml")]
        flooder = _worker(c, "--role", "flooder", *target, "--jobs", str(a.jobs), "--queries", str(a.queries),
                          "--runtime", str(a.runtime))
        procs.append(flooder)
        out, _ = flooder.communicate(timeout=900)
        flood = json.loads(out)
        c.record()
        time.sleep(a.settle)  # liveness acts within an expiry (or --hang): give it the chance
        stop_file.touch()
        pings = json.loads(pinger.communicate(timeout=300)[0])
        during = [d for t, d in pings if flood["submit_start"] <= t <= flood["flood_end"]]
        listing = [d for t, d in pings if flood["submit_end"] <= t <= flood["flood_end"]]
        res = {"repo": str(repo), "as_admin": a.as_admin, "jobs": a.jobs, "queries_sent": a.queries, **flood,
               "ping_n": len(during), "ping_p50_ms": 1000 * _pct(during, 0.5),
               "ping_p99_ms": 1000 * _pct(during, 0.99), "ping_listing_p99_ms": 1000 * _pct(listing, 0.99),
               "ping_listing_n": len(listing), "ping_max_ms": 1000 * max(during, default=float("nan")),
               "nodes_down": c.journal("SELECT COUNT(*) FROM events WHERE kind = 'node_down'"),
               "jobs_failed": c.journal("SELECT COUNT(*) FROM jobs WHERE state = 'failed'"),
               "jobs_requeued": c.journal("SELECT COUNT(*) FROM events WHERE kind = 'requeue'"),
               "load": " ".join(Path("/proc/loadavg").read_text().split()[:3]),
               "jobs_completed": c.journal("SELECT COUNT(*) FROM jobs WHERE state = 'completed'")}
        return res
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        res_left = c.stop()
        if res_left:
            print(f"stopped by pid after mcemu down: {res_left}", file=sys.stderr)
        shutil.rmtree(home, ignore_errors=True)


def report(r: dict) -> None:
    q = r["queries"]
    print(f"tree: {r['repo']}")
    who = "the admin over ipc" if r["as_admin"] else "one client key over tcp+CURVE"
    print(f"method: {who} submits {r['jobs']} jobs (cube 0) pipelined, then sends "
          f"{r['queries_sent']} `queue --all` back to back; the admin pings over ipc every {PING_EVERY * 1000:.0f} ms")
    print(f"queueing: {r['submit_s']:.2f} s for {r['jobs']} submits, {r['accepted']} accepted, refused {r['refused']}")
    print(f"queue --all replies: {len(q)} of {r['queries_sent']}; seconds each (rows): "
          + ", ".join(f"{t:.2f} ({n})" for t, n in q))
    print(f"admin ping during the flood: n={r['ping_n']} p50 {r['ping_p50_ms']:.1f} ms, p99 {r['ping_p99_ms']:.1f} ms, "
          f"max {r['ping_max_ms']:.1f} ms; while the listings were asked: n={r['ping_listing_n']} "
          f"p99 {r['ping_listing_p99_ms']:.1f} ms")
    print(f"load average at the end: {r['load']}")
    print(f"nodes declared down: {r['nodes_down']}; jobs failed: {r['jobs_failed']} (requeued {r['jobs_requeued']}, "
          f"completed {r['jobs_completed']})")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", default=str(ROOT), help="the checkout to run (default this one)")
    ap.add_argument("--jobs", type=int, default=20_000)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--runtime", type=float, default=3.0, help="each job's run time in model units (3)")
    ap.add_argument("--topology", default="hypercube:3")
    ap.add_argument("--settle", type=float, default=3.0, help="seconds after the flood before counting (3)")
    ap.add_argument("--as-admin", action="store_true", help="flood from the admin (ipc) instead of a client key")
    ap.add_argument("--json", help="also write every figure to this file")
    ap.add_argument("--role", choices=("pinger", "flooder"), help=argparse.SUPPRESS)
    ap.add_argument("--home", help=argparse.SUPPRESS)
    ap.add_argument("--stop-file", help=argparse.SUPPRESS)
    ap.add_argument("--endpoint", help=argparse.SUPPRESS)
    ap.add_argument("--key", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.role == "pinger":
        _pinger(a.home, a.stop_file)
        return 0
    if a.role == "flooder":
        _flooder(a.endpoint, a.home, a.key, a.jobs, a.queries, a.runtime)
        return 0
    r = run(a)
    report(r)
    if a.json:
        Path(a.json).write_text(json.dumps(r, indent=1))
    ok = r["nodes_down"] == 0 and r["jobs_failed"] == 0 and r["ping_p99_ms"] < 100
    print("HOLDS" if ok else "DOES NOT HOLD")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
