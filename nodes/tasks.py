"""The node agent's tasks: what a ``run`` starts, the signals of ``kill`` / ``suspend`` /
``resume`` / ``switch``, the dispatched time of agent-ended tasks, and reaping finished
children into ``task_done`` records.

:class:`TaskTable` is the agent's ``table`` (nodes.agent): it holds the tasks (``tasks``,
``by_pid``), the records not acknowledged yet (``unacked``) and those acknowledged (``acked``,
to answer a re-sent run), the runs already seen (``recent``)
and the ``switched`` reports; it starts tasks through the agent's ``spawner`` (nodes.spawn) and
sends through the agent.
"""
from __future__ import annotations

import os
import signal
import time
from collections import OrderedDict, deque

from emulator.live.jobs import TAIL_CHARS, TAIL_LINES, escape_controls
from nodes.contain import descendants, kill_pids, proc_table

ACKED_KEEP = 10_000  # acknowledged task ends kept to answer a re-sent run
REPORT_DELAY = 0.02  # seconds a ``switched`` report waits (see Agent.on_switch)


def output_path(agent, m) -> str | None:
    """The output file of a command task (stdout and stderr), None for a synthetic one."""
    if not (m.get("command") and agent.output_dir):
        return None
    return os.path.join(agent.output_dir, f"job{m['job']}.{m['rank']}.out")


def output_tail(path: str | None) -> str | None:
    """The last lines of a failed task's output (at most TAIL_LINES lines, TAIL_CHARS characters,
    control characters escaped), joined by newlines; None when there is none."""
    if not path:
        return None
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 4 * TAIL_CHARS))
            raw = f.read()
    except OSError:
        return None
    lines = [escape_controls(x.rstrip("\r")) for x in raw.decode("utf-8", "replace").split("\n")]
    lines = [x for x in lines if x.strip()][-TAIL_LINES:]
    text = "\n".join(lines)
    return text[-TAIL_CHARS:] or None


class Task:
    __slots__ = ("job", "attempt", "rank", "pid", "started", "stopped", "budget", "run_since", "dispatched",
                 "expired", "deadline", "fd", "cg", "out")

    def __init__(self, job, attempt, rank, pid, budget=None, deadline=None, fd=None, cg=None, out=None):
        self.job, self.attempt, self.rank, self.pid = job, attempt, rank, pid
        self.cg = cg    # its cgroup (nodes.contain), None where tasks are contained by session
        self.out = out  # its output file (a command task's), whose tail a failure reports
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


