"""A host-speed gauge for virtual time (``--cpu-clock gauged``): CPU seconds in units of a
reference work, so a host slowed or sped up by what runs beside the cluster moves no clock.

A rank's clock advances by the CPU time its program uses between MPI calls (nodes.mpi.live).
CPU time is not work: the same loop takes more of it when another process shares the physical
core, the caches, the memory bus, or the host's clock frequency changes with its load (no
instruction counters here: perf_event_open is refused in this VM). The gauge measures how long
a fixed reference work (:func:`probe`, a mix of interpreter and small numpy work, as between
MPI calls) takes now and compares it with the cluster's calibration (``ref``: the interconnect
measured it at its start, :func:`calibrate`, and its welcome carries it): an interval of ``c``
CPU seconds counts ``c * ref / now``. ``now`` is the median of the last WINDOW probes, one every
PERIOD wall seconds, taken inside an MPI call (the rank's clock is stopped: the probe's own CPU
time is never the program's).

The factor is fixed when the program resumes and published with the mark of that resume
(emulator.live.vclock), so the interconnect's bound for a computing rank applies the very factor
the rank's clock will: the bound stays conservative.
"""
from __future__ import annotations

import statistics
import time

import numpy as np

PERIOD = 0.02  # wall seconds between two probes of a rank
WINDOW = 15  # probes in the median: slow changes of the host (frequency, co-runners), not one preemption
CALIBRATION = 41  # probes of the interconnect's calibration

_A = np.linspace(0.0, 1.0, 20 * 20).reshape(20, 20)


def _work() -> float:
    a, s = _A, 0.0
    for _ in range(4):
        b = 0.25 * (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:])
        s += float(np.sum((b - a[1:-1, 1:-1]) ** 2))
    x = 0
    for i in range(600):
        x += i * i
    d = {}
    for i in range(100):
        d[i & 7] = d.get(i & 7, 0) + i
    return s + x + d[0]


def probe() -> float:
    """Thread CPU seconds of one reference work (about 0.15 ms on a 2020s core), warm: a first
    pass, not timed, brings its code and data into the caches. What it measures is the core's
    speed now (its frequency, what shares it and its caches), not how cold this rank's caches
    were, which a probe every PERIOD says nothing about for the intervals between."""
    _work()
    t = time.thread_time()
    _work()
    _work()
    _work()
    return time.thread_time() - t


def calibrate(n: int = CALIBRATION) -> float:
    """The reference: the median probe of ``n`` (the first, cold, left out)."""
    probe()
    return statistics.median(probe() for _ in range(n))


class Gauge:
    """A rank's gauge against ``ref`` (seconds of the reference work at calibration)."""

    def __init__(self, ref: float, period: float = PERIOD, window: int = WINDOW):
        self.ref, self.period, self.window = float(ref), period, window
        self.recent: list[float] = []
        self.next = 0.0
        self.factor = 1.0
        self.probes = 0

    def update(self) -> float:
        """The factor for the interval that begins now, probing first when PERIOD has passed."""
        now = time.monotonic()
        if now >= self.next:
            self.next = now + self.period
            self.recent.append(probe())
            self.probes += 1
            if len(self.recent) > self.window:
                del self.recent[0]
            cur = statistics.median(self.recent)
            if cur > 0:
                self.factor = self.ref / cur
        return self.factor


__all__ = ["CALIBRATION", "Gauge", "PERIOD", "WINDOW", "calibrate", "probe"]
