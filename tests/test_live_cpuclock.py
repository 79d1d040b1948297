"""Issue 28's must-hold, CPU counted, as far as it holds here: Jacobi with 16 ranks on a mesh:8x8
in virtual time with the host-speed gauge (``--cpu-clock gauged``, nodes.mpi.cpuclock) reports the
same mean message delay within 2 % on an idle host and with two CPU-bound hogs beside it. Its
MPI.Wtime() elapsed time is printed, not asserted: on this 2-core VM runs of one condition differ
by up to 16 %, more than the hogs move them (docs/ARCHITECTURE.md, "Host speed"); with
``--cpu-scale 0`` it is exact (tests/test_live_vtime.py).

Runs alternate idle and hogs (a drift of the host's other load falls on both) and the medians of
ROUNDS each are compared: one run's elapsed time is the critical path of ~3500 compute intervals
of 10-30 us, each as noisy as the host's caches are (docs/ARCHITECTURE.md, virtual time)."""
from __future__ import annotations

import statistics
import subprocess
import sys

import pytest

from test_live_vtime import UP_8x8, _jacobi

pytestmark = pytest.mark.live
ROUNDS = 3


def _with_hogs(cluster):
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    cluster.record(*hogs)
    try:
        return _jacobi(cluster)
    finally:
        for h in hogs:  # by pid, each
            h.kill()
            h.wait(timeout=10)


@pytest.mark.slow
def test_cpu_counted_message_delays_do_not_depend_on_the_host_s_load(cluster):
    cluster.up(*UP_8x8, "--cpu-scale", "1", "--cpu-clock", "gauged")
    idle, busy = [], []
    for _ in range(ROUNDS):
        idle.append(_jacobi(cluster))
        busy.append(_with_hogs(cluster))
    el_i, el_b = (statistics.median(e for e, _ in runs) for runs in (idle, busy))
    d_i, d_b = (statistics.median(c["mean_delay_us"] for _, c in runs) for runs in (idle, busy))
    print(f"elapsed idle {el_i:.6f} hogs {el_b:.6f}; mean delay idle {d_i:.4f} hogs {d_b:.4f} us")
    assert el_i > 0 and el_b > 0, (idle, busy)
    assert abs(d_b / d_i - 1) < 0.02, (idle, busy)
