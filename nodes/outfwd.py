"""The node agent's forwarding of its command tasks' output to the daemon (``output`` frames;
the daemon's side and the rules it keeps are emulator.live.outsink's).

A task writes its output into the agent's output directory (nodes.spawn). ``mcemu run``
follows the daemon's ``output/``: when the agent's directory is another one (another host,
another MCEMU_HOME) the agent sends what its tasks write, as they write it. Which directory
is the daemon's is the ``welcome``'s ``output_id`` against the id in the agent's own directory
(:func:`emulator.live.outsink.output_id`): equal, the agent does nothing here (a line must not
reach the file twice); different or missing, it forwards.

Each look (every FWD_EVERY seconds while a task runs, at once while there is more) reads at
most POLL_BYTES of all the files together in frames of at most MAX_CHUNK bytes, so a rank
that prints fast slows its own forwarding, not the agent's loop. A task's offset advances
only when its frame was queued; ``output_at`` sets it back (the daemon lacks a lost frame), and
so does a registration, to the start (:meth:`OutputForwarder.registering`).
An ended task's ``task_done`` is held (``hold``) until its output is sent: the daemon reads
both on one connection, so the job's end finds the file complete. Past MAX_OUTPUT (+1 byte,
so that the daemon sees the excess and says so) a task's file is no longer read.
"""
from __future__ import annotations

import os
from pathlib import Path

from emulator.live import protocol as P
from emulator.live.outsink import MAX_OUTPUT, output_id

FWD_EVERY = 0.05  # seconds between looks at a running task's file: the latency of a remote line
POLL_BYTES = 4 * P.MAX_CHUNK  # bytes read per look, all tasks together


def read_at(path: str, offset: int, n: int) -> bytes:
    """Up to ``n`` bytes of ``path`` from ``offset`` (b"": none, or no such file)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return b""
    try:
        return os.pread(fd, n, offset)
    except OSError:
        return b""
    finally:
        os.close(fd)


class OutputForwarder:
    """The agent's ``fwd``: ``welcome`` decides whether to forward, ``started`` and ``hold`` are
    told of tasks, ``poll`` runs when ``due`` (the agent's timers, nodes.agent ``_tend``)."""

    def __init__(self, agent):
        self.a = agent
        self.on = False
        self.at: dict[tuple, int] = {}     # (job, attempt) -> bytes of its file sent
        self.held: dict[tuple, tuple] = {}  # (job, attempt) -> (task, its task_done record) of an ended task
        self.sent: dict[tuple, tuple] = {}  # the same, its task_done sent and not acknowledged yet
        self.due: float | None = None      # the next look (agent clock), None: nothing to look at
        self.turn = 0

    def welcome(self, m) -> None:
        d, theirs = self.a.output_dir, m.get("output_id")
        self.on = bool(d and theirs) and output_id(Path(d)) != theirs
        if self.on:
            self.due = 0.0  # tasks adopted over a reconnection: look now

    def started(self, t) -> float | None:
        """Task ``t`` started: when to look at its file (None: not forwarded)."""
        if not self.on or t.out is None:
            return None
        self.at[(t.job, t.attempt)] = 0
        soon = self.a.clock() + FWD_EVERY
        self.due = soon if self.due is None else min(self.due, soon)
        return self.due

    def hold(self, t, rec) -> bool:
        """Task ``t`` ended with record ``rec``: True when its ``task_done`` waits for its output."""
        key = (t.job, t.attempt)
        if not self.on or key not in self.at:
            return False
        self.held[key] = (t, rec)
        self.due = 0.0
        return True

    def rewind(self, m) -> None:
        """``output_at``: the daemon has the task's output up to ``offset`` only."""
        key = (m["job"], m["attempt"])
        if m["offset"] < self.at.get(key, -1):
            self.at[key] = m["offset"]
            self.due = 0.0

    def poll(self) -> None:
        """One look: new output of every forwarded task, within POLL_BYTES; the held
        ``task_done`` of a task whose output is all sent."""
        budget, more = POLL_BYTES, False
        tasks = [t for t in self.a.table.tasks.values() if (t.job, t.attempt) in self.at]
        tasks += [t for t, _ in self.held.values()]
        self.turn = (self.turn + 1) % max(1, len(tasks))  # each look starts at another task: none starves
        for t in tasks[self.turn:] + tasks[:self.turn]:
            budget, state = self._send_file(t, budget)
            if state == "blocked":  # the socket's queue is full: the rest waits for the next look
                self.due = self.a.clock() + FWD_EVERY
                return
            more = more or state == "more"
            if budget <= 0:
                more = True
                break
        self.due = None if not self.at else self.a.clock() + (0.0 if more else FWD_EVERY)

    def _send_file(self, t, budget: int) -> tuple[int, str]:
        """What task ``t`` wrote since the last look, within ``budget`` bytes: (the budget left,
        "blocked" | "more" (its file may hold more) | "end" (all of it sent))."""
        key = (t.job, t.attempt)
        while True:
            at = self.at[key]
            n = min(P.MAX_CHUNK, budget, MAX_OUTPUT + 1 - at)
            data = read_at(t.out, at, n) if n > 0 else b""
            if data:
                if not self.a._send("output", node=self.a.node, job=t.job, attempt=t.attempt, rank=t.rank,
                                    offset=at, data=data):
                    return budget, "blocked"
                self.at[key] = at + len(data)
                budget -= len(data)
            if len(data) < n or n <= 0:
                if key in self.held:
                    self._done(key)
                return budget, "end"
            if budget <= 0:
                return budget, "more"

    def _done(self, key) -> None:
        t, rec = self.sent[key] = self.held.pop(key)
        del self.at[key]
        self.a._send("task_done", node=self.a.node, **rec)

    def acked(self, key) -> None:
        """The daemon counted the end of task ``key``: its output is all there."""
        self.sent.pop(key, None)

    def registering(self) -> None:
        """A (re)registration: frames may have been lost with the old connection, and the
        daemon (a restarted one) may have none of them. Every forwarded task is sent again from
        its start (the daemon skips what it has, fills what it lacks), and the end of a task not
        acknowledged yet waits for that again, so no job ends with its output cut short."""
        for key, held in self.sent.items():
            self.held[key] = held
        self.sent.clear()
        for key in self.at:
            self.at[key] = 0
        for key in self.held:
            self.at[key] = 0
        if self.at:
            self.due = 0.0


__all__ = ["FWD_EVERY", "POLL_BYTES", "OutputForwarder", "read_at"]
