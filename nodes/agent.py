"""The node agent: one OS process that plays one processor.

It talks to the daemon over a DEALER socket (Paranoid Pirate, ZeroMQ guide ch. 4):

* on (re)connection it sends ``register`` (node id, pid, host, the tasks still alive and
  the results the daemon has not acknowledged) and waits for ``welcome``;
* any message counts as a heartbeat; it answers a message from the daemon with a
  ``heartbeat`` when it has sent nothing for half an interval, and sends one on its own
  after OWN_HEARTBEAT (1.5) intervals of sending nothing (the daemon sends its heartbeats
  every interval, so the node's follow them); the agent's threads run at SCHED_BATCH
  (set_batch); when nothing has come from the daemon for ``liveness`` intervals it closes
  the socket, waits (backoff doubling up to ``max_backoff``), opens a new one and registers
  again, so a restarted daemon gets every node back with its tasks;
* each ``run`` starts one task as a child process in its own session (posix_spawn of
  setpriv --pdeathsig KILL, i.e. vfork+exec; os.fork when setpriv is missing or for burn): a synthetic task
  (sleep for ``runtime_s``, or burn CPU with ``burn``) or ``/bin/sh -c COMMAND`` with
  MCEMU_JOB_ID, MCEMU_NODE, MCEMU_NODES (comma-separated) and MCEMU_RANK in its environment;
  a task is identified by (job, attempt) and a ``run`` for a task it has already started is
  ignored, so the daemon may re-send safely;
* a finished task is reported with ``task_done`` (exit status, or -signal; resource usage
  from ``wait4``: user/system CPU seconds, max RSS, wall seconds) and re-reported until the
  daemon sends ``ack``;
* ``suspend`` / ``resume`` / ``kill`` send SIGSTOP / SIGCONT / SIGKILL to the task's process
  group; ``switch`` (a gang slot switch) first SIGSTOPs the tasks of the outgoing jobs, then
  SIGCONTs those of the incoming ones (plain os.killpg: ~7 us, where psutil's suspend costs ~2
  ms under contention) and reports ``switched`` with CLOCK_MONOTONIC stamps of its signals;
* gang tasks (``run`` with ``gang``): a task may be created suspended (SIGSTOP right after the
  spawn, before it is dispatched). A synthetic gang task must progress only while it is
  dispatched, and a sleeping process does not stop its clock under SIGSTOP, so the AGENT
  accounts its dispatched time: the task is a sleep (or a CPU burn) without an end of its
  own, and when it has been continued for ``runtime_s`` in total the agent SIGKILLs it and
  reports exit status 0 (``usage.dispatched`` holds the accounted seconds). A ``--command``
  task runs until it exits, as without gang; ``shutdown``, SIGTERM, or the death of the parent launcher kill every task and end
  the agent. Tasks get PR_SET_PDEATHSIG, so even a SIGKILLed agent leaves no task behind
  (a real command's own grandchildren are the command's business).

Warm child: spawning a task costs ~2 ms of CPU, and a 64-node job on two cores would start
only when the slowest of 64 spawns is done. So every node keeps one task process pre-started
(``setpriv --pdeathsig KILL -- /bin/sh -s`` in its own session, reading its script from a
pipe, at SCHED_IDLE so that starting it only uses otherwise idle CPU). A ``run`` hands it out:
the agent sets it back to SCHED_OTHER; for a command task it writes one short script (export
the MCEMU_* variables, then ``exec /bin/sh -c COMMAND`` with the same redirections and 0600
output file as a cold spawn) and closes the pipe; a synthetic task runs no code, so the warm
shell, still blocked on its pipe, IS the task and the agent ends it at its deadline (SIGKILL,
reported as status 0, as for gang tasks; a stopped one only once continued, as a stopped
sleep). The next warm child is started WARM_DELAY (x 1-2) later, off the critical path: at 10 ms
a 64-node job's first nodes were spawning while its last ones still waited for their ``run``. The warm child dies with its node: EOF on its pipe ends the
shell, PR_SET_PDEATHSIG kills it, and the agent kills it on exit. Without a warm child (or
without setpriv, or for ``burn``) a task is spawned cold as before.

Child exits wake the poll loop through a SIGCHLD wakeup pipe, so a task's end is reported
within milliseconds (the live-vs-simulator agreement depends on it).
"""
from __future__ import annotations

