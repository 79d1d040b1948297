"""``fb``: multilevel foreground-background feedback (Kleinrock; Zhou, Brent and Qu 1997,
section 4).

Levels 0..L-1 with slot lengths ``quanta``; new jobs join the tail of level 0; each slot
serves the head of the highest (lowest-numbered) non-empty level; a job that is not done
after its slot goes to the tail of the next level (the last level is round robin). Written
independently of ``multilevel`` so that the paper's claim "FB is the multilevel two-queue
system with N = 1 and all f_i = 1" is checked by comparing two implementations.
"""
from __future__ import annotations

from collections import deque

from scheduler.gang import register
from scheduler.gang.office import GangError, OfficeManager, _positive


@register("fb")
class FB(OfficeManager):
    """Foreground-background: serve the head of the highest non-empty level, then demote."""

    def __init__(self, topology, allocator="naive", *, quanta=(1.0, 2.0, 4.0, 8.0), **params):
        if isinstance(quanta, (int, float)):
            quanta = (quanta,)
        try:
            quanta = tuple(quanta)
        except TypeError:
            raise GangError(f"quanta must be a list of slot lengths, got {quanta!r}") from None
        if not quanta:
            raise GangError("fb needs at least one level (quanta)")
        self.quanta = tuple(_positive(q, f"quantum of level {i}") for i, q in enumerate(quanta))
        super().__init__(topology, allocator, **params)
        self.levels = [deque() for _ in self.quanta]

    def _admit(self, rec, now):
        rec.level = 0
        self.levels[0].append(rec.id)

    def _leave(self, rec, now):
        if rec.id in self.levels[rec.level]:
            self.levels[rec.level].remove(rec.id)

    def _next(self, now):
        for q in self.levels:
            if q:
                return q[0]
        return None

    def _length(self, rec):
        return self.quanta[rec.level]

    def _slot_ended(self, rec, now, completed):
        if completed:
            return
        self.levels[rec.level].remove(rec.id)
        rec.level = min(rec.level + 1, len(self.quanta) - 1)
        self.levels[rec.level].append(rec.id)

    def _snapshot_extra(self):
        return {"levels": [list(q) for q in self.levels], "quanta": list(self.quanta)}
