#!/usr/bin/env python
"""Soak the live cluster: a stream of jobs while nodes are SIGKILLed, the daemon is SIGKILLed
and recovered, and hostile frames arrive; then check that every job finished exactly once
and that nothing is left running.

    python scripts/soak.py --minutes 10            # a table at the end; --json for one document

Method
  cluster: a new MCEMU_HOME in a temporary directory, ``mcemu keys init`` and ``mcemu up``
    (hypercube:4 by default, buddy, the default discipline, --listen on a loopback port, a time
    unit of 0.05 s, the launcher restarting dead nodes, --max-requeue 3).
  stream: Poisson arrivals (mean gap ``--gap`` seconds) of synthetic jobs, sizes 0-3 cubes
    uniform, run times 1-20 time units (0.05-1 s), each named ``soak-N``. A submit that gets
    no answer (the daemon is down) is not retried: it is counted as *unanswered*, and its name
    may appear in the journal at most once.
  faults: every ``--node-kill`` seconds (on average) a random node agent is SIGKILLed (the
    launcher restarts it); every ``--daemon-kill`` seconds the daemon is SIGKILLed, left dead
    for 1-3 s, and recovered with ``mcemu up --detach`` (which must exit 0).
  hostile: every 2 s a burst of ``--hostile`` frames (tests/fixtures/hostile.py: malformed,
    spoofed, oversized) over ipc, the same over tcp with a client key (node messages and others'
    jobs forbidden), and raw garbage to the tcp port without a handshake.
  end: the stream stops; the soak waits (at most ``--drain`` s) until no job is queued or
    running, then ``mcemu down``. From the journal (SQLite, read-only): *lost* = a job
    acknowledged to the stream, or any job in the journal, that is not completed, failed or
    cancelled; *doubled* = a job with more than one terminal event (depart, fail, cancel) or a
    ``soak-N`` name on two jobs. *left* = every pid the soak saw (daemons, launcher, nodes,
    tasks; sampled every 0.5 s) still alive after ``mcemu down``. Exit status 0 only when lost,
    doubled and left are all 0 and every recovery exited 0; the home is then removed (unless
    ``--keep``), else kept for its journal and logs.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from emulator.cli.monitor import still_alive  # noqa: E402
from emulator.live import home as homemod  # noqa: E402
from emulator.live.client import Client, ClientError  # noqa: E402
from tests.fixtures.hostile import blast  # noqa: E402

TERMINAL = ("depart", "fail", "cancel")
FINISHED = ("completed", "failed", "cancelled")


class Soak:
    def __init__(self, a):
        self.a = a
        self.rng = random.Random(a.seed)
        self.home = Path(tempfile.mkdtemp(prefix="mcemu-soak-", dir="/tmp"))
        self.env = dict(os.environ, MCEMU_HOME=str(self.home))
        self.port = _free_port()
        self.seen: dict[int, float] = {}  # pid -> create time: everything to check at the end
        self.acked: dict[int, str] = {}   # job id -> name, answered by the daemon
        self.unanswered: list[str] = []
        self.counts = dict(submitted=0, node_kills=0, daemon_kills=0, recoveries=0, recovery_failures=0,
                           hostile_frames=0, hostile_replies=0, raw_garbage=0)

    # ------------------------------------------------------------------ helpers

    def mcemu(self, *args, timeout=120) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "emulator", *map(str, args)], env=self.env, cwd=ROOT,
                              capture_output=True, text=True, timeout=timeout)

    def record(self) -> None:
        procs = []
        for name in ("daemon.pid", "launcher.pid"):
            p = homemod.read_pidfile(self.home / name)
            if p is not None:
                procs.append(p)
                try:
                    procs += p.children(recursive=True)
                except psutil.Error:
                    pass
        for p in procs:
            try:
                self.seen.setdefault(p.pid, p.create_time())
            except psutil.Error:
                pass

    def left(self) -> list[int]:
        return [p.pid for p in still_alive(self.seen)]

    # ------------------------------------------------------------------ the run

    def start(self) -> None:
        r = self.mcemu("keys", "init")
        if r.returncode:
            raise SystemExit(f"soak: mcemu keys init failed: {r.stderr.strip()}")
        self.mcemu("keys", "issue", "mallory")
        r = self.mcemu("up", "--detach", "--topology", self.a.topology, "--time-unit", "0.05",
                       "--listen", f"127.0.0.1:{self.port}", "--max-requeue", "3")
        if r.returncode:
            raise SystemExit(f"soak: mcemu up failed: {r.stderr.strip()}")
        self.record()

    def run(self, progress) -> None:
        a, rng = self.a, self.rng
        client = Client(home=self.home, timeout=1.0)
        t_end = time.monotonic() + a.minutes * 60
        now = time.monotonic()
        next_job = now + rng.expovariate(1 / a.gap)
        next_node_kill = now + rng.expovariate(1 / a.node_kill)
        next_daemon_kill = now + a.daemon_kill * rng.uniform(0.5, 1.0)
        next_hostile = now + 2.0
        next_record = now
        restart_at = None
        n = 0
        try:
            while (now := time.monotonic()) < t_end:
                progress(now, t_end)
                if now >= next_record:
                    self.record()
                    next_record = now + 0.5
                if now >= next_job:
                    n += 1
                    name = f"soak-{n}"
                    self.counts["submitted"] += 1
                    try:
                        jid = client.submit({"cube": rng.randrange(0, 4)}, runtime=rng.uniform(1, 20), name=name)
                        self.acked[jid] = name
                    except ClientError:
                        self.unanswered.append(name)
                        client.close()  # a late answer must not be read as the next one's
                        client = Client(home=self.home, timeout=1.0)
                    next_job = now + rng.expovariate(1 / a.gap)
                if now >= next_node_kill:
                    self._kill_node()
                    next_node_kill = now + rng.expovariate(1 / a.node_kill)
                if now >= next_daemon_kill and restart_at is None:
                    if self._kill_daemon():  # the stream goes on while it is dead
                        restart_at = now + rng.uniform(1.0, 3.0)
                    next_daemon_kill = now + a.daemon_kill * rng.uniform(0.5, 1.5)
                if restart_at is not None and now >= restart_at:
                    self._recover()
                    restart_at = None
                if now >= next_hostile:
                    self._hostile()
                    next_hostile = time.monotonic() + 2.0
                time.sleep(max(0.0, min(next_job, next_record) - time.monotonic()))
        finally:
            client.close()
            if restart_at is not None:
                self._recover()

    def _kill_node(self) -> None:
        try:
            with Client(home=self.home, timeout=1.0) as c:
                nodes = [n for n in c.nodes() if n.get("connected") and n["pid"]]
        except ClientError:
            return
        if nodes:
            victim = self.rng.choice(nodes)
            p = homemod.read_pidfile(self.home / "launcher.pid")
            kids = {k.pid for k in p.children()} if p else set()
            if victim["pid"] in kids:  # only a node process of this cluster, by pid
                os.kill(victim["pid"], signal.SIGKILL)
                self.counts["node_kills"] += 1

    def _kill_daemon(self) -> bool:
        p = homemod.read_pidfile(self.home / "daemon.pid")
        if p is None:
            return False
        self.record()
        p.send_signal(signal.SIGKILL)
        p.wait(10)
        self.counts["daemon_kills"] += 1
        return True

    def _recover(self) -> None:
        r = self.mcemu("up", "--detach")
        self.counts["recoveries"] += 1
        if r.returncode:
            self.counts["recovery_failures"] += 1
            print(f"soak: recovery failed ({r.returncode}): {r.stderr.strip()}", file=sys.stderr)
        self.record()

    def _hostile(self) -> None:
        k = self.a.hostile
        seed = self.rng.randrange(1 << 30)
        for ep, key in ((homemod.control_endpoint(self.home), None),
                        (f"tcp://127.0.0.1:{self.port}", self.home / "keys" / "issued" / "mallory.toml")):
            replies, _, _ = blast(ep, seed, k, key=key, wait=1.0)
            self.counts["hostile_frames"] += k
            self.counts["hostile_replies"] += replies
        for i in range(5):
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as raw:
                    raw.sendall(random.Random(seed + i).randbytes(300))
                self.counts["raw_garbage"] += 1
            except OSError:
                pass  # the daemon is being restarted

    def finish(self) -> dict:
        deadline = time.monotonic() + self.a.drain
        while time.monotonic() < deadline:
            self.record()
            try:
                with Client(home=self.home, timeout=2.0) as c:
                    if not c.queue()["jobs"]:
                        break
            except ClientError:
                if homemod.read_pidfile(self.home / "daemon.pid") is None:
                    self.mcemu("up", "--detach")
            time.sleep(0.5)
        self.record()
        down = self.mcemu("down")
        left = self.left()
        for pid in left:  # the soak's own clean-up, by pid: a failure is reported, not kept
            try:
                psutil.Process(pid).kill()
            except psutil.Error:
                pass
        return self.verdict(left, down.returncode)

    def verdict(self, left, down_rc) -> dict:
        db = sqlite3.connect(f"file:{homemod.journal_path(self.home)}?mode=ro", uri=True)
        rows = {i: (name, state) for i, name, state in db.execute("SELECT id, name, state FROM jobs")}
        terminal: dict[int, int] = {}
        for (job,) in db.execute(f"SELECT job FROM events WHERE kind IN {TERMINAL}"):
            terminal[job] = terminal.get(job, 0) + 1
        requeues = db.execute("SELECT COUNT(*) FROM events WHERE kind = 'requeue'").fetchone()[0]
        db.close()
        names: dict[str, int] = {}
        for name, _ in rows.values():
            names[name] = names.get(name, 0) + 1
        lost = sorted({j for j in self.acked if j not in rows or rows[j][1] not in FINISHED}
                      | {j for j, (_, st) in rows.items() if st not in FINISHED})
        doubled = sorted({j for j, k in terminal.items() if k > 1}
                         | {j for j, (name, _) in rows.items() if name.startswith("soak-") and names[name] > 1})
        restarts = 0
        log = self.home / "launcher.log"
        if log.exists():
            restarts = log.read_text().count("restarting it in")
        states: dict[str, int] = {}
        for _, st in rows.values():
            states[st] = states.get(st, 0) + 1
        return {"minutes": self.a.minutes, "topology": self.a.topology, "home": str(self.home),
                **self.counts, "acknowledged": len(self.acked), "unanswered": len(self.unanswered),
                "jobs_in_journal": len(rows), "states": states, "requeues": requeues,
                "node_restarts": restarts, "lost": lost, "doubled": doubled, "left_running": left,
                "down_exit": down_rc, "processes_seen": len(self.seen)}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--topology", default="hypercube:4")
    ap.add_argument("--gap", type=float, default=0.15, help="mean seconds between two submissions")
    ap.add_argument("--node-kill", type=float, default=4.0, help="mean seconds between two node kills")
    ap.add_argument("--daemon-kill", type=float, default=40.0, help="seconds between two daemon kills")
    ap.add_argument("--hostile", type=int, default=200, help="hostile frames per burst and socket")
    ap.add_argument("--drain", type=float, default=180.0, help="seconds to let the queue empty at the end")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", action="store_true", help="keep the cluster's home (journal, logs) after a pass")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if a.minutes <= 0 or a.gap <= 0 or a.node_kill <= 0 or a.daemon_kill <= 0:
        ap.error("--minutes, --gap, --node-kill and --daemon-kill must be > 0")
    s = Soak(a)
    try:
        s.start()
        if a.json:
            s.run(lambda now, end: None)
        else:
            with Progress() as bar:
                task = bar.add_task("soak", total=a.minutes * 60)
                start = time.monotonic()
                s.run(lambda now, end: bar.update(task, completed=now - start))
        v = s.finish()
    except BaseException:
        s.record()
        s.mcemu("down")
        for pid in s.left():
            try:
                psutil.Process(pid).kill()
            except psutil.Error:
                pass
        raise
    ok = not v["lost"] and not v["doubled"] and not v["left_running"] and not v["recovery_failures"] \
        and v["down_exit"] == 0
    if ok and not a.keep:
        shutil.rmtree(s.home, ignore_errors=True)
        v["home"] = None
    if a.json:
        print(json.dumps({**v, "ok": ok}, indent=2))
    else:
        t = Table(title=f"soak: {a.minutes:g} min on {a.topology} ({'OK' if ok else 'FAILED'})", box=None)
        t.add_column("what")
        t.add_column("count", justify="right")
        for k in ("submitted", "acknowledged", "unanswered", "jobs_in_journal", "requeues", "node_kills",
                  "node_restarts", "daemon_kills", "recoveries", "recovery_failures", "hostile_frames",
                  "hostile_replies", "raw_garbage", "processes_seen"):
            t.add_row(k.replace("_", " "), str(v[k]))
        t.add_row("states", ", ".join(f"{n} {s}" for s, n in sorted(v["states"].items())))
        for k in ("lost", "doubled", "left_running"):
            t.add_row(k.replace("_", " "), str(len(v[k])) + (f" {v[k][:10]}" if v[k] else ""))
        Console().print(t)
        if v["home"]:
            print(f"home (journal, logs): {v['home']}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
