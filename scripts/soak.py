#!/usr/bin/env python
"""Soak the live cluster: a stream of jobs, communicating ones among them, under node, daemon
and interconnect SIGKILLs, hostile frames, a flooding client and CPU hogs; then check that every
job ended exactly once, that no attempt overlapped its predecessor and that nothing is left.

    python scripts/soak.py --minutes 10            # a table at the end (and --out: JSON)

Method
  cluster: a new MCEMU_HOME in a temporary directory, ``mcemu keys init`` and ``mcemu up`` on
    mesh:4x4 with ``--network wormhole``, the topology's allocator, the default discipline, a
    loopback --listen port, a time unit of 0.05 s, the launcher restarting dead nodes,
    --max-requeue 3, and a client key ``mallory`` held to --client-max-jobs and --client-rate.
  stream: Poisson arrivals (mean gap ``--gap`` s), each named KIND-N, of four kinds (``MIX``):
    *plain* synthetic jobs (1x1, 2x1, 2x2 or 4x2, 1-20 time units); *traced* ones, the same
    running ``TRACE`` (each rank notes its pid and whether a process of an earlier attempt of its
    job is still alive: an overlap); *pattern* jobs (transpose 2x2 or ring 4x2, mtbs 25 us,
    20-60 messages per path: ``mcemu submit --pattern``); *mpi*: docs/examples programs run
    unchanged (ring, cpi, jacobi, transpose, mandelbrot, and futures_primes as a pool of
    workers: ``python -m mpi4py.futures``). A submit the daemon does not answer
    (it is down) is counted *unanswered*, not retried.
  faults: a random node agent SIGKILLed every ``--node-kill`` s on average (the launcher restarts
    it); the interconnect (its pidfile) every ``--net-kill`` s on average while the daemon serves
    (the daemon restarts it and requeues its jobs); the daemon every ``--daemon-kill`` s, dead for
    1-3 s, recovered with ``mcemu up --detach`` (which must exit 0).
  hostile: every 2 s ``--hostile`` malformed frames over ipc and over tcp with mallory's key, and
    raw garbage to the tcp port. flood: a process of its own with mallory's key, every
    ``--flood-every`` s: ``--flood`` submits and 20 ``queue --all`` sent back to back, then a
    cancel of what was accepted. Refusals ``quota``, ``rate-limited`` and ``busy`` are what the
    daemon's admission owes it (expected); any other error or silence is counted as an error.
  hogs: ``--hogs`` CPU-bound processes beside the cluster while the stream runs.
  end: the stream, flood and hogs stop (by pid); at most ``--drain`` s for the queue to empty,
    then ``mcemu down``. From the journal (SQLite, read-only) and what the soak saw:
    *lost*: a job acknowledged, or any job in the journal, that is not completed, failed or
    cancelled; *doubled*: a job with more than one terminal event, a KIND-N name on two jobs, an
    overlap TRACE reported, or two attempts of a job with live processes in the same sample of
    the agents' task cgroups; *left*: every pid seen (daemon, launcher, interconnect, nodes,
    tasks: sampled every 0.5 s) alive after ``mcemu down``; *false downs*: ``node_down`` events
    of a node beyond the SIGKILLs it got. Exit status 0 only when these are all 0, every
    recovery exited 0 and the flood met no unexpected error; the home is then removed (unless
    ``--keep``).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from emulator.live import home as homemod  # noqa: E402
from emulator.live.client import Client, ClientError  # noqa: E402
from _soak_report import MIX, table, verdict  # noqa: E402  (scripts/ is on sys.path when run as a script)
from _soak_watch import Watching  # noqa: E402

SHAPES = ([1, 1], [2, 1], [2, 2], [4, 2])
PATTERNS = (([2, 2], "transpose"), ([4, 2], "ring"))
EXAMPLES = ROOT / "docs" / "examples"
MPI = (("ring.py 3", [2, 2]), ("cpi.py 100000", [2, 2]), ("jacobi.py 16 20", [2, 2]), ("transpose.py", [2, 2]),
       ("mandelbrot.py 32 24 100", [2, 1]), ("-m mpi4py.futures futures_primes.py", [2, 2]))
TRACE = """d="$1"; f="$d/j$MCEMU_JOB_ID"
if [ -f "$f" ]; then while read att pid; do
  if [ "$att" -lt "$MCEMU_ATTEMPT" ] && grep -qs '^State:[[:space:]]*[A-Y]' "/proc/$pid/status"; then
    echo "$MCEMU_JOB_ID $MCEMU_ATTEMPT $pid" >> "$d/overlaps"; fi; done < "$f"; fi