import ctypes
import math
import os
import random
import shlex
import shutil
import signal
import socket
import sys
import time
from collections import deque

import zmq

from emulator.live import protocol as P

PR_SET_PDEATHSIG = 1
HEARTBEAT_IN = P.heartbeat_frame()  # an equal frame needs no decoding (five a second when idle)
_POLLIN, _NOBLOCK = int(zmq.POLLIN), int(zmq.NOBLOCK)
SETPRIV = shutil.which("setpriv")  # util-linux; without it tasks are forked from the agent
SLEEP = shutil.which("sleep") or "/bin/sleep"
REPORT_DELAY = 0.02  # seconds a ``switched`` report waits (see Agent.on_switch)
WARM_FIRST = (3.0, 2.0)  # the first warm child: 3-5 s after registration (random), so that the
                         # nodes' warm children are not started while the other nodes start up
WARM_DELAY = 0.05   # seconds after a hand-out before the next warm child is started (x 1-2, random):
                    # after the job's other nodes have started their tasks, and spread so
                    # that the job's nodes do not all spawn at the same moment
WARM_MAX_SCRIPT = 60000  # a longer hand-out script (huge command) is spawned cold instead
# A node answers each daemon heartbeat (any message) in the same wake-up, so its heartbeats
# follow the daemon's waves; its own timer only fires after OWN_HEARTBEAT intervals without
# sending (a silent daemon). At one interval it fired just before a wave the daemon held back
# (daemon.START_QUIET) and the node woke twice per interval from then on.
OWN_HEARTBEAT = 1.5
# seconds between checks that the launcher is still the parent (its death also sends SIGTERM,
# PR_SET_PDEATHSIG): a timer of its own, so every idle node wakes for it; rarely, then
PARENT_CHECK = 5.0
SCHED_IDLE = getattr(os, "SCHED_IDLE", None)
try:
    _libc = ctypes.CDLL(None, use_errno=True)
except OSError:  # pragma: no cover - not Linux
    _libc = None


def set_pdeathsig(sig: int) -> None:
    """Ask the kernel to send ``sig`` to this process when its parent dies (Linux)."""
    if _libc is not None and sys.platform.startswith("linux"):
        _libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)


class Task:
    __slots__ = ("job", "attempt", "rank", "pid", "started", "stopped", "budget", "run_since", "dispatched",
                 "expired", "deadline", "fd")

    def __init__(self, job, attempt, rank, pid, budget=None, deadline=None, fd=None):
        self.job, self.attempt, self.rank, self.pid = job, attempt, rank, pid
        self.started = time.monotonic()
        self.stopped = False
        self.budget = budget  # dispatched seconds left (agent-ended gang task), None: ends itself
        self.run_since = self.started  # None while stopped
        self.dispatched = 0.0
        self.expired = False
        # a warm synthetic task without gang ends at a wall-clock deadline, as a sleep does
        # (and, as a stopped sleep, only once it is continued); ``fd`` is the write end of its
        # pipe, held open while it runs (EOF would end it)
        self.deadline = deadline
        self.fd = fd

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def stop(self, now):
        if self.run_since is not None:
            d = now - self.run_since
            self.dispatched += d
            if self.budget is not None:
                self.budget -= d
            self.run_since = None
        self.stopped = True

    def cont(self, now):
        if self.run_since is None:
            self.run_since = now
        self.stopped = False

    def due(self):
        """Monotonic time at which an agent-ended task has used its budget (None: never)."""
        if self.run_since is None or self.expired:
            return None
        if self.deadline is not None:
            return self.deadline
        if self.budget is None:
            return None
        return self.run_since + self.budget


