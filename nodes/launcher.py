"""The launcher: forks one node agent per node of the topology, and restarts those that die.

The parent imports everything a node needs (zmq, msgpack, the agent) and creates NO ZeroMQ
context, then forks; each child creates its own context. Forking shares the interpreter
and the imported modules copy-on-write (measured by the CEO on this machine: about 2.3 MB
of unique memory per node, 1024 nodes in about 7 s; a fresh interpreter per node costs
8.4 MB and 70 s). ``gc.freeze()`` before forking keeps the garbage collector from touching
(and so copying) the shared objects.

The launcher then waits for its children. SIGTERM/SIGINT are forwarded to every child by
pid; every child gets PR_SET_PDEATHSIG(SIGTERM), so the nodes end with the launcher even
when it is SIGKILLed. The launcher exits when its last child has and no restart is due.

Restarts (``Restarts``): a node that dies (killed by a signal, or ending with a status other
than 0) is forked again, by the launcher itself, as its own child: it registers again with a
new pid, which the daemon takes for a new incarnation (its lost tasks are requeued, and a
node the daemon had marked down is back in service: ``Stack.mark_up`` retries the waiting
jobs). A node that ends with status 0 was told to stop (the daemon's ``shutdown``, SIGTERM)
and is not restarted, nor is anything once the launcher itself is stopping. The first
restart of a node waits ``RESTART_FIRST`` (0.5 s), each next one twice as long up to
``RESTART_MAX`` (8 s); a node that stayed up ``RESTART_STABLE`` (60 s) starts again from
0.5 s. A node restarted ``max_restarts`` times (default 5) within ``RESTART_WINDOW`` (60 s)
is left dead: the daemon keeps it down until ``mcemu node --connect ipc://$MCEMU_HOME/daemon.sock
--id N`` brings it back. ``--no-restart`` (``mcemu up --no-restart``) keeps every dead node
dead, to study failures. Every death, restart and refusal is one line in the launcher log.
The launcher only ever signals, waits for and restarts its own children, by pid; when a node
dies it ends that node's tasks and everything they started (nodes.contain) before restarting it.
"""
from __future__ import annotations

import argparse
import gc
import os
import select
import signal
import sys
import time
import traceback
from collections import deque

import msgpack  # noqa: F401  (imported before forking on purpose)
import zmq  # noqa: F401

from emulator.live import config as configmod
from emulator.live import home as homemod
from emulator.live import protocol  # noqa: F401
from nodes import agent, contain

RESTART_FIRST = 0.5    # seconds before a dead node's first restart
RESTART_MAX = 8.0      # the backoff doubles up to this
RESTART_STABLE = 60.0  # a node up this long starts again from RESTART_FIRST
RESTART_WINDOW = 60.0  # at most max_restarts restarts of one node within this many seconds
MAX_RESTARTS = configmod.default("max_restarts")  # restarts of one node within RESTART_WINDOW


def log(msg: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} launcher: {msg}", file=sys.stderr, flush=True)


def fork_node(n: int, endpoint: str, *, close_fds=(), record=None, **node_kw) -> int:
    """Fork the agent of node ``n`` (``node_kw``: the keywords of ``nodes.agent.run_node``, the
    node settings of emulator.live.config); returns its pid, given to ``record(pid)`` first,
    while a SIGTERM would still wait (so that its handler knows the child). Only call from a
    process with no ZeroMQ context."""
    me = os.getpid()
    # SIGTERM/SIGINT blocked across the fork: one that reached the child before it reset the
    # launcher's handlers would run the launcher's handler there and be lost (a node that
    # never stops); blocked, it stays pending until the child has SIG_DFL (or the agent's own)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            signal.set_wakeup_fd(-1)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            for fd in close_fds:  # the launcher's wake-up pipe
                os.close(fd)
            agent.set_pdeathsig(signal.SIGTERM)
            if os.getppid() != me:
                os._exit(0)
            gc.enable()
            code = agent.run_node(n, endpoint, parent_pid=me, **node_kw)
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    try:
        if record is not None:
            record(pid)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    return pid


