"""The node agent's tasks: what a ``run`` starts, the signals of ``kill`` / ``suspend`` /
``resume`` / ``switch``, the dispatched time of agent-ended tasks, and reaping finished
children into ``task_done`` records.

:class:`TaskControl` is a part of :class:`nodes.agent.Agent` (a mixin, so that the handlers are the
agent's own methods, as before the split: a ``run`` costs no extra call); it uses the agent's
``tasks``, ``by_pid``, ``unacked``, ``recent``, ``reports`` and its timers.
"""
from __future__ import annotations

import os
import signal
import time

REPORT_DELAY = 0.02  # seconds a ``switched`` report waits (see Agent.on_switch)


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


class TaskControl:
    """The handlers of the daemon's task messages and the bookkeeping of the agent's tasks."""

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
        deadline = self.clock() + m["runtime_s"] if fd is not None and budget is None else None
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
                now = self.clock()
                if sig == signal.SIGSTOP:
                    t.stop(now)
                elif sig == signal.SIGCONT:
                    t.cont(now)

    def on_switch(self, m):
        """A gang slot switch: keep in the outgoing jobs' tasks, then dispatch the incoming."""
        stop, run = set(m["stop"]), set(m["run"])
        mono, killpg, tasks = self.clock, os.killpg, list(self.tasks.values())
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
        now = self.clock()
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
                self._lost_warm(pid)
                continue
            key = (t.job, t.attempt)
            self.tasks.pop(key, None)
            t.close()
            code = 0 if t.expired else os.waitstatus_to_exitcode(status)
            t.stop(self.clock())
            usage = {"utime": ru.ru_utime, "stime": ru.ru_stime, "max_rss_kb": float(ru.ru_maxrss),
                     "wall": self.clock() - t.started, "dispatched": t.dispatched}
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
        deadline = self.clock() + 5
        while self.by_pid and self.clock() < deadline:
            try:
                pid, _ = os.waitpid(-1, 0)
                self.by_pid.pop(pid, None)
            except ChildProcessError:
                break
