"""Shared fixtures for the live-cluster tests: a cluster in its own MCEMU_HOME, started with
the real ``mcemu`` command line and stopped BY PID at teardown.

Every pid the fixture ever sees (daemon, launcher, nodes, tasks, extra processes a test
registers) is remembered with its create time; teardown runs ``mcemu down`` and then
terminates by pid whatever of those is still alive, and fails the test if it had to or if
``mcemu down`` itself failed. ``up`` passes ``--no-restart`` unless asked not to: a node a
test kills stays dead, as it did before the launcher restarted nodes.
"""
from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from emulator.cli.cluster import cluster_processes
from emulator.cli.monitor import still_alive
from emulator.live import home as homemod
from emulator.live.client import Client

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # tests.fixtures under a plain `pytest` too (`python -m pytest` adds the cwd)
    sys.path.insert(0, str(ROOT))

# the policies of the live tests; no fallback: an unregistered one fails ``mcemu up``
ALLOCATOR = "buddy"
SCHEDULER = "fcfs"


def free_port(span: int = 2) -> int:
    """A tcp port P such that P .. P+span-1 are free now: `mcemu up --listen :P` binds P and,
    for its events, P+1. Chosen below the kernel's ephemeral range, where the local ends of
    the many connections a test run makes are taken from: a port from that range (the old
    bind-to-0 answer) could be taken by one of them before the daemon bound it (seen once)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    rng = random.Random()
    for _ in range(500):
        port = rng.randrange(10000, low - span)
        socks = []
        try:
            for p in range(port, port + span):
                socks.append(socket.socket())
                socks[-1].bind(("127.0.0.1", p))
            return port
        except OSError:
            continue
        finally:
            for sock in socks:
                sock.close()
    raise RuntimeError("no free tcp port below the ephemeral range")


def node_states(cluster) -> dict:
    return {n["node"]: n for n in cluster.client.nodes()}


def wait_for(cond, timeout: float, what: str = "condition", interval: float = 0.02):
    """Poll ``cond()`` until truthy; fail at the deadline. Returns the value."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def final_comm(cluster, jid: int, timeout: float = 10) -> dict:
    """Job ``jid``'s message statistics once the interconnect's last report is in (``final``):
    the daemon ends a job before that report, which may come a moment after."""
    return wait_for(lambda: (lambda c: c if c and c.get("final") else None)(
        cluster.client.queue(jobs=[jid])["jobs"][0]["comm"]), timeout, f"job {jid}'s last report")


class LiveCluster:
    def __init__(self, home: Path):
        self.home = home
        self.env = dict(os.environ, MCEMU_HOME=str(home))
        self.seen: dict[int, float] = {}  # pid -> create time
        self._client = None
        self.leftover: list[int] = []  # pids teardown had to kill

    # -------------------------------------------------------------- command line

    def mcemu(self, *args, check=True, timeout=60) -> subprocess.CompletedProcess:
        r = subprocess.run([sys.executable, "-m", "emulator", *map(str, args)], env=self.env,
                           capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError(f"mcemu {' '.join(map(str, args))} -> {r.returncode}\n{r.stdout}\n{r.stderr}\n"
                                 f"{self.logs()}")
        return r

    def mcemu_json(self, *args, **kw):
        return json.loads(self.mcemu(*args, "--json", **kw).stdout)

    def up(self, *args, restart: bool = False) -> dict:
        """``mcemu up --detach ARGS``; with ``--no-restart`` unless ``restart``: the live tests
        kill nodes and expect them to stay dead (the launcher restarts them by default, which
        tests/test_live_recovery.py tests with ``restart=True``)."""
        if not restart and "--no-restart" not in args:
            args = (*args, "--no-restart")
        st = self.mcemu_json("up", "--detach", *args)
        self.record()
        return st

    def down(self) -> dict:
        self.record()
        if self._client is not None:
            self._client.close()
            self._client = None
        return self.mcemu_json("down")

    def logs(self) -> str:
        out = []
        for f in ("daemon.log", "launcher.log"):
            p = self.home / f
            if p.exists():
                out.append(f"--- {f}\n" + p.read_text()[-3000:])
        return "\n".join(out)

    # -------------------------------------------------------------- processes

    def record(self, *procs) -> None:
        ps = cluster_processes(self.home)
        for p in [ps["daemon"], ps["launcher"], *ps["tree"], *procs]:
            if p is None:
                continue
            if isinstance(p, subprocess.Popen):
                p = psutil.Process(p.pid)
            try:
                self.seen[p.pid] = p.create_time()
            except psutil.Error:
                pass

    def alive(self) -> list[psutil.Process]:
        return still_alive(self.seen)

    def daemon_pid(self) -> int | None:
        p = homemod.read_pidfile(self.home / "daemon.pid")
        return p.pid if p else None

    @property
    def client(self):
        if self._client is None:
            self._client = Client(home=self.home, timeout=5.0)
        return self._client

    def teardown(self) -> list[int]:
        """Stop everything by pid; returns the pids that had to be terminated here. A failing
        ``mcemu down`` is raised (it fails the test), after the processes are stopped by pid."""
        try:
            self.down()
        finally:
            left = self.alive()
            for p in left:
                try:
                    p.kill()
                except psutil.Error:  # exited meanwhile
                    pass
            psutil.wait_procs(left, timeout=5)
            self.leftover = [p.pid for p in left]
        return self.leftover


@contextlib.contextmanager
def live_cluster():
    """A LiveCluster in a home of its own, torn down at the end: no process of it may be left."""
    home = Path(tempfile.mkdtemp(prefix="mcemu-"))
    c = LiveCluster(home)
    try:
        yield c
    finally:
        try:
            leftover = c.teardown()
        finally:
            shutil.rmtree(home, ignore_errors=True)
        assert not leftover, f"processes still alive after teardown: {leftover}"


@pytest.fixture
def cluster():
    with live_cluster() as c:
        yield c
