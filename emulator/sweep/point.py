"""One point of a user's sweep, ``sweep_point(params, seed) -> {metric: float}`` (top level, so
a process pool or a Dask worker unpickles it by reference), and :func:`check`, which builds
every stack and workload of a sweep once before any run, so an unknown policy or a bad value
is an error before the first replication starts.

A point is the experiments' point (emulator.experiments._points.point: one run of
emulator.sim.run, the reproductions' own): a discipline run, a gang run (``params["gang"]``)
or the replay of a trace (its arrivals scaled to ``load`` when given).
"""
from __future__ import annotations

from emulator.experiments import _points
from emulator.experiments.stats import point_key
from emulator.sim.run import read_trace, scaled_jobs
from emulator.sweep.grid import Sweep, SweepError
from scheduler.stack import build


def sweep_point(params: dict, seed: int) -> dict:
    return _points.point(params, seed)


def check(sweep: Sweep) -> list[dict]:
    """The sweep's points, once every distinct stack and workload of them has been built (and
    the trace read): the first that cannot be is a one-line :class:`SweepError`."""
    if sweep.trace:
        for k in ("size", "service", "service_mean", "demand"):
            if k in sweep.axes:
                raise SweepError(f"{k} does not apply to a trace (its jobs are the log's)")
    points = sweep.points()
    stacks, loads = set(), set()
    for p in points:
        key = (p["topology"], p["allocator"], p["scheduler"], p.get("reduction"), p["gang"],
               point_key(p.get("dparams") or {}))
        if key not in stacks:
            stacks.add(key)
            try:
                build(_points.spec_of(p, 0).stack)
            except (ValueError, KeyError) as e:  # RunSpecError is a ValueError
                raise SweepError(_one_line(e)) from None
        if sweep.trace:
            wkey = (p["topology"],)
        else:
            wkey = (p["topology"], p["load"], p["size"], p["service"], p["service_mean"], p["demand"])
        if wkey not in loads:
            loads.add(wkey)
            try:
                if sweep.trace:
                    read_trace(sweep.trace, p["topology"], float(sweep.time_unit))
                else:
                    _points.workload(p, 0)
            except (ValueError, KeyError, OSError) as e:
                raise SweepError(_one_line(e)) from None
    return points


def _one_line(e: Exception) -> str:
    msg = e.args[0] if isinstance(e, KeyError) and e.args and not str(e).startswith("unknown") else e
    return " ".join(str(msg).split())


__all__ = ["check", "scaled_jobs", "sweep_point"]