def set_batch() -> str | None:
    """SCHED_BATCH for the calling thread (threads created later inherit it); returns None
    when done, else why not.

    Why: a node's work comes in bursts shared by many nodes at once (a 64-node job wakes 64
    agents, each of them twice: its ZeroMQ I/O thread, then its main thread). A SCHED_BATCH
    thread does not preempt the running thread when it wakes (Linux: only SCHED_NORMAL wakers
    do), so the daemon (SCHED_NORMAL) is not switched away in the middle of sending a job's
    ``run`` messages by the first nodes it woke, and each woken agent runs its ~0.2 ms to the
    end instead of being switched away by the next woken one. Measured on 2 cores, idle
    256-node cluster, 64-node job, submit to every task running: p50 16.2 / p99 39.2 ms at
    SCHED_NORMAL, p50 14.1 / p99 22.2 ms at SCHED_BATCH (100 jobs each). The nodes' tasks are
    set back to SCHED_NORMAL when they start."""
    try:
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    except (OSError, AttributeError) as e:
        return f"cannot set SCHED_BATCH: {e}"
    return None


def may_leave_idle() -> bool:
    """Whether this process may set a SCHED_IDLE child back to SCHED_NORMAL: Linux treats that
    as raising the nice value to 0, which needs CAP_SYS_NICE or an RLIMIT_NICE of 20."""
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_NICE)[0]
        if soft == resource.RLIM_INFINITY or soft >= 20:
            return True
    except (ImportError, AttributeError, OSError, ValueError):
        pass
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> 23 & 1)  # CAP_SYS_NICE is bit 23
    except OSError:
        pass
    return False


def set_rt_priority(priority: int) -> str | None:
    """SCHED_RR at ``priority`` for the calling thread (threads created later inherit it);
    returns None when done, else why not."""
    try:
        os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(int(priority)))
    except (OSError, AttributeError) as e:
        return f"cannot set SCHED_RR priority {priority}: {e}"
    return None