def launch(endpoint: str, ids, close_fds=(), children=None, stopping=None, **node_kw) -> dict[int, int]:
    """Fork one agent per id into ``children`` {pid: node id} (returned), until ``stopping()``;
    ``node_kw`` as for ``fork_node``. Only call from a process with no ZeroMQ context."""
    homemod.raise_nofile(256)
    gc.collect()
    gc.freeze()
    children = {} if children is None else children
    for n in ids:
        if stopping is not None and stopping():
            break
        fork_node(n, endpoint, close_fds=close_fds, record=lambda pid, n=n: children.__setitem__(pid, n),
                  **node_kw)
    return children


class Restarts:
    """When to restart a dead node: backoff doubling from ``first`` to ``cap``, at most
    ``limit`` restarts of a node within ``window`` seconds (``limit`` 0: never). Pure: the
    clock is passed in."""

    def __init__(self, limit=MAX_RESTARTS, first=RESTART_FIRST, cap=RESTART_MAX, window=RESTART_WINDOW,
                 stable=RESTART_STABLE):
        self.limit, self.first, self.cap, self.window, self.stable = limit, first, cap, window, stable
        self.history: dict[int, deque] = {}  # node -> monotonic times of its restarts
        self.backoff: dict[int, float] = {}
        self.started: dict[int, float] = {}  # node -> when its current process started

    def born(self, n: int, now: float) -> None:
        self.started[n] = now

    def died(self, n: int, now: float) -> float | None:
        """Node ``n`` died at ``now``: the delay before restarting it, or None to leave it dead."""
        if self.limit <= 0:
            return None
        h = self.history.setdefault(n, deque())
        while h and h[0] <= now - self.window:
            h.popleft()
        if len(h) >= self.limit:
            return None
        if now - self.started.get(n, now) >= self.stable:
            self.backoff.pop(n, None)
        delay = self.backoff.get(n, self.first)
        self.backoff[n] = min(delay * 2, self.cap)
        h.append(now + delay)
        return delay


class Supervisor:
    """Waits for the children; restarts the dead ones (``Restarts``); forwards SIGTERM/SIGINT."""

    def __init__(self, endpoint: str, restarts: Restarts, home=None, **node_kw):
        self.endpoint, self.restarts, self.home, self.node_kw = endpoint, restarts, home, node_kw
        self.children: dict[int, int] = {}  # pid -> node
        self.due: dict[int, float] = {}  # node -> monotonic time of its restart
        self.stopping = False
        self.rfd, self.wfd = os.pipe()
        for fd in (self.rfd, self.wfd):
            os.set_blocking(fd, False)

    def start(self, ids) -> None:
        if contain.base() is None:
            contain.set_subreaper()  # a dead node's orphaned task processes come here, not to init
        else:
            contain.sweep()  # tasks of agents killed while nobody was left to end them
        # into self.children as they are forked: a SIGTERM meanwhile is forwarded to those, and
        # no more are forked
        launch(self.endpoint, ids, close_fds=(self.rfd, self.wfd), children=self.children,
               stopping=lambda: self.stopping, **self.node_kw)
        now = time.monotonic()
        for n in self.children.values():
            self.restarts.born(n, now)
        self._record()

    def _record(self) -> None:
        if self.home is not None:
            homemod.write_json(self.home / "nodes.json", {str(p): n for p, n in self.children.items()})

    def _on_signal(self, signum, _frame) -> None:
        if signum == signal.SIGCHLD:
            return  # only wakes the loop (the wake-up pipe)
        self.stopping = True
        self.due.clear()
        for pid in list(self.children):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    def _reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                self.children.clear()
                return
            if pid == 0:
                return
            n = self.children.pop(pid, None)
            if n is None:
                continue  # an adopted orphan of a dead node's task (session mode), killed by _contain
            self._contain(pid)
            code = os.waitstatus_to_exitcode(status)
            how = f"killed by signal {-code}" if code < 0 else f"ended with status {code}"
            if code == 0 or self.stopping:
                if code:
                    log(f"node {n} (pid {pid}) {how}")
                continue
            delay = self.restarts.died(n, time.monotonic())
            if delay is None:
                why = ("--no-restart" if self.restarts.limit <= 0 else
                       f"{self.restarts.limit} restart{'s' * (self.restarts.limit != 1)} within "
                       f"{self.restarts.window:g} s")
                log(f"node {n} (pid {pid}) {how}; not restarted ({why}): it stays down")
            else:
                log(f"node {n} (pid {pid}) {how}; restarting it in {delay:g} s")
                self.due[n] = time.monotonic() + delay
            self._record()

    def _contain(self, pid: int) -> None:
        """Node process ``pid`` ended: so do its tasks and all they started (nodes.contain),
        before it can be restarted. In session mode its tasks' orphans were adopted by the
        launcher (a subreaper): every child that is not a node goes, with its descendants."""
        if contain.base() is not None:
            if not contain.kill_agent(pid):
                log(f"node pid {pid}: its tasks' cgroup is not empty after {contain.KILL_WAIT:g} s")
            return
        me, table = os.getpid(), contain.proc_table()
        adopted = {p for p, pp, _s in table if pp == me and p not in self.children}
        contain.kill_pids(adopted | contain.descendants(adopted, table))

    def _restart_due(self) -> None:
        now = time.monotonic()
        for n, at in sorted(self.due.items()):
            if at > now or self.stopping:
                continue
            del self.due[n]
            gc.collect()
            gc.freeze()
            pid = fork_node(n, self.endpoint, close_fds=(self.rfd, self.wfd),
                            record=lambda pid, n=n: self.children.__setitem__(pid, n), **self.node_kw)
            self.restarts.born(n, time.monotonic())
            log(f"node {n} restarted as pid {pid}")
            self._record()

    def run(self) -> int:
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
            signal.signal(s, self._on_signal)
        signal.set_wakeup_fd(self.wfd)
        try:
            while self.children or (self.due and not self.stopping):
                self._reap()
                self._restart_due()
                if not self.children and not (self.due and not self.stopping):
                    break
                timeout = None if not self.due else max(0.0, min(self.due.values()) - time.monotonic())
                try:
                    select.select([self.rfd], [], [], timeout)
                except InterruptedError:  # pragma: no cover - PEP 475 retries
                    pass
                try:
                    while os.read(self.rfd, 512):
                        pass
                except BlockingIOError:
                    pass
        finally:
            signal.set_wakeup_fd(-1)
        return 0


