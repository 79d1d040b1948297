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
    """P's cyclic walk over an ordered list that changes under it. When the job P pointed at
    leaves, P resumes at whatever then sits in its place (a job appended at the tail after
    the last job left is next, as P moving right would find it)."""

    def __init__(self):
        self.last = None  # the job P pointed at last
        self.idx = None  # where to resume when ``last`` left

    def next(self, order):
        if not order:
            return None
        if self.last is not None and self.last in order:
            i = order.index(self.last) + 1
        elif self.idx is not None:
            i = self.idx
        else:
            i = 0
        nxt = order[i] if i < len(order) else order[0]
        self.last, self.idx = nxt, None
        return nxt

    def leaving(self, job_id, order):
        """Call before ``job_id`` is removed from ``order``."""
        i = order.index(job_id)
        if job_id == self.last:
            self.last, self.idx = None, i
        elif self.last is None and self.idx is not None and i < self.idx:
            self.idx -= 1

    def inserted(self, position):
        """A job was inserted at ``position`` behind P (it must wait for a full cycle)."""
        if self.last is None and self.idx is not None and position <= self.idx:
            self.idx += 1


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
