"""The launcher: forks one node agent per node of the topology.

The parent imports everything a node needs (zmq, msgpack, the agent) and creates NO ZeroMQ
context, then forks; each child creates its own context. Forking shares the interpreter
and the imported modules copy-on-write (measured by the CEO on this machine: about 2.3 MB
of unique memory per node, 1024 nodes in about 7 s; a fresh interpreter per node costs
8.4 MB and 70 s). ``gc.freeze()`` before forking keeps the garbage collector from touching
(and so copying) the shared objects.

The launcher then waits for its children. SIGTERM/SIGINT are forwarded to every child by
pid; every child gets PR_SET_PDEATHSIG(SIGTERM), so the nodes end with the launcher even
when it is SIGKILLed. The launcher exits when its last child has.
"""
from __future__ import annotations

import argparse
import gc
import os
import signal
import sys
import time
import traceback

import msgpack  # noqa: F401  (imported before forking on purpose)
import zmq  # noqa: F401

from emulator.live import home as homemod
from emulator.live import protocol  # noqa: F401
from nodes import agent


def launch(endpoint: str, ids, heartbeat=0.2, liveness=3, output_dir=None, pidfile=None,
           rt_priority=None, sched="batch") -> dict[int, int]:
    """Fork one agent per id; returns {pid: node id}. Only call from a process with no
    ZeroMQ context."""
    homemod.raise_nofile(256)
    gc.collect()
    gc.freeze()
    me = os.getpid()
    children: dict[int, int] = {}
    for n in ids:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                agent.set_pdeathsig(signal.SIGTERM)
                if os.getppid() != me:
                    os._exit(0)
                gc.enable()
                code = agent.run_node(n, endpoint, heartbeat=heartbeat, liveness=liveness,
                                      parent_pid=me, output_dir=output_dir, rt_priority=rt_priority,
                                      sched=sched)
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(code)
        children[pid] = n
    return children


def supervise(children: dict[int, int]) -> int:
    """Wait for every child; forward SIGTERM/SIGINT to them by pid."""
    def forward(signum, _frame):
        for pid in list(children):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    while children:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        except InterruptedError:  # pragma: no cover - PEP 475 retries
            continue
        n = children.pop(pid, None)
        if n is not None and status:
            print(f"launcher: node {n} (pid {pid}) ended with status {os.waitstatus_to_exitcode(status)}",
                  file=sys.stderr, flush=True)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="mcemu-launcher")
    ap.add_argument("--connect", required=True)
    ap.add_argument("--nodes", required=True, help="node ids: N (0..N-1) or A-B (inclusive)")
    ap.add_argument("--heartbeat", type=float, default=0.2)
    ap.add_argument("--liveness", type=int, default=3)
    ap.add_argument("--home")
    ap.add_argument("--output-dir")
    ap.add_argument("--rt-priority", type=int, help="each node runs at SCHED_RR priority P where permitted")
    ap.add_argument("--sched", choices=("batch", "normal"), default="batch",
                    help="the node agents' scheduling policy (default batch: see nodes.agent.set_batch)")
    a = ap.parse_args(argv)
    if "-" in a.nodes:
        lo, hi = map(int, a.nodes.split("-"))
        ids = range(lo, hi + 1)
    else:
        ids = range(int(a.nodes))
    if a.home:
        os.environ["MCEMU_HOME"] = a.home
        home = homemod.home_dir()
        homemod.write_pidfile(home / "launcher.pid")
    t = time.monotonic()
    if a.rt_priority:
        why = agent.set_rt_priority(a.rt_priority)  # probe once; each node sets its own
        if why:
            print(f"launcher: --rt-priority: {why}; nodes run at normal priority", file=sys.stderr, flush=True)
            a.rt_priority = None
        else:
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    children = launch(a.connect, ids, a.heartbeat, a.liveness, a.output_dir, rt_priority=a.rt_priority,
                      sched=a.sched)
    if a.home:
        homemod.write_json(home / "nodes.json", {str(p): n for p, n in children.items()})
    print(f"launcher: forked {len(children)} nodes in {time.monotonic() - t:.2f} s", file=sys.stderr, flush=True)
    try:
        return supervise(children)
    finally:
        if a.home:
            try:
                (home / "launcher.pid").unlink()
            except FileNotFoundError:
                pass


if __name__ == "__main__":
    sys.exit(main())