def _arguments(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="mcemu-launcher")
    ap.add_argument("--connect", required=True)
    ap.add_argument("--nodes", required=True, help="node ids: N (0..N-1) or A-B (inclusive)")
    ap.add_argument("--home")
    ap.add_argument("--output-dir")
    # the node settings it forwards to its agents, and its own (restarts): emulator.live.config
    configmod.add_arguments(ap, configmod.LAUNCHER)
    a = ap.parse_args(argv)
    lo, _, hi = a.nodes.partition("-")
    a.ids = range(int(lo), int(hi) + 1) if hi else range(int(lo))
    return a


def main(argv=None) -> int:
    a = _arguments(argv)
    home = None
    if a.home:
        os.environ["MCEMU_HOME"] = a.home
        home = homemod.home_dir()
        homemod.write_pidfile(home / "launcher.pid")
    t = time.monotonic()
    node_kw = {**configmod.node_keywords(a), "output_dir": a.output_dir}
    if node_kw["rt_priority"]:
        why = agent.set_rt_priority(node_kw["rt_priority"])  # probe once; each node sets its own
        if why:
            log(f"--rt-priority: {why}; nodes run at normal priority")
            node_kw["rt_priority"] = None
        else:
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    restarts = Restarts(limit=0 if a.no_restart else max(0, a.max_restarts))
    sup = Supervisor(a.connect, restarts, home=home, **node_kw)
    # a SIGTERM while forking: forwarded to the children forked so far, and no more are forked
    signal.signal(signal.SIGTERM, sup._on_signal)
    signal.signal(signal.SIGINT, sup._on_signal)
    sup.start(a.ids)
    policy = ("restarts off (--no-restart)" if restarts.limit <= 0 else
              f"restarts after {RESTART_FIRST:g} s doubling to {RESTART_MAX:g} s, at most {restarts.limit} "
              f"per node within {RESTART_WINDOW:g} s")
    log(f"forked {len(sup.children)} nodes in {time.monotonic() - t:.2f} s; {policy}")
    try:
        return sup.run()
    finally:
        if home is not None:
            try:
                (home / "launcher.pid").unlink()
            except FileNotFoundError:
                pass


if __name__ == "__main__":
    sys.exit(main())
