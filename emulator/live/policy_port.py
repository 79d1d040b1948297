"""The policy port: the one place the live cluster calls the policy.

A policy input (``submit``, ``depart``, ``fail``, ``cancel``, ``requeue``, ``tick``,
``node_down``, ``node_up``) is journaled, then applied to the policy stack at its model time,
and the decisions come back (scheduler.decisions). The same ``apply`` runs live and while the
journal is replayed after a crash (emulator.live.recovery), which is what makes the replay
rebuild the same state. A refused input (a submit the policy cannot take) raises before
anything is registered, and its journal event is retracted.

Model time ``now = (clock() - t0) / time_unit``: the clock is the kernel's (monotonic, so a
restarted daemon continues the same model time from the journal's t0), and the model time
never goes backwards, even where a reboot reset the monotonic clock.
"""
from __future__ import annotations

from emulator.live.jobs import JobRec


class PolicyPort:
    def __init__(self, stack, journal, book, clock, t0: float, time_unit: float):
        self.stack, self.policy = stack, stack.policy
        self.journal, self.book = journal, book
        self.clock, self.t0, self.time_unit = clock, float(t0), float(time_unit)
        self.last_t = 0.0

    def now(self) -> float:
        t = (self.clock() - self.t0) / self.time_unit
        if t < self.last_t:  # a reboot reset the monotonic clock: never go backwards
            self.t0 -= (self.last_t - t) * self.time_unit
            t = self.last_t
        self.last_t = t
        return t

    def wall(self, t: float) -> float:
        """The clock's time of model time ``t``."""
        return t * self.time_unit + self.t0

    def input(self, kind, job=None, node=None, data=None, t=None) -> tuple[float, list]:
        """Journal a policy input and apply it; returns its model time and the decisions."""
        t = self.now() if t is None else t
        self.journal.event(kind, t, job, node, data)
        try:
            decisions = self.apply(kind, t, job, node, data)
        except BaseException:
            self.journal.retract()
            raise
        return t, decisions

    def apply(self, kind, t, job=None, node=None, data=None) -> list:
        """One journal input -> the policy call -> its decisions."""
        p = self.policy
        if kind == "submit":
            jr = JobRec(job, data["request"], data["runtime"], data.get("name", ""), data.get("command"),
                        data.get("burn", False), t, data.get("owner"), data.get("user"), data.get("cwd"),
                        data.get("stdin"))
            out = p.arrive(jr.job, t)  # a refusal raises here, before anything is registered
            self.book.add(jr)
            return out
        if kind in ("depart", "fail"):
            return p.depart(job, t)
        if kind == "cancel":
            return p.cancel(job, t)
        if kind == "requeue":
            jr = self.book.jobs[job]
            out = p.depart(job, t)
            jr.requeue()
            return out + p.arrive(jr.job, t)
        if kind == "tick":
            return p.tick(t)
        if kind == "node_down":
            return self.stack.mark_down(node, t)  # jobs that cannot fit without it are held
        if kind == "node_up":
            return self.stack.mark_up(node, t)
        raise ValueError(f"unknown journal event {kind!r}")


__all__ = ["PolicyPort"]
