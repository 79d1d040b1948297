"""Starting a task cold (without a warm child): posix_spawn of ``setpriv --pdeathsig KILL``
(vfork+exec) where setpriv exists, else (and for ``burn``) os.fork.

:class:`Spawner` is the agent's ``spawner`` (nodes.agent); ``spawn`` first offers the task to
the warm child (:meth:`nodes.warm.WarmChild.hand_out`) and reads the agent's ``node``,
``output_dir`` and ``reset_policy``.
"""
from __future__ import annotations

import math
import os
import pwd
import shutil
import shlex
import signal
import time

from nodes.contain import kill_tree
from nodes.sched import set_pdeathsig
from nodes.tasks import output_path

SETPRIV = shutil.which("setpriv")  # util-linux; without it tasks are forked from the agent
SLEEP = shutil.which("sleep") or "/bin/sleep"


def account(m) -> tuple[int, int, str] | None:
    """(uid, gid, name) of the local account a ``run`` asks its task to run as (emulator.live.auth
    decides it: a client principal's own account), None for the agent's own; OSError saying why
    this agent cannot do it (it is not root, no such account, root)."""
    name = m.get("user")
    if not name:
        return None
    try:
        pw = pwd.getpwnam(name)
    except KeyError:
        raise OSError(f"no local account {name!r} on this node") from None
    if pw.pw_uid == 0:
        raise OSError("a task run for another principal never runs as root")
    if pw.pw_uid == os.geteuid():
        return None
    if os.geteuid() != 0:
        raise OSError(f"this node agent is not root: it cannot run a task as {name!r}")
    return pw.pw_uid, pw.pw_gid, name


def task_command(m) -> str:
    """The shell command a command task runs: the job's own, in its working directory (``cwd``,
    as srun and mpiexec run tasks where they were called) and, on rank 0, reading ``stdin`` (what
    mpiexec forwards its stdin to). Done by the task's shell, after any drop to the task's account:
    it opens them with that account's rights, and every way a task starts (warm, cold, as
    another account) gets them the same way."""
    pre = []
    if m.get("cwd"):
        pre.append(f"cd -- {shlex.quote(m['cwd'])} || exit 127")
    if m.get("stdin") and m["rank"] == 0:
        pre.append(f"exec <{shlex.quote(m['stdin'])} || exit 127")
    return "\n".join([*pre, m["command"]])


def check_paths(m) -> None:
    """OSError, which fails the task as one that cannot start, when the job's working directory
    is not on this host: the shell's own complaint would be one line of output among the rest."""
    cwd = m.get("cwd")
    if cwd and m.get("command") and not os.path.isdir(cwd):
        raise OSError(f"its working directory {cwd} is not a directory on this host (mcemu run -D DIR "
                      f"names another)")


