"""What a task's process is given besides its program: its environment (mcemu's ``mpi4py`` first
on its PYTHONPATH; over tcp, the interconnect's port and the credential to reach it) and the
prompt wake-ups it asks Linux for (nodes.comm.Comm asks at its start)."""
from __future__ import annotations

import ctypes
import os
import platform
import struct
from pathlib import Path

from emulator.live import home as homemod

ROOT = Path(__file__).resolve().parents[1]


def python_path(existing: str | None) -> str:
    """A task's PYTHONPATH: mcemu's ``mpi4py`` shim (nodes/mpi/shim: ``from mpi4py import MPI``
    in a task is ours, whatever else is installed) and this mcemu (a user's program imports
    nodes.comm from anywhere) first."""
    return os.pathsep.join(p for p in (str(ROOT / "nodes" / "mpi" / "shim"), str(ROOT), existing) if p)


def remote_env(endpoint: str, key: str | None) -> dict:
    """What a node agent connected to the daemon at ``endpoint`` with the credential file ``key``
    adds to its tasks' environment: over tcp (a node of another host) the interconnect's tcp port
    (emulator.live.home.net_for), the credential to reach it with (empty: an ``--insecure``
    cluster's plain port) and the task's PYTHONPATH; over ipc nothing (``mcemu up`` gave it)."""
    if not endpoint.startswith("tcp://"):
        return {}
    return {"MCEMU_NET": homemod.net_for(endpoint), "MCEMU_NET_KEY": str(Path(key).resolve()) if key else "",
            "PYTHONPATH": python_path(os.environ.get("PYTHONPATH"))}


# sched_setattr(2)'s number where it has one (the C library has no wrapper for it)
_SCHED_SETATTR = {"x86_64": 314, "aarch64": 274}.get(platform.machine())
_SLICE_NS = 100_000  # the shortest slice the kernel accepts for SCHED_OTHER (0.1 ms)


def prompt_wakeups() -> dict:
    """Ask Linux to wake this process at its timers' instants, not a little later: what the
    hold (a message kept until its due time, then handed over) measures as delivery error.

    * a timer slack of 1 ns (prctl PR_SET_TIMERSLACK): the default 50 us lets the kernel
      coalesce a sleep's end with later timers, 50 us of error at every delivery;
    * a 0.1 ms slice (sched_setattr's sched_runtime, SCHED_OTHER, Linux >= 6.12): EEVDF lets a
      waking task with a shorter slice preempt the running one at once, where with the default
      slice (0.75 ms x (1 + log2 CPUs)) it waits up to the end of the other's; that wait was
      the p99 on a busy machine (issue 16). The process's nice value is kept.

    Neither needs privileges; where either is missing (another OS, an older kernel) the
    process runs as before. Returns what took effect. Measured on the chapter-6 agreement run
    at the default dilation, 2 cores, one of them busy with other work: p50 130-140 us ->
    75-95 us, p99 470-1,530 us -> 420-730 us over five runs each (scripts/bench_net_live.py)."""
    done = {"timer_slack": False, "slice": False}
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return done
    try:
        done["timer_slack"] = libc.prctl(29, ctypes.c_ulong(1), 0, 0, 0) == 0  # PR_SET_TIMERSLACK
        if _SCHED_SETATTR is not None and os.sched_getscheduler(0) == os.SCHED_OTHER:
            # struct sched_attr, SCHED_ATTR_SIZE_VER1: size, policy, flags, nice, priority,
            # runtime, deadline, period, util_min, util_max
            attr = struct.pack("<IIQiIQQQII", 56, os.SCHED_OTHER, 0, os.getpriority(os.PRIO_PROCESS, 0), 0,
                               _SLICE_NS, 0, 0, 0, 0)
            done["slice"] = libc.syscall(_SCHED_SETATTR, 0, ctypes.create_string_buffer(attr, 56), 0) == 0
    except (AttributeError, OSError):
        pass
    return done
