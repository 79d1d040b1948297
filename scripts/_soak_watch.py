"""What the soak (scripts/soak.py) watches of the cluster while it runs: every process it had
(by pid and create time, so that a pid reused later is not taken for it) and the attempts alive
in the agents' task cgroups, two attempts of one job alive at once being an overlap. A mixin of
``Soak``, whose ``__init__`` holds ``home``, ``seen``, ``sampled`` and ``overlaps``."""
from __future__ import annotations

import os
import re
from pathlib import Path

import psutil

from emulator.cli.lifecycle import cluster_processes
from emulator.cli.monitor import still_alive
from nodes import contain


class Watching:
    def record(self) -> None:
        """Remember every process of the cluster, and every task in the agents' cgroups (those
        that left their agent's tree too), noting a job with two attempts alive at once."""
        ps = cluster_processes(self.home)
        procs = [p for p in (ps["daemon"], ps["launcher"], ps["interconnect"], *ps["tree"]) if p is not None]
        for p in procs:
            try:
                self.seen.setdefault(p.pid, p.create_time())
            except psutil.Error:
                pass
        live: dict[int, set] = {}
        for d in self._task_cgroups():
            try:
                pids = [int(x) for x in (d / "cgroup.procs").read_text().split()]
            except (OSError, ValueError):  # ended meanwhile
                continue
            if pids:
                job, att = map(int, re.match(r"j(\d+)\.a(\d+)\.", d.name).groups())
                live.setdefault(job, set()).add(att)
                self.sampled.add((job, att))
                for pid in pids:
                    try:
                        self.seen.setdefault(pid, psutil.Process(pid).create_time())
                    except psutil.Error:
                        pass
        self.overlaps |= {j for j, atts in live.items() if len(atts) > 1}

    def _task_cgroups(self) -> list[Path]:
        """The task cgroups of this cluster's agents (nodes.contain: agent-PID/jJOB.aATTEMPT.rRANK);
        agents and tasks come and go while they are listed."""
        base, out = contain.base(), []
        try:
            agents = [base / a for a in os.listdir(base) if a[6:].isdigit() and int(a[6:]) in self.seen] if base else []
        except OSError:
            return []
        for a in agents:
            try:
                out += [a / t for t in os.listdir(a) if re.fullmatch(r"j\d+\.a\d+\.r\d+", t)]
            except OSError:
                pass
        return out

    def left(self) -> list[int]:
        return [p.pid for p in still_alive(self.seen)]
