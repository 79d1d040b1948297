"""The formulas of DESIGN's metrics (see the package docstring), the per-job sums of a run
and the record of a completed job: the simulator's observer, the live monitor and the
experiments' points compute every metric with these."""
from __future__ import annotations

import math
from dataclasses import dataclass
from operator import itemgetter


def mean(total: float, n: int, empty=0.0):
    return total / n if n else empty


def mean_queueing_delay(R: float, A: int) -> float:
    """M = R/A (0 when nothing was allocated)."""
    return R / A if A else 0.0


def utilization(node_time: float, size: int, T: float) -> float:
    """U = node-time used / node-time available over a window of length T."""
    return node_time / (size * T) if T > 0 else 0.0


def throughput(C: int, T: float) -> float:
    """X = C/T."""
    return C / T if T > 0 else 0.0


def power(X: float, M: float) -> float:
    """X/M; infinite when jobs complete without any queueing delay, 0 when none complete."""
    return X / M if M > 0 else math.inf if X > 0 else 0.0


def measured_load(S: float, size: int, T: float) -> float:
    """S/(N T): the service demand admitted over the node-time available."""
    return S / (size * T) if T > 0 else 0.0


def time_average(area: float, T: float) -> float:
    """The mean of a quantity whose integral over [0, T] is ``area`` (jobs in system)."""
    return area / T if T > 0 else 0.0


def ls_ratio(size_waits: list) -> float:
    """Mean wait of jobs above the median allocated size over the mean wait of the rest;
    ``size_waits``: ``(allocated size, wait, ...)`` per job."""
    return ls_ratio_of(list(map(itemgetter(0), size_waits)), list(map(itemgetter(1), size_waits)))


def ls_ratio_of(sizes, waits) -> float:
    """:func:`ls_ratio` of the columns: ``sizes[i]`` and ``waits[i]`` of job i."""
    if len(sizes) < 2:
        return float("nan")
    import numpy as np  # lazy: 85 ms the live monitor, which imports these formulas, never needs

    sizes, waits = np.asarray(sizes), np.asarray(waits, dtype=float)
    large = sizes > np.median(sizes)  # the median of the sizes (of two middle ones, their mean)
    n_large = int(np.count_nonzero(large))
    if n_large == 0 or n_large == len(sizes):
        return float("nan")
    ms = _running_sum(waits[~large]) / (len(sizes) - n_large)
    ml = _running_sum(waits[large]) / n_large
    if ms == 0:
        return float("inf") if ml > 0 else 1.0
    return ml / ms


def _running_sum(values) -> float:
    """The sum of a numpy array added one value after the other, in order: what a Python loop
    ``total += v`` from 0.0 gives (numpy's ``sum`` adds pairwise, whose rounding differs;
    issue 18: the per-job sums of a run, by C loops with the same numbers)."""
    import numpy as np  # lazy: 85 ms the live monitor, which imports these formulas, never needs

    return float(np.add.accumulate(values)[-1]) if len(values) else 0.0


def busy_node_time(records) -> float:
    """Node-time of a schedule's job records (each job's given nodes x its execution)."""
    return sum(r.given * (r.end - r.start) for r in records)


def turnaround_by_asked(records) -> dict:
    """Mean turnaround per requested size (processors asked for), over job records."""
    acc: dict = {}
    for r in records:
        a = acc.setdefault(r.asked, [0, 0.0])
        a[0] += 1
        a[1] += r.end - r.submit
    return {p: s / n for p, (n, s) in sorted(acc.items())}


def per_size_means(sizes, waits, turnarounds) -> tuple:
    """(turnaround sum, ``per_size``) of the columns of completions (allocated size, wait,
    turnaround): per allocated size the completions, mean wait and mean turnaround. The sums
    run in completion order (:func:`_running_sum`), within each size too."""
    import numpy as np  # lazy: 85 ms the live monitor, which imports these formulas, never needs

    sizes = np.asarray(sizes, dtype=np.int64)
    waits, turnarounds = np.asarray(waits, dtype=float), np.asarray(turnarounds, dtype=float)
    if not len(sizes):
        return 0.0, {}
    order = np.argsort(sizes, kind="stable")  # by size, in completion order within a size
    by_size = sizes[order]
    cuts = [0, *(np.flatnonzero(by_size[1:] != by_size[:-1]) + 1).tolist(), len(order)]
    per_size = {}
    for a, b in zip(cuts, cuts[1:]):
        rows, n = order[a:b], b - a
        per_size[str(int(by_size[a]))] = {"completed": n, "mean_wait": _running_sum(waits[rows]) / n,
                                          "mean_turnaround": _running_sum(turnarounds[rows]) / n}
    return _running_sum(turnarounds), per_size


@dataclass
class JobRecord:
    """One completed job of a run (``keep_records``): the SWF writer's input."""

    id: object
    submit: float
    start: float
    end: float
    asked: int
    given: int
    folds: int
    runtime: float
    nodes: tuple = ()

    @property
    def wait(self) -> float:
        return self.start - self.submit

    @property
    def turnaround(self) -> float:
        return self.end - self.submit
