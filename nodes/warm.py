"""The node agent's warm child: one task process pre-started per node.

Spawning a task costs ~2 ms of CPU, and a 64-node job on two cores would start only when the
slowest of 64 spawns is done. So every node keeps one task process pre-started (``setpriv
--pdeathsig KILL -- /bin/sh -s`` in its own session, reading its script from a pipe, at
SCHED_IDLE so that starting it only uses otherwise idle CPU). A ``run`` hands it out: the agent
sets it back to SCHED_OTHER; for a command task it writes one short script (export the MCEMU_*
variables, then ``exec /bin/sh -c COMMAND`` with the same redirections and 0600 output file as
a cold spawn) and closes the pipe; a synthetic task runs no code, so the warm shell, still
blocked on its pipe, IS the task and the agent ends it at its deadline (SIGKILL, reported as
status 0, as for gang tasks; a stopped one only once continued, as a stopped sleep). The next
warm child is started WARM_DELAY (x 1-2) later, off the critical path: at 10 ms a 64-node job's
first nodes were spawning while its last ones still waited for their ``run``. The warm child
dies with its node: EOF on its pipe ends the shell, PR_SET_PDEATHSIG kills it, and the agent
kills it on exit. Without a warm child (or without setpriv, or for ``burn``) a task is spawned
cold (:mod:`nodes.spawn`).

:class:`WarmChild` is the agent's ``warm`` (nodes.agent): the child (``child``: pid and the
write end of its pipe), when to start the next (``at``) and the policy it waits at
(``policy``); it reads the agent's ``reset_policy``, ``stopping``, ``node``, ``umask`` and clock.
"""
from __future__ import annotations

import os
import random
import shlex
import signal

from nodes.spawn import SETPRIV, task_command

WARM_FIRST = (3.0, 2.0)  # the first warm child: 3-5 s after registration (random), so that the
                         # nodes' warm children are not started while the other nodes start up
WARM_DELAY = 0.05   # seconds after a hand-out before the next warm child is started (x 1-2, random):
                    # after the job's other nodes have started their tasks, and spread so
                    # that the job's nodes do not all spawn at the same moment
WARM_MAX_SCRIPT = 60000  # a longer hand-out script (huge command) is spawned cold instead


class WarmChild:
    """The warm child's life: started at a timer, handed out to a ``run``, replaced, dropped."""

    def __init__(self, agent):
        self.a = agent
        self.child = None  # (pid, write end of its pipe): the pre-started task process
        self.at = None     # when to start the next warm child (the agent's clock)
        self.policy = None  # the policy a warm child waits at (set when the agent starts)

    def start(self):
        self.at = None
        if not SETPRIV or self.child is not None or self.a.stopping:
            return
        r, w = os.pipe()  # both ends close-on-exec; the spawn dup2s the read end to fd 0
        try:
            # spawned with the agent's own policy: a real-time agent waits in vfork until the
            # child has exec'd, and at SCHED_OTHER that child queued behind CPU-bound tasks
            # (gang switch skew p99 157 ms with burning tasks); it is lowered right after
            pid = os.posix_spawn(SETPRIV, [SETPRIV, "--pdeathsig", "KILL", "--", "/bin/sh", "-s"], os.environ,
                                 file_actions=[(os.POSIX_SPAWN_DUP2, r, 0)], setsid=True)
        except OSError:
            os.close(w)
            self.at = self.a.clock() + WARM_FIRST[0]
            return
        finally:
            os.close(r)
        if self.policy is not None:
            try:  # the rest of its start-up (two execs) then only uses CPU nobody else wants
                os.sched_setscheduler(pid, self.policy, os.sched_param(0))
            except OSError:
                pass
        self.child = (pid, w)

    def drop(self):
        if self.child is None:
            return
        pid, w = self.child
        self.child = None
        os.close(w)
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass

    def hand_out(self, m, out, cg=None):
        """Make the warm child the task of ``m``: (pid, write end of its pipe kept open for a
        synthetic task, else None), or None (then spawn cold).

        A synthetic task runs no code of its own: the warm shell, blocked reading its script
        from the pipe, IS the task (a process that exists, is stopped and continued, and ends
        when its time is up); the agent ends it (SIGKILL, reported as exit status 0) at its
        deadline, as it already does for gang tasks. A command task gets its script. Either is
        moved into the task's cgroup ``cg`` first, while it is still blocked on its pipe and so
        has forked nothing (nodes.contain)."""
        if self.child is None:
            return None
        if not m.get("command"):
            pid, w = self._take(cg)
            if pid is None:
                return None
            if self.policy is not None or self.a.reset_policy:
                try:
                    os.sched_setscheduler(pid, os.SCHED_OTHER, os.sched_param(0))
                except OSError:  # gone, or not permitted: spawn cold
                    return self._discard(pid, w)
            return pid, w
        q = shlex.quote
        lines = ["export MCEMU_JOB_ID=%d MCEMU_NODE=%d MCEMU_RANK=%d MCEMU_ATTEMPT=%d MCEMU_NODES=%s MCEMU_JOB_NAME=%s"
                 % (m["job"], self.a.node, m["rank"], m["attempt"], ",".join(map(str, m["nodes"])),
                    q(m.get("name", "")))]
        # the task's claim to its rank (emulator.live.secret); the warm shell has none of its own
        lines += [f"export MCEMU_TASK_SECRET={q(m['secret'])}" if m.get("secret") else "unset MCEMU_TASK_SECRET"]
        # the output file is created 0600 as a cold spawn creates it; the command gets the
        # agent's umask back
        lines += ["umask 077", f"exec >{q(out or os.devnull)}", f"umask {self.a.umask:04o}",
                  f"exec /bin/sh -c {q(task_command(m))} </dev/null 2>&1"]
        script = ("\n".join(lines) + "\n").encode()
        if len(script) > WARM_MAX_SCRIPT:
            return None
        pid, w = self._take(cg)
        if pid is None:
            return None
        try:
            if self.policy is not None or self.a.reset_policy:
                os.sched_setscheduler(pid, os.SCHED_OTHER, os.sched_param(0))
            os.write(w, script)
        except OSError:  # it died, or its policy cannot be reset: spawn cold
            return self._discard(pid, w)
        os.close(w)
        return pid, None

    def _take(self, cg):
        """The warm child, no longer the warm child, moved into cgroup ``cg``: (pid, pipe), or
        (None, None) when it cannot be moved (it died: spawn cold)."""
        pid, w = self.child
        self.child = None
        self.at = self.a.clock() + WARM_DELAY * (1 + random.random())
        try:
            self.a.box.enter(cg, pid)
        except OSError:
            self._discard(pid, w)
            return None, None
        return pid, w

    @staticmethod
    def _discard(pid, w):
        """Kill a warm child that cannot become the task (reaped later as an unknown child)."""
        os.close(w)
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return None

    def lost(self, pid) -> bool:
        """``pid`` was the warm child and died unused: start another later."""
        if self.child is None or self.child[0] != pid:
            return False
        os.close(self.child[1])
        self.child = None
        self.at = self.a.clock() + WARM_FIRST[0]
        return True
