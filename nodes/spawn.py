"""Starting a task cold (without a warm child): posix_spawn of ``setpriv --pdeathsig KILL``
(vfork+exec) where setpriv exists, else (and for ``burn``) os.fork.

:class:`Spawner` is a part of :class:`nodes.agent.Agent` (a mixin); ``_spawn`` first offers
the task to the warm child (:meth:`nodes.warm.WarmChild._hand_out`) and uses the agent's
``node``, ``output_dir`` and ``reset_policy``.
"""
from __future__ import annotations

import math
import os
import shutil
import signal
import time

from nodes.sched import set_pdeathsig

SETPRIV = shutil.which("setpriv")  # util-linux; without it tasks are forked from the agent
SLEEP = shutil.which("sleep") or "/bin/sleep"


class Spawner:
    """A task's process: the warm child when there is one, else a cold spawn."""

    def _spawn(self, m) -> tuple:
        key = (m["job"], m["attempt"])
        out = None
        if m.get("command") and self.output_dir:
            out = os.path.join(self.output_dir, f"job{key[0]}.{m['rank']}.out")
        if SETPRIV and not m.get("burn"):
            got = self._hand_out(m, out)
            if got is not None:
                return got
        env = dict(os.environ)
        env.update(MCEMU_JOB_ID=str(m["job"]), MCEMU_NODE=str(self.node), MCEMU_RANK=str(m["rank"]),
                   MCEMU_NODES=",".join(map(str, m["nodes"])), MCEMU_ATTEMPT=str(m["attempt"]),
                   MCEMU_JOB_NAME=m.get("name", ""))
        if SETPRIV and not m.get("burn"):
            return self._posix_spawn(m, env, out), None
        agent_pid = os.getpid()
        pid = os.fork()
        if pid == 0:  # the task: touch nothing of the agent (no zmq), leave with _exit
            try:
                os.setsid()
                set_pdeathsig(signal.SIGKILL)
                if os.getppid() != agent_pid:
                    os._exit(137)
                for s in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD, signal.SIGHUP):
                    signal.signal(s, signal.SIG_DFL)
                signal.set_wakeup_fd(-1)
                if self.reset_policy:
                    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
                if m.get("command"):
                    fd = os.open(out or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                    nul = os.open(os.devnull, os.O_RDONLY)
                    os.dup2(nul, 0)
                    os.dup2(fd, 1)
                    os.dup2(fd, 2)
                    os.closerange(3, 65536)
                    os.execve("/bin/sh", ["/bin/sh", "-c", m["command"]], env)
                # a gang task is ended by the agent when its dispatched time is used up
                deadline = math.inf if m.get("gang") else time.monotonic() + m["runtime_s"]
                if m.get("burn"):
                    x = 0
                    while time.monotonic() < deadline:
                        for _ in range(10000):
                            x += 1
                else:
                    while (left := deadline - time.monotonic()) > 0:
                        time.sleep(left)
                os._exit(0)
            except BaseException:
                os._exit(127)
        return pid, None

    def _posix_spawn(self, m, env, out) -> int:
        """vfork+exec (no copy of the agent's page tables, no copy-on-write faults after it):
        the start latency of a 64-node job is the slowest of 64 spawns. setpriv sets
        PR_SET_PDEATHSIG before exec'ing the task, as the fork path does."""
        if m.get("command"):
            argv = [SETPRIV, "--pdeathsig", "KILL", "--", "/bin/sh", "-c", m["command"]]
            fa = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                  (os.POSIX_SPAWN_OPEN, 1, out or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
                  (os.POSIX_SPAWN_DUP2, 1, 2)]
        else:
            secs = "infinity" if m.get("gang") else f"{m['runtime_s']:.6f}"
            argv = [SETPRIV, "--pdeathsig", "KILL", "--", SLEEP, secs]
            fa = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)]
        kw = {"scheduler": (os.SCHED_OTHER, os.sched_param(0))} if self.reset_policy else {}
        return os.posix_spawn(SETPRIV, argv, env, file_actions=fa, setsid=True, **kw)
