"""``none``: no time sharing (the batch baseline of the paper's introduction).

MPL is 1: one row of the Ousterhout matrix, so jobs are space-shared only; every placed job
runs from check-in to check-out and the rest wait in FCFS order for nodes. P points at the
oldest job of the row; the slot never expires.
"""
from __future__ import annotations

import math

from scheduler.gang import register
from scheduler.gang.office import OfficeManager


@register("none")
class NoTimeSharing(OfficeManager):
    """No time sharing: MPL 1, jobs run to completion (space sharing only)."""

    fixed_mpl = 1

    def _next(self, now):
        order = self.office.order
        return order[0] if order else None

    def _length(self, rec):
        return math.inf
