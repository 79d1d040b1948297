"""Jobs and the decisions policies return.

A :class:`Job` is what a user submits: an id, a submit time, a request and a run time in the
papers' time units (the residence time at the requested size). What policies answer with
(Start, Finish, SlotSwitch) is in :mod:`scheduler.decisions`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from scheduler.topology import Request


_INF = float("inf")


class JobError(ValueError):
    """A malformed job: negative or non-finite times, a duplicate id, an unknown id."""


@dataclass(slots=True, eq=False)
class Job:
    id: int
    submit: float
    request: Request
    runtime: float
    name: str = ""
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        # the checks below, answered at once for the usual job: float times, finite, submit
        # >= 0 and run time > 0, a Request (issue 18: a trace replay makes every job here)
        s, r = self.submit, self.runtime
        if type(s) is float and type(r) is float and 0.0 <= s < _INF and 0.0 < r < _INF \
                and type(self.request) is Request:
            return
        check_time(self.submit, "submit time")
        if not isinstance(self.runtime, (int, float)) or not math.isfinite(self.runtime) or self.runtime <= 0:
            raise JobError(f"job {self.id}: run time must be a positive number, got {self.runtime!r}")
        if not isinstance(self.request, Request):
            raise JobError(f"job {self.id}: request must be a Request, got {self.request!r}")

    def __repr__(self) -> str:
        return f"Job({self.id}, submit={self.submit:g}, {self.request}, runtime={self.runtime:g})"


def check_time(t, what: str = "time") -> None:
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
        raise JobError(f"{what} must be a finite number >= 0, got {t!r}")


def execution_time(runtime: float, asked: int, given: int) -> float:
    """Run time on ``given`` processors of a job that asked for ``asked``: the RSR paper's
    pessimistic linear rule (each halving of the processors doubles the execution time),
    i.e. the run time scales with asked/given. A buddy-2d square whose side is halved has a
    quarter of the processors and so runs four times longer."""
    return runtime * asked / given if given != asked else runtime


__all__ = ["Job", "JobError", "check_time", "execution_time"]