class TaskTable:
    """The handlers of the daemon's task messages and the bookkeeping of the agent's tasks."""

    def __init__(self, agent):
        self.a = agent
        self.tasks: dict[tuple, Task] = {}
        self.by_pid: dict[int, Task] = {}
        self.unacked: dict[tuple, dict] = {}   # (job, attempt) -> finished record
        # the records the daemon acknowledged: a daemon recovered from its journal, which keeps a
        # job's end but not each rank's, runs an acknowledged rank again; it is answered with
        # the end it was told (the task is not run twice, and the job does not wait for ever)
        self.acked: OrderedDict[tuple, dict] = OrderedDict()
        self.recent = deque(maxlen=10000)      # keys already run: a re-sent run is ignored
        self.recent_set: set = set()
        self.reports: list = []  # ``switched`` reports not sent yet
        self.report_at = None

    def on_run(self, m):
        key = (m["job"], m["attempt"])
        if m["node"] != self.a.node:
            return
        if key in self.acked:
            self.a._send("task_done", node=self.a.node, **self.acked[key])
            return
        if key in self.tasks or key in self.unacked or key in self.recent_set:
            return
        try:
            pid, fd, cg = self.a.spawner.spawn(m)
        except OSError as e:
            rec = {"job": m["job"], "attempt": m["attempt"], "rank": m["rank"], "status": 127, "usage": {}}
            self._remember(key)
            self.unacked[key] = rec
            self.a.spawner.failed(m, f"cannot start task: {e}")
            self.a._send("task_done", node=self.a.node, error=f"cannot start task: {e}", **rec)
            self.a._wake(self.a.warm.at)
            return
        budget = m["runtime_s"] if m.get("gang") and not m.get("command") else None
        deadline = self.a.clock() + m["runtime_s"] if fd is not None and budget is None else None
        t = Task(m["job"], m["attempt"], m["rank"], pid, budget, deadline, fd, cg, output_path(self.a, m))
        if m.get("suspended"):
            try:
                os.killpg(pid, signal.SIGSTOP)
            except ProcessLookupError:
                pass
            t.stop(t.started)
        self.tasks[key] = t
        self.by_pid[pid] = t
        self._remember(key)
        self.a._send("task_started", node=self.a.node, job=t.job, attempt=t.attempt, rank=t.rank, pid=pid)
        self.a._wake(self.a.warm.at)
        self.a._wake(t.due())
        self.a._wake(self.a.fwd.started(t))

    def ack(self, key) -> None:
        """The daemon has counted the end of task ``key``: it is kept (the last ``ACKED_KEEP``)
        for a re-sent run, not reported again at the next registration."""
        rec = self.unacked.pop(key, None)
        if rec is not None:
            self.acked[key] = rec
            if len(self.acked) > ACKED_KEEP:
                self.acked.popitem(last=False)

    def _remember(self, key):
        if len(self.recent) == self.recent.maxlen:
            self.recent_set.discard(self.recent[0])
        self.recent.append(key)
        self.recent_set.add(key)

    def send_signal(self, m, sig):
        for key, t in list(self.tasks.items()):
            if key[0] == m["job"] and (m.get("attempt") is None or m["attempt"] == key[1]):
                try:
                    os.killpg(t.pid, sig)
                except ProcessLookupError:
                    pass
                if sig == signal.SIGKILL:  # a cancel or a fault elsewhere: everything it started
                    self.a.box.end(t.cg, t.pid, self._orphans(t))
                now = self.a.clock()
                if sig == signal.SIGSTOP:
                    t.stop(now)
                elif sig == signal.SIGCONT:
                    t.cont(now)

    def on_switch(self, m):
        """A gang slot switch: keep in the outgoing jobs' tasks, then dispatch the incoming."""
        stop, run = set(m["stop"]), set(m["run"])
        mono, killpg, tasks = self.a.clock, os.killpg, list(self.tasks.values())
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
        self.reports.append(dict(node=self.a.node, slot=m["slot"], t_first=t_first, t_stop=t_stop, t_cont=t_cont,
                                 running=sorted({t.job for t in tasks if not t.stopped}),
                                 stopped=sorted({t.job for t in tasks if t.stopped})))
        if self.report_at is None:
            self.report_at = mono() + REPORT_DELAY

    def send_reports(self):
        for r in self.reports:
            self.a._send("switched", **r)
        self.reports.clear()
        self.report_at = None

    def expire(self):
        """End the agent-ended tasks whose dispatched time is used up."""
        now = self.a.clock()
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
                self.a.warm.lost(pid)
                continue
            key = (t.job, t.attempt)
            self.tasks.pop(key, None)
            t.close()
            self.a.box.end(t.cg, t.pid, self._orphans(t))  # what it left behind ends with it
            code = 0 if t.expired else os.waitstatus_to_exitcode(status)
            t.stop(self.a.clock())
            usage = {"utime": ru.ru_utime, "stime": ru.ru_stime, "max_rss_kb": float(ru.ru_maxrss),
                     "wall": self.a.clock() - t.started, "dispatched": t.dispatched}
            rec = {"job": t.job, "attempt": t.attempt, "rank": t.rank, "status": max(-255, min(255, code)),
                   "usage": usage}
            tail = output_tail(t.out) if code else None
            if tail:
                rec["error"] = tail
            self.unacked[key] = rec
            # a forwarded task's end follows its output (nodes.outfwd), connected or not
            if not self.a.fwd.hold(t, rec) and send:
                self.a._send("task_done", node=self.a.node, **rec)

    def _orphans(self, t) -> set:
        """Session mode: the processes the agent adopted (orphans of its tasks' children), when
        ``t`` is the last task of the node (with another one running they cannot be told apart)."""
        if t.cg is not None or any(o is not t for o in self.tasks.values()):
            return set()
        me, warm = os.getpid(), self.a.warm.child[0] if self.a.warm.child else None
        return {p for p, pp, _s in proc_table() if pp == me and p not in self.by_pid and p != warm}

    def kill_all(self):
        self.a.warm.drop()
        for t in list(self.tasks.values()):
            try:
                os.killpg(t.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.a.box.end(t.cg, t.pid, ())
            t.close()
        if self.a.box.dir is None:  # session mode: whatever the agent adopted
            me = os.getpid()
            kill_pids(descendants({me}) - set(self.by_pid) - {me})
        self.a.box.close()
        deadline = self.a.clock() + 5
        while self.by_pid and self.a.clock() < deadline:
            try:
                pid, _ = os.waitpid(-1, 0)
                self.by_pid.pop(pid, None)
            except ChildProcessError:
                break
