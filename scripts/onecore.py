"""One core for a benchmark (issue 18's targets are "on one core"), shared by the scripts that
measure them: numpy's thread pools limited to one thread (before numpy is imported, in this
process or in the child processes it starts) and the process pinned to one CPU, which its
child processes inherit."""
from __future__ import annotations

import os

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def limit_threads() -> None:
    """One thread for numpy's pools, unless the caller's environment says otherwise."""
    for name in THREAD_VARIABLES:
        os.environ.setdefault(name, "1")


def pin_one_core() -> str:
    """Pin this process (and what it starts from now on) to the last CPU it may use; says
    what was done."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[-1]})
        return f"pinned to CPU {cpus[-1]} (of {len(cpus)} available)"
    except (AttributeError, OSError) as e:  # not Linux, or not allowed
        return f"not pinned ({e.__class__.__name__}); Python runs the simulation on one thread"
