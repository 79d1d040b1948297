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


_NO_META = object()  # Job's meta not given: a new empty dict


@dataclass(slots=True, eq=False, init=False)
class Job:
    id: int
    submit: float
    request: Request
    runtime: float
    name: str = ""
    meta: dict = field(default_factory=dict)

    def __init__(self, id, submit, request, runtime, name="", meta=_NO_META):
        # the dataclass __init__ and its checks in one call (issue 18: a trace replay makes
        # every job here), answered at once for the usual job: float times, finite, submit
        # >= 0 and run time > 0, a Request
        self.id = id
        self.submit = submit
        self.request = request
        self.runtime = runtime
        self.name = name
        self.meta = {} if meta is _NO_META else meta
        if type(submit) is float and type(runtime) is float and 0.0 <= submit < _INF and 0.0 < runtime < _INF \
                and type(request) is Request:
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
