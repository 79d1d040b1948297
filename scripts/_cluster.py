"""The measuring scripts' cluster (scripts/bench_mpi.py, scripts/flood.py): one checkout's
``mcemu`` in an MCEMU_HOME of its own, driven through its command line; every process it had
recorded by pid with its create time (so that a reused pid is never killed), and whatever is
still alive after ``mcemu down`` killed by pid and returned, for the script to report."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil

PIDFILES = ("daemon.pid", "launcher.pid", "interconnect.pid")


class ScriptCluster:
    def __init__(self, repo: Path, home: Path):
        self.repo, self.home = Path(repo), Path(home)
        self.env = dict(os.environ, MCEMU_HOME=str(home), PYTHONPATH=str(repo))
        self.seen: dict[int, float] = {}

    def mcemu(self, *args, timeout: float = 120.0) -> str:
        r = subprocess.run([sys.executable, "-m", "emulator", *map(str, args)], cwd=self.repo, env=self.env,
                           capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f"mcemu {' '.join(map(str, args[:2]))}: exit {r.returncode}: "
                               f"{r.stderr.strip()[-800:]}")
        return r.stdout

    def json(self, *args, **kw):
        return json.loads(self.mcemu(*args, "--json", **kw))

    def pid(self, name: str) -> int | None:
        try:
            return int((self.home / name).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def record(self) -> None:
        """Remember every process of the cluster (daemon, launcher, interconnect, nodes, tasks)."""
        procs = []
        for pid in filter(None, map(self.pid, PIDFILES)):
            try:
                p = psutil.Process(pid)
                procs += [p, *p.children(recursive=True)]
            except psutil.Error:
                pass
        for p in procs:
            try:
                self.seen.setdefault(p.pid, p.create_time())
            except psutil.Error:
                pass

    def stop(self) -> list[int]:
        """``mcemu down``, then every recorded process still alive killed by pid; returns those."""
        self.record()
        try:
            self.mcemu("down", timeout=60)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            print(f"mcemu down failed: {e}", file=sys.stderr)
        left = []
        for pid, created in self.seen.items():
            try:
                p = psutil.Process(pid)
                if abs(p.create_time() - created) < 0.05 and p.status() != psutil.STATUS_ZOMBIE:
                    p.kill()
                    left.append(pid)
            except psutil.Error:
                pass
        return left
