"""``round-robin``: conventional coscheduling with a fixed slot (Ousterhout 1982; Zhou,
Brent and Qu 1997, section 1).

P walks the office list cyclically, one fixed slot of ``slot`` time units per job. A new job
is checked in at the tail of the list, as a new row is added at the bottom of Ousterhout's
matrix, so it is served when P reaches the end of the list, not at once. When the job P
points to checks out, P resumes at the job that followed it.

This is the reading under which the paper's section 6 claim holds exactly: the multilevel
two-queue system with f_0 and N infinite (one level, no arrival insertion) walks the same
list in the same order (tests/test_gang.py checks identical schedules).
"""
from __future__ import annotations

from scheduler.gang import register
from scheduler.gang.office import OfficeManager, _positive


class CyclicPointer:
    """P's cyclic walk over an ordered list that changes under it."""

    def __init__(self):
        self.last = None  # the job P pointed at last
        self.succ = None  # where to resume when ``last`` left

    def next(self, order):
        if not order:
            return None
        if self.last is not None and self.last in order:
            nxt = order[(order.index(self.last) + 1) % len(order)]
        elif self.succ is not None and self.succ in order:
            nxt = self.succ
        else:
            nxt = order[0]
        self.last, self.succ = nxt, None
        return nxt

    def leaving(self, job_id, order):
        """Call before ``job_id`` is removed from ``order``."""
        if job_id == self.last or job_id == self.succ:
            i = order.index(job_id)
            rest = order[i + 1:] + order[:i]
            self.succ = rest[0] if rest else None
            self.last = None


@register("round-robin")
class RoundRobin(OfficeManager):
    """Fixed slot length; P cycles over the office list (Ousterhout)."""

    def __init__(self, topology, allocator="naive", *, slot: float = 1.0, **params):
        self.slot = _positive(slot, "slot length")
        super().__init__(topology, allocator, **params)
        self._p = CyclicPointer()

    def _leave(self, rec, now):
        self._p.leaving(rec.id, self.office.order)

    def _next(self, now):
        return self._p.next(self.office.order)

    def _length(self, rec):
        return self.slot

    def _snapshot_extra(self):
        return {"slot_length": self.slot}