echo "$MCEMU_ATTEMPT $$" >> "$f"
exec sleep "$2"
"""


class Soak(Watching):
    def __init__(self, a):
        self.a = a
        self.rng = random.Random(a.seed)
        self.home = Path(tempfile.mkdtemp(prefix="mcemu-soak-", dir="/tmp"))
        self.env = dict(os.environ, MCEMU_HOME=str(self.home))
        self.env.pop("MCEMU_KEY", None)
        self.port = _free_port()
        self.seen: dict[int, float] = {}  # pid -> create time: everything to check at the end
        self.acked: dict[int, str] = {}   # job id -> name, answered by the daemon
        self.kinds: Counter = Counter()   # submitted, by kind
        self.killed: Counter = Counter()  # node -> SIGKILLs
        self.overlaps: set[int] = set()   # jobs seen with two attempts' processes at once
        self.sampled: set[tuple] = set()  # (job, attempt) seen alive in the agents' cgroups
        self.submit_s: list[float] = []   # the admin's submit round trips
        self.outages: list[list] = []     # [killed, recovered] wall times of the daemon
        self.helpers: list[subprocess.Popen] = []  # hogs and the flooder: the soak's own
        self.counts = Counter(unanswered=0, node_kills=0, net_kills=0, daemon_kills=0, recoveries=0,
                              recovery_failures=0, hostile_frames=0, hostile_replies=0, raw_garbage=0)

    # ------------------------------------------------------------------ helpers

    def mcemu(self, *args, timeout=120) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "emulator", *map(str, args)], env=self.env, cwd=ROOT,
                              capture_output=True, text=True, timeout=timeout)

    def stop_helpers(self) -> None:
        for p in self.helpers:
            if p.poll() is None:
                p.kill()
                p.wait(10)

    # ------------------------------------------------------------------ the run

    def start(self) -> None:
        for args in (("keys", "init"), ("keys", "issue", "mallory"),
                     ("up", "--detach", "--topology", self.a.topology, "--network", "wormhole", "--time-unit", "0.05",
                      "--listen", f"127.0.0.1:{self.port}", "--max-requeue", "3", "--client-max-jobs",
                      self.a.flood // 4, "--client-rate", self.a.flood // 5)):
            r = self.mcemu(*args)
            if r.returncode:
                raise SystemExit(f"soak: mcemu {' '.join(args[:2])} failed: {r.stderr.strip()}")
        self.record()
        (self.home / "trace.sh").write_text(TRACE)
        (self.home / "trace").mkdir()
        from emulator.cli.net import pattern_job  # the command `mcemu submit --pattern` builds

        self.patterns = []
        with Client(home=self.home, timeout=10.0) as c:
            for shape, name in PATTERNS:
                for it in (20, 40, 60):
                    a = SimpleNamespace(pattern=name, mtbs=25.0, iterations=it, warmup=None, seed=0, group=None,
                                        runtime=None)
                    req = {"shape": list(shape)}
                    self.patterns.append((req, *pattern_job(a, req, c)))
        for _ in range(self.a.hogs):
            self.helpers.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
        if self.a.flood:
            self.stop_file = self.home / "stop-flood"
            self.helpers.append(subprocess.Popen(
                [sys.executable, str(ROOT / "scripts" / "_soak_flood.py"), "--endpoint", f"tcp://127.0.0.1:{self.port}",
                 "--key", str(self.home / "keys/issued/mallory.toml"), "--stop-file", str(self.stop_file),
                 "--flood", str(self.a.flood), "--flood-every", str(self.a.flood_every)],
                cwd=ROOT, env=self.env, stdout=subprocess.PIPE, text=True))

    def job(self) -> tuple[str, dict, float, str | None]:
        """The next job of the stream: (kind, request, runtime, command)."""
        rng = self.rng
        kind = rng.choices(list(MIX), weights=list(MIX.values()))[0]
        if kind == "pattern":
            req, cmd, rt = rng.choice(self.patterns)
            return kind, dict(req), rt, cmd
        if kind == "mpi":
            prog, shape = rng.choice(MPI)
            launcher = "-m mpi4py.futures " if prog.startswith("-m mpi4py.futures ") else ""
            return kind, {"shape": shape}, 120.0, f"{sys.executable} {launcher}{EXAMPLES / prog.removeprefix(launcher)}"
        rt = rng.uniform(1, 20)
        cmd = f"sh {self.home}/trace.sh {self.home}/trace {rt * 0.05:.3f}" if kind == "traced" else None
        return kind, {"shape": rng.choice(SHAPES)}, rt, cmd

    def run(self, progress) -> None:
        a, rng = self.a, self.rng
        client = Client(home=self.home, timeout=1.0)
        now = time.monotonic()
        t_end = now + a.minutes * 60
        due = {"job": now + rng.expovariate(1 / a.gap), "node": now + rng.expovariate(1 / a.node_kill),
               "net": now + rng.expovariate(1 / a.net_kill), "daemon": now + a.daemon_kill * rng.uniform(0.5, 1.0),
               "hostile": now + 2.0, "record": now}
        restart_at = None
        n = 0
        try:
            while (now := time.monotonic()) < t_end:
                progress(now, t_end)
                if now >= due["record"]:
                    self.record()
                    due["record"] = now + 0.5
                if now >= due["job"]:
                    n += 1
                    kind, req, rt, cmd = self.job()
                    self.kinds[kind] += 1
                    try:
                        self.acked[client.submit(req, rt, name=f"{kind}-{n}", command=cmd)] = f"{kind}-{n}"
                        self.submit_s.append(time.monotonic() - now)
                    except ClientError:
                        self.counts["unanswered"] += 1
                        client.close()  # a late answer must not be read as the next one's
                        client = Client(home=self.home, timeout=1.0)
                    due["job"] = now + rng.expovariate(1 / a.gap)
                if now >= due["node"]:
                    self._kill_node()
                    due["node"] = now + rng.expovariate(1 / a.node_kill)
                if now >= due["net"] and restart_at is None:
                    self._kill_interconnect()
                    due["net"] = now + rng.expovariate(1 / a.net_kill)
                if now >= due["daemon"] and restart_at is None:
                    if self._kill_daemon():  # the stream goes on while it is dead
                        restart_at = now + rng.uniform(1.0, 3.0)
                    due["daemon"] = now + a.daemon_kill * rng.uniform(0.5, 1.5)
                if restart_at is not None and now >= restart_at:
                    self._recover()
                    restart_at = None
                if now >= due["hostile"]:
                    self._hostile()
                    due["hostile"] = time.monotonic() + 2.0
                time.sleep(max(0.0, min(due["job"], due["record"]) - time.monotonic()))
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
                self.record()
                os.kill(victim["pid"], signal.SIGKILL)
                self.counts["node_kills"] += 1
                self.killed[victim["node"]] += 1

    def _kill_interconnect(self) -> None:
        p = homemod.read_pidfile(self.home / "interconnect.pid")
        if p is not None:
            self.record()
            p.send_signal(signal.SIGKILL)
            self.counts["net_kills"] += 1

    def _kill_daemon(self) -> bool:
        p = homemod.read_pidfile(self.home / "daemon.pid")
        if p is None:
            return False
        self.record()
        p.send_signal(signal.SIGKILL)
        p.wait(10)
        self.outages.append([time.time(), None])
        self.counts["daemon_kills"] += 1
        return True

    def _recover(self) -> None:
        r = self.mcemu("up", "--detach")
        self.outages[-1][1] = time.time()
        self.counts["recoveries"] += 1
        if r.returncode:
            self.counts["recovery_failures"] += 1
            print(f"soak: recovery failed ({r.returncode}): {r.stderr.strip()}", file=sys.stderr)
        self.record()

    def _hostile(self) -> None:
        from tests.fixtures.hostile import blast

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
        flood = {}
        if self.a.flood:
            self.stop_file.touch()
            try:
                flood = json.loads(self.helpers[-1].communicate(timeout=180)[0] or "{}")
            except (subprocess.TimeoutExpired, ValueError):
                flood = {"errors": {"no report": 1}}
        self.stop_helpers()
        t0 = time.monotonic()
        deadline = t0 + self.a.drain
        while time.monotonic() < deadline:
            self.record()
            try:
                with Client(home=self.home, timeout=2.0) as c:
                    if not c.queue()["jobs"]:  # the active ones (--all: the ended ones too)
                        break
            except ClientError:
                if homemod.read_pidfile(self.home / "daemon.pid") is None:
                    self.mcemu("up", "--detach")
            time.sleep(0.5)
        self.counts["drain_s"] = round(time.monotonic() - t0, 1)
        self.record()
        down = self.mcemu("down")
        left = self.left()
        for pid in left:  # the soak's own clean-up, by pid: a failure is reported, not kept
            try:
                psutil.Process(pid).kill()
            except psutil.Error:
                pass
        return verdict(self, left, down.returncode, flood)

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _parse(argv) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--topology", default="mesh:4x4", help="a mesh (the pattern and MPI jobs ask for submeshes)")
    ap.add_argument("--gap", type=float, default=0.3, help="mean seconds between two submissions")
    ap.add_argument("--node-kill", type=float, default=4.0, help="mean seconds between two node kills")
    ap.add_argument("--net-kill", type=float, default=30.0, help="mean seconds between two interconnect kills")
    ap.add_argument("--daemon-kill", type=float, default=40.0, help="seconds between two daemon kills")
    ap.add_argument("--hostile", type=int, default=200, help="hostile frames per burst and socket")
    ap.add_argument("--flood", type=int, default=1500, help="submits per flood burst (0: no flood); the client's "
                    "quota is a quarter of it, its rate a fifth of it a second")
    ap.add_argument("--flood-every", type=float, default=15.0, help="seconds between two flood bursts")
    ap.add_argument("--hogs", type=int, default=2, help="CPU-bound processes beside the cluster")
    ap.add_argument("--drain", type=float, default=180.0, help="seconds to let the queue empty at the end")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", action="store_true", help="keep the cluster's home (journal, logs) after a pass")
    ap.add_argument("--json", action="store_true", help="print the JSON document instead of the table")
    ap.add_argument("--out", help="write the JSON document here (default: a file in the temporary directory)")
    a = ap.parse_args(argv)
    if min(a.minutes, a.gap, a.node_kill, a.net_kill, a.daemon_kill, a.flood_every) <= 0 or min(a.hogs, a.flood) < 0:
        ap.error("--minutes, --gap, --node-kill, --net-kill, --daemon-kill and --flood-every must be > 0, "
                 "--hogs and --flood >= 0")
    if not a.topology.startswith("mesh:"):
        ap.error("--topology must be a mesh (mesh:WxH): the pattern and MPI jobs ask for submeshes")
    return a


def main(argv=None) -> int:
    a = _parse(argv)
    s = Soak(a)
    try:
        s.start()
        if a.json:
            s.run(lambda now, end: None)
        else:
            from rich.progress import Progress

            with Progress() as bar:
                task = bar.add_task("soak", total=a.minutes * 60)
                start = time.monotonic()
                s.run(lambda now, end: bar.update(task, completed=now - start))
        v = s.finish()
    except BaseException:
        s.stop_helpers()
        s.record()
        s.mcemu("down")
        for pid in s.left():
            try:
                psutil.Process(pid).kill()
            except psutil.Error:
                pass
        raise
    ok = not (v["lost"] or v["doubled"] or v["left_running"] or v["false_downs"] or v["recovery_failures"]
              or v["down_exit"] or v["flood"].get("errors"))
    if ok and not a.keep:
        shutil.rmtree(s.home, ignore_errors=True)
        v["home"] = None
    out = Path(a.out or Path(tempfile.gettempdir()) / f"mcemu-soak-{time.strftime('%Y%m%d-%H%M%S')}.json")
    out.write_text(json.dumps({**v, "ok": ok}, indent=2))
    if a.json:
        print(json.dumps({**v, "ok": ok}, indent=2))
    else:
        from rich.console import Console

        Console().print(table(v, ok))
        print(f"JSON: {out}" + (f"; home (journal, logs): {v['home']}" if v["home"] else ""))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