class Agent:
    def __init__(self, node: int, endpoint: str, heartbeat: float = 0.2, liveness: int = 3,
                 max_backoff: float = 1.0, parent_pid: int | None = None, output_dir: str | None = None,
                 rt_priority: int | None = None, sched: str = "batch"):
        self.node, self.endpoint = node, endpoint
        self.hb, self.liveness, self.max_backoff = heartbeat, liveness, max_backoff
        self.parent_pid = parent_pid
        self.output_dir = output_dir
        self.rt_priority = rt_priority
        if sched not in ("batch", "normal"):
            raise ValueError(f"sched must be batch or normal, not {sched!r}")
        self.sched = sched
        # the agent's threads run at SCHED_RR or SCHED_BATCH: its tasks are set back to
        # SCHED_NORMAL (they must not inherit a real-time priority, nor batch's lack of
        # wake-up preemption)
        self.reset_policy = False
        self.warm_policy = None  # the policy a warm child waits at (see _start_warm)
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.tasks: dict[tuple, Task] = {}
        self.by_pid: dict[int, Task] = {}
        self.unacked: dict[tuple, dict] = {}   # (job, attempt) -> finished record
        self.recent = deque(maxlen=10000)      # keys already run: a re-sent run is ignored
        self.recent_set: set = set()
        self.stopping = False
        self.registered = False
        self.reports: list = []  # ``switched`` reports not sent yet
        self.report_at = None
        self.warm = None      # (pid, write end of its pipe): the pre-started task process
        self.warm_at = None   # monotonic time at which to start the next warm child
        self.wake_at = 0.0    # the loop's next look at its timers (see run)
        self.umask = os.umask(0)
        os.umask(self.umask)

    # ------------------------------------------------------------------ socket

    def _open(self):
        s = self.ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.RECONNECT_IVL, 100)
        s.setsockopt(zmq.RECONNECT_IVL_MAX, 1000)
        s.connect(self.endpoint)
        self.sock = s
        self.registered = False
        self._register()
        self.last_recv = time.monotonic()

    def _register(self):
        self._send("register", node=self.node, pid=self.pid, host=self.host,
                   tasks=[{"job": t.job, "attempt": t.attempt, "rank": t.rank, "pid": t.pid}
                          for t in self.tasks.values()],
                   finished=list(self.unacked.values()))

    def _send(self, type_, **fields):
        self._send_frame(P.encode_unchecked(type_, **fields))

    def _send_frame(self, frame):
        try:
            self.sock.send(frame, flags=_NOBLOCK)
        except zmq.ZMQError:
            pass  # queue full or no peer: liveness takes over
        self.last_send = time.monotonic()

    # ------------------------------------------------------------------ tasks

    def _spawn(self, m) -> int:
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

    # ------------------------------------------------------------------ warm child

    def _start_warm(self):
        self.warm_at = None
        if not SETPRIV or self.warm is not None or self.stopping:
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
            self.warm_at = time.monotonic() + WARM_FIRST[0]
            return
        finally:
            os.close(r)
        if self.warm_policy is not None:
            try:  # the rest of its start-up (two execs) then only uses CPU nobody else wants
                os.sched_setscheduler(pid, self.warm_policy, os.sched_param(0))
            except OSError:
                pass
        self.warm = (pid, w)

    def _drop_warm(self):
        if self.warm is None:
            return
        pid, w = self.warm
        self.warm = None
        os.close(w)
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass

    def _hand_out(self, m, out):
        """Make the warm child the task of ``m``: (pid, write end of its pipe kept open for a
        synthetic task, else None), or None (then spawn cold).

        A synthetic task runs no code of its own: the warm shell, blocked reading its script
        from the pipe, IS the task (a process that exists, is stopped and continued, and ends
        when its time is up); the agent ends it (SIGKILL, reported as exit status 0) at its
        deadline, as it already does for gang tasks. A command task gets its script."""
        if self.warm is None:
            return None
        if not m.get("command"):
            pid, w = self.warm
            self.warm = None
            self.warm_at = time.monotonic() + WARM_DELAY * (1 + random.random())
            if self.warm_policy is not None or self.reset_policy:
                try:
                    os.sched_setscheduler(pid, os.SCHED_OTHER, os.sched_param(0))
                except OSError:  # gone, or not permitted: spawn cold
                    return self._discard(pid, w)
            return pid, w
        q = shlex.quote
        lines = ["export MCEMU_JOB_ID=%d MCEMU_NODE=%d MCEMU_RANK=%d MCEMU_ATTEMPT=%d MCEMU_NODES=%s MCEMU_JOB_NAME=%s"
                 % (m["job"], self.node, m["rank"], m["attempt"], ",".join(map(str, m["nodes"])),
                    q(m.get("name", "")))]
        # the output file is created 0600 as a cold spawn creates it; the command gets the
        # agent's umask back
        lines += ["umask 077", f"exec >{q(out or os.devnull)}", f"umask {self.umask:04o}",
                  f"exec /bin/sh -c {q(m['command'])} </dev/null 2>&1"]
        script = ("\n".join(lines) + "\n").encode()
        if len(script) > WARM_MAX_SCRIPT:
            return None
        pid, w = self.warm
        self.warm = None
        self.warm_at = time.monotonic() + WARM_DELAY * (1 + random.random())
        try:
            if self.warm_policy is not None or self.reset_policy:
                os.sched_setscheduler(pid, os.SCHED_OTHER, os.sched_param(0))
            os.write(w, script)
        except OSError:  # it died, or its policy cannot be reset: spawn cold
            return self._discard(pid, w)
        os.close(w)
        return pid, None

    @staticmethod
    def _discard(pid, w):
        """Kill a warm child that cannot become the task (reaped later as an unknown child)."""
        os.close(w)
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return None

    def on_run(self, m):
        key = (m["job"], m["attempt"])
        if key in self.tasks or key in self.unacked or key in self.recent_set:
            return
        if m["node"] != self.node:
            return
        try:
            pid, fd = self._spawn(m)
        except OSError as e:
            rec = {"job": m["job"], "attempt": m["attempt"], "rank": m["rank"], "status": 127, "usage": {}}
            self._remember(key)
            self.unacked[key] = rec
            self._send("task_done", node=self.node, error=f"cannot start task: {e}", **rec)
            self._wake(self.warm_at)
            return
        budget = m["runtime_s"] if m.get("gang") and not m.get("command") else None
        deadline = time.monotonic() + m["runtime_s"] if fd is not None and budget is None else None
        t = Task(m["job"], m["attempt"], m["rank"], pid, budget, deadline, fd)
        if m.get("suspended"):
            try:
                os.killpg(pid, signal.SIGSTOP)
            except ProcessLookupError:
                pass
            t.stop(t.started)
        self.tasks[key] = t
        self.by_pid[pid] = t
        self._remember(key)
        self._send("task_started", node=self.node, job=t.job, attempt=t.attempt, rank=t.rank, pid=pid)
        self._wake(self.warm_at)
        self._wake(t.due())

    def _wake(self, when):
        """A handler that sets a timer the loop does not look at again (see run) says so."""
        if when is not None and when < self.wake_at:
            self.wake_at = when

    def _remember(self, key):
        if len(self.recent) == self.recent.maxlen:
            self.recent_set.discard(self.recent[0])
        self.recent.append(key)
        self.recent_set.add(key)

    def _signal(self, m, sig):
        for key, t in list(self.tasks.items()):
            if key[0] == m["job"] and (m.get("attempt") is None or m["attempt"] == key[1]):
                try:
                    os.killpg(t.pid, sig)
                except ProcessLookupError:
                    pass
                now = time.monotonic()
                if sig == signal.SIGSTOP:
                    t.stop(now)
                elif sig == signal.SIGCONT:
                    t.cont(now)

    def on_switch(self, m):
        """A gang slot switch: keep in the outgoing jobs' tasks, then dispatch the incoming."""
        stop, run = set(m["stop"]), set(m["run"])
        mono, killpg, tasks = time.monotonic, os.killpg, list(self.tasks.values())
        t_first = t_stop = t_cont = None
        for t in tasks:
            if t.job in stop and not t.stopped:
                if t_first is None:
                    t_first = mono()
                try:
                    killpg(t.pid, signal.SIGSTOP)
                except ProcessLookupError:
                    pass
                t_stop = mono()
                t.stop(t_stop)
        for t in tasks:
            if t.job in run and t.stopped:
                if t_first is None:
                    t_first = mono()
                try:
                    killpg(t.pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
                t_cont = mono()
                t.cont(t_cont)
        # the report is telemetry: sent a little later, so that right after a switch the cores
        # go to the other nodes' signals (that is the skew), not to this node's messages
        self.reports.append(dict(node=self.node, slot=m["slot"], t_first=t_first, t_stop=t_stop, t_cont=t_cont,
                                 running=sorted({t.job for t in tasks if not t.stopped}),
                                 stopped=sorted({t.job for t in tasks if t.stopped})))
        if self.report_at is None:
            self.report_at = mono() + REPORT_DELAY

    def send_reports(self):
        for r in self.reports:
            self._send("switched", **r)
        self.reports.clear()
        self.report_at = None

    def expire(self):
        """End the agent-ended tasks whose dispatched time is used up."""
        now = time.monotonic()
        for t in self.tasks.values():
            d = t.due()
            if d is not None and d <= now:
                t.stop(now)
                t.expired = True
                try:
                    os.killpg(t.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def next_due(self):
        ds = [d for t in self.tasks.values() if (d := t.due()) is not None]
        return min(ds) if ds else None

    def _lost_warm(self, pid) -> bool:
        """``pid`` was the warm child and died unused: start another later."""
        if self.warm is None or self.warm[0] != pid:
            return False
        os.close(self.warm[1])
        self.warm = None
        self.warm_at = time.monotonic() + WARM_FIRST[0]
        return True

    def reap(self, send: bool = True):
        """Collect finished children and record each task's exit status and usage in
        ``unacked``; ``send`` reports it now (connected), else registration does."""
        while True:
            try:
                pid, status, ru = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            t = self.by_pid.pop(pid, None)
            if t is None:
                self._lost_warm(pid)
                continue
            key = (t.job, t.attempt)
            self.tasks.pop(key, None)
            t.close()
            code = 0 if t.expired else os.waitstatus_to_exitcode(status)
            t.stop(time.monotonic())
            usage = {"utime": ru.ru_utime, "stime": ru.ru_stime, "max_rss_kb": float(ru.ru_maxrss),
                     "wall": time.monotonic() - t.started, "dispatched": t.dispatched}
            rec = {"job": t.job, "attempt": t.attempt, "rank": t.rank, "status": max(-255, min(255, code)),
                   "usage": usage}
            self.unacked[key] = rec
            if send:
                self._send("task_done", node=self.node, **rec)

    def kill_all(self):
        self._drop_warm()
        for t in list(self.tasks.values()):
            try:
                os.killpg(t.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            t.close()
        deadline = time.monotonic() + 5
        while self.by_pid and time.monotonic() < deadline:
            try:
                pid, _ = os.waitpid(-1, 0)
                self.by_pid.pop(pid, None)
            except ChildProcessError:
                break

    # ------------------------------------------------------------------ loop

    def run(self) -> int:
        rfd, wfd = os.pipe()
        os.set_blocking(rfd, False)
        os.set_blocking(wfd, False)
        signal.set_wakeup_fd(wfd)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, self._on_term)
        signal.signal(signal.SIGINT, self._on_term)
        if self.rt_priority:
            # before the ZeroMQ context: its I/O thread inherits the policy
            why = set_rt_priority(self.rt_priority)
            if why:
                print(f"node {self.node}: {why}; running at normal priority", file=sys.stderr, flush=True)
            else:
                self.reset_policy = True
        if not self.reset_policy and self.sched == "batch":
            self.reset_policy = set_batch() is None
        # a warm child waits at SCHED_IDLE where it may be set back to SCHED_NORMAL when handed
        # out; elsewhere at SCHED_BATCH (unprivileged: leaving SCHED_IDLE is refused)
        idle = SCHED_IDLE is not None and may_leave_idle()
        self.warm_policy = SCHED_IDLE if idle else getattr(os, "SCHED_BATCH", None)
        self.ctx = zmq.Context(io_threads=1)
        self.ctx.setsockopt(zmq.LINGER, 0)
        self._open()
        self.backoff = self.hb
        reconnect_at = None
        next_check = 0.0
        hb_frame = P.heartbeat_frame(self.node)
        own_hb, half_hb = self.hb * OWN_HEARTBEAT, self.hb / 2
        handlers = {"run": self.on_run, "kill": lambda m: self._signal(m, signal.SIGKILL),
                    "suspend": lambda m: self._signal(m, signal.SIGSTOP),
                    "resume": lambda m: self._signal(m, signal.SIGCONT), "switch": self.on_switch,
                    "welcome": self.on_welcome, "ack": self.on_ack, "shutdown": self.on_shutdown,
                    "error": self.on_error}
        # a ``run`` or an ``ack`` only moves the timers the handler itself reports (on_run);
        # after any other message the timers are looked at again
        quick = frozenset({"run", "ack"})
        poll, mono, decode = zmq.zmq_poll, time.monotonic, P.decode
        to_node, max_wire = P.TO_NODE_TYPES, P.MAX_WIRE
        try:
            while not self.stopping:
                # ---- signals, the task and warm-child timers, reconnection: after a signal, a
                # timer, or a message other than run/ack; not on the wake-ups of ``run``s and
                # heartbeats (below), the hot path: a 64-node job wakes 64 agents on two
                # cores, each from cold caches (~150 us of CPU per wake-up)
                try:
                    while os.read(rfd, 512):
                        pass
                except BlockingIOError:
                    pass
                now = mono()
                if now >= next_check:
                    # the launcher's death is signalled (PR_SET_PDEATHSIG); this is the fallback
                    next_check = now + PARENT_CHECK
                    if self.parent_pid is not None and os.getppid() != self.parent_pid:
                        break  # the launcher is gone
                if self.stopping:
                    break
                due = self.next_due()
                if due is not None and due <= now:
                    self.expire()
                if self.warm_at is not None and now >= self.warm_at:
                    self._start_warm()
                if reconnect_at is None:
                    self.reap()
                    if self.report_at is not None and now >= self.report_at:
                        self.send_reports()
                    now = mono()
                    if now - self.last_recv >= self.hb * self.liveness:
                        self.sock.close(linger=0)  # Paranoid Pirate: the daemon is gone
                        reconnect_at = now + self.backoff
                        self.backoff = min(self.backoff * 2, self.max_backoff)
                else:
                    self.reap_buffered()
                    if now >= reconnect_at:
                        reconnect_at = None
                        self._open()
                # the timers of the heartbeats and of liveness move with every message, so the
                # loop below keeps them itself: fixed here, one in two idle wake-ups was early
                wake = next_check
                if reconnect_at is not None:
                    wake = min(wake, reconnect_at)
                elif self.report_at is not None:
                    wake = min(wake, self.report_at)
                due = self.next_due()
                if due is not None:
                    wake = min(wake, due)
                if self.warm_at is not None:
                    wake = min(wake, self.warm_at)
                self.wake_at = wake
                if reconnect_at is not None:
                    poll([(rfd, _POLLIN)], max(0, math.ceil((wake - mono()) * 1000)))
                    continue
                # ---- messages, until a signal or a timer
                sock = self.sock
                items = [(sock, _POLLIN), (rfd, _POLLIN)]
                expiry = self.hb * self.liveness
                while True:
                    now = mono()
                    until = min(self.wake_at, self.last_send + own_hb, self.last_recv + expiry)
                    if until <= now:
                        if now >= self.wake_at or now - self.last_recv >= expiry:
                            break
                        self._send_frame(hb_frame)  # the daemon has been quiet: a heartbeat of our own
                        continue
                    # rounded up: pyzmq would truncate, and a wait under 1 ms would spin
                    ready = poll(items, math.ceil((until - now) * 1000))
                    if not ready:
                        continue  # a timer: looked at above
                    if len(ready) != 1 or ready[0][0] is not sock:
                        break  # a signal (SIGCHLD: a task ended)
                    try:
                        frame = sock.recv(_NOBLOCK)
                    except zmq.Again:
                        continue
                    now = self.last_recv = mono()
                    if frame != HEARTBEAT_IN:
                        try:
                            m = decode(frame, max_size=max_wire, allowed=to_node)
                        except P.ProtocolError:
                            continue
                        t = m["type"]
                        h = handlers.get(t)
                        if h is not None:
                            h(m)
                        if self.stopping or t not in quick:
                            break
                    if now - self.last_send >= half_hb:
                        # answering in the same wake-up as the daemon's heartbeat halves the
                        # wake-ups of an idle node (1024 of them share two cores)
                        self._send_frame(hb_frame)
        finally:
            self.kill_all()
            if reconnect_at is None and self.registered:
                self._send("bye", node=self.node)
                self.sock.close(linger=200)
            elif reconnect_at is None:
                self.sock.close(linger=0)
            self.ctx.term()
        return 0

    def on_welcome(self, m):
        self.registered, self.backoff = True, self.hb
        if self.warm is None and self.warm_at is None:
            self.warm_at = time.monotonic() + WARM_FIRST[0] + random.random() * WARM_FIRST[1]

    def on_ack(self, m):
        self.unacked.pop((m["job"], m["attempt"]), None)

    def on_shutdown(self, m):
        self.stopping = True

    def on_error(self, m):
        if m["code"] == "unregistered":
            self._register()

    def reap_buffered(self):
        """While disconnected, finished tasks are recorded and reported on registration."""
        self.reap(send=False)

    def _on_term(self, *_):
        self.stopping = True


def run_node(node: int, endpoint: str, **kw) -> int:
    kw = {k: v for k, v in kw.items() if v is not None or k not in ("rt_priority", "sched")}
    return Agent(node, endpoint, **kw).run()


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="mcemu-node", description="one mcemu node agent")
    ap.add_argument("--connect", required=True, help="daemon endpoint, e.g. tcp://HOST:PORT or ipc://PATH")
    ap.add_argument("--id", type=int, required=True, help="node id in the topology")
    ap.add_argument("--heartbeat", type=float, default=0.2)
    ap.add_argument("--liveness", type=int, default=3)
    ap.add_argument("--output-dir")
    ap.add_argument("--rt-priority", type=int, help="run at SCHED_RR priority P (1-99) where permitted")
    ap.add_argument("--sched", choices=("batch", "normal"), default="batch",
                    help="the agent's scheduling policy (default batch: see set_batch)")
    a = ap.parse_args(argv)
    return run_node(a.id, a.connect, heartbeat=a.heartbeat, liveness=a.liveness, output_dir=a.output_dir,
                    rt_priority=a.rt_priority, sched=a.sched)


if __name__ == "__main__":
    sys.exit(main())