class Spawner:
    """A task's process: the warm child when there is one, else a cold spawn."""

    def __init__(self, agent):
        self.a = agent

    def spawn(self, m) -> tuple:
        """(pid, write end of a warm synthetic task's pipe or None, its cgroup or None)."""
        check_paths(m)
        cg = self.a.box.make(m["job"], m["attempt"], m["rank"])
        try:
            return (*self._spawn(m, cg), cg)
        except BaseException:
            if cg is not None:
                kill_tree(cg)
            raise

    def _spawn(self, m, cg) -> tuple:
        user = account(m)
        out = output_path(self.a, m)
        if out is not None and user is not None:  # created here, then handed over: the task's owner reads it
            fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.fchown(fd, user[0], user[1])
            os.close(fd)
        if user is not None:
            return self._spawn_as(m, out, user, cg), None
        if SETPRIV and not m.get("burn"):
            got = self.a.warm.hand_out(m, out, cg)
            if got is not None:
                return got
        env = self._env(m)
        if SETPRIV and not m.get("burn"):
            return self._posix_spawn(m, env, out, cg), None
        agent_pid = os.getpid()
        pid = os.fork()
        if pid == 0:  # the task: touch nothing of the agent (no zmq), leave with _exit
            try:
                self.a.box.enter(cg, os.getpid())  # before it runs anything that could fork
                os.setsid()
                set_pdeathsig(signal.SIGKILL)
                if os.getppid() != agent_pid:
                    os._exit(137)
                for s in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD, signal.SIGHUP):
                    signal.signal(s, signal.SIG_DFL)
                signal.set_wakeup_fd(-1)
                if self.a.reset_policy:
                    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
                if m.get("command"):
                    fd = os.open(out or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                    nul = os.open(os.devnull, os.O_RDONLY)
                    os.dup2(nul, 0)
                    os.dup2(fd, 1)
                    os.dup2(fd, 2)
                    os.closerange(3, 65536)
                    os.execve("/bin/sh", ["/bin/sh", "-c", task_command(m)], env)
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

    def failed(self, m, why: str) -> None:
        """Say in the task's output file why it could not start: ``mcemu run`` streams that file,
        so the user reads it where the program's own output would have been."""
        out = output_path(self.a, m)
        if out is None:
            return
        try:
            fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                user = account(m)
                if user is not None:
                    os.fchown(fd, user[0], user[1])
                os.write(fd, f"mcemu: rank {m['rank']} on node {self.a.node}: {why}\n".encode())
            finally:
                os.close(fd)
        except OSError:  # the report to the daemon says it anyway
            pass

    def _env(self, m) -> dict:
        env = dict(os.environ)
        env.update(MCEMU_JOB_ID=str(m["job"]), MCEMU_NODE=str(self.a.node), MCEMU_RANK=str(m["rank"]),
                   MCEMU_NODES=",".join(map(str, m["nodes"])), MCEMU_ATTEMPT=str(m["attempt"]),
                   MCEMU_JOB_NAME=m.get("name", ""))
        env.pop("MCEMU_TASK_SECRET", None)  # never one inherited from the agent's own environment
        if m.get("secret"):  # the task's claim to its rank (emulator.live.secret)
            env["MCEMU_TASK_SECRET"] = m["secret"]
        return env

    def _spawn_as(self, m, out, user, cg) -> int:
        """A task as another account (never the warm child, which runs as the agent): setpriv
        drops to the account's uid, gid and groups before exec'ing the task."""
        if not SETPRIV:
            raise OSError("running a task as another account needs setpriv (util-linux)")
        uid, gid, name = user
        env = self._env(m)
        pw = pwd.getpwnam(name)
        env.update(HOME=pw.pw_dir, USER=name, LOGNAME=name)
        drop = [SETPRIV, "--reuid", str(uid), "--regid", str(gid), "--init-groups", "--pdeathsig", "KILL", "--"]
        if m.get("command"):
            argv = drop + ["/bin/sh", "-c", task_command(m)]
            fa = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                  (os.POSIX_SPAWN_OPEN, 1, out or os.devnull, os.O_WRONLY, 0),
                  (os.POSIX_SPAWN_DUP2, 1, 2)]
        else:
            argv = drop + [SLEEP, "infinity" if m.get("gang") else f"{m['runtime_s']:.6f}"]
            fa = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)]
        return self._exec(argv, env, fa, cg)

    def _exec(self, argv, env, fa, cg) -> int:
        """posix_spawn ``argv`` in a new session, moved into cgroup ``cg`` before its exec."""
        argv = self.a.box.wrap(cg, argv)
        kw = {"scheduler": (os.SCHED_OTHER, os.sched_param(0))} if self.a.reset_policy else {}
        return os.posix_spawn(argv[0], argv, env, file_actions=fa, setsid=True, **kw)

    def _posix_spawn(self, m, env, out, cg) -> int:
        """vfork+exec (no copy of the agent's page tables, no copy-on-write faults after it):
        the start latency of a 64-node job is the slowest of 64 spawns. setpriv sets
        PR_SET_PDEATHSIG before exec'ing the task, as the fork path does."""
        if m.get("command"):
            argv = [SETPRIV, "--pdeathsig", "KILL", "--", "/bin/sh", "-c", task_command(m)]
            fa = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                  (os.POSIX_SPAWN_OPEN, 1, out or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
                  (os.POSIX_SPAWN_DUP2, 1, 2)]
        else:
            secs = "infinity" if m.get("gang") else f"{m['runtime_s']:.6f}"
            argv = [SETPRIV, "--pdeathsig", "KILL", "--", SLEEP, secs]
            fa = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)]
        return self._exec(argv, env, fa, cg)
