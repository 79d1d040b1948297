"""The root's side of mpi4py.futures: the pools that run an executor's tasks, and the progress
that drives them from the calling thread.

mpi4py runs each executor's pool in a manager thread that feeds the workers and completes the
futures. mcemu's MPI is single-threaded (``MPI.Query_thread()`` is THREAD_SINGLE), so here the
thread that calls the executor does that work itself, whenever it calls in: ``submit`` hands a
task to an idle worker at once; ``Future.result``/``exception``, ``wait``, ``as_completed``,
``map``'s iterator and ``shutdown(wait=True)`` progress until what they wait for is done,
handing queued tasks to the workers as they free up. Between such calls the root computes and
a worker that finished waits. ``wait`` and ``as_completed`` are the standard library's: they
wait on an Event of a waiter they install on each future, which this Future replaces with one
whose ``wait`` progresses (``_Waiters``).

An MPI pool (``_Client``) talks to its workers over its own communicator, a ``Dup`` of the
one it was made from, so its messages never meet the program's; they are ordinary pickled
point-to-point messages, timed by the network model and counted in the job's statistics. A
pool of a communicator of one rank, and ThreadPoolExecutor's, run the tasks in the calling
thread (``_Local``), one each time the caller progresses.
"""
from __future__ import annotations

import concurrent.futures
import threading
from collections import deque

from mpi4py import MPI
from mpi4py.futures import _server
from mpi4py.futures._server import RemoteTraceback  # noqa: F401  (mpi4py's place for it)
from nodes.mpi import timing
from nodes.mpi.matching import engine

TAG = 0  # on the pool's own communicator: nothing else is sent there
_clients: list = []  # the pools of this rank that may still have work (progress drives them)
_shared = {"ctx": None}  # python -m mpi4py.futures, on rank 0: its SharedPoolCtx


class Future(concurrent.futures.Future):
    """The standard library's Future, completed by this thread's progress (module docstring)."""

    def __init__(self):
        super().__init__()
        self._waiters = _Waiters()

    def result(self, timeout=None):
        return super().result(progress_until(self.done, timeout))

    def exception(self, timeout=None):
        return super().exception(progress_until(self.done, timeout))


class _Waiters(list):
    """A future's waiters: stdlib's wait/as_completed block on the waiter's Event, which no
    other thread would set here; it becomes one whose wait progresses."""

    def append(self, waiter) -> None:
        if not isinstance(waiter.event, _ProgressEvent):
            waiter.event = _ProgressEvent()
        super().append(waiter)


class _ProgressEvent(threading.Event):
    def wait(self, timeout=None) -> bool:
        return super().wait(progress_until(self.is_set, timeout))


def progress_until(cond, timeout=None):
    """Progress the pools until ``cond()``; the timeout left for a blocking wait after it: 0
    when ``cond()`` holds or the time is up, what is left (None: no limit) when no pool has
    work that could make it hold. A timeout is counted on MPI.Wtime(), the rank's clock (virtual
    time on a --net-time virtual cluster): while it runs, the pools are polled with mpi4py's
    backoff (1 us doubling to 1 ms), those pauses on that clock too."""
    deadline = None if timeout is None else MPI.Wtime() + timeout
    pause = 1e-6
    while not cond():
        busy = [c for c in _clients if c.busy()]
        if not busy:
            return None if deadline is None else max(0.0, deadline - MPI.Wtime())
        if any([c.progress(False) for c in busy]):  # a list: every pool gets its turn
            pause = 1e-6
            continue
        if deadline is None:
            busy[0].progress(True)
            continue
        left = deadline - MPI.Wtime()
        if left <= 0:
            return 0
        engine().t.sleep(min(pause, left))
        pause = min(2 * pause, 1e-3)
    return 0


class _Pool:
    """What the two kinds of pool share: a queue of (executor, future, task), FIFO."""

    size = 1

    def __init__(self):
        self.queue: deque = deque()
        _clients.append(self)

    def push(self, owner, future, task) -> None:
        """Queue the task; an idle worker gets it at once (results are taken in by the waits)."""
        self.queue.append((owner, future, task))
        self._dispatch()

    def _dispatch(self) -> bool:
        return False  # the calling thread runs the tasks when it waits, not now

    def cancel(self, owner, exception=None) -> None:
        """Cancel ``owner``'s queued tasks (with ``exception``: fail them with it)."""
        keep = deque()
        for item in self.queue:
            if item[0] is not owner:
                keep.append(item)
            elif exception is None:
                item[1].cancel()
            elif item[1].set_running_or_notify_cancel():
                item[1].set_exception(exception)
        self.queue = keep

    def owes(self, owner) -> bool:
        return any(item[0] is owner for item in self.queue)

    def to_all(self, fn, *args) -> list:
        return [fn(*args)]  # the calling thread is the one worker

    def busy(self) -> bool:
        return bool(self.queue)

    def close(self) -> None:
        """Finish every task handed to this pool; it is then no longer progressed."""
        progress_until(lambda: not self.busy())
        if self in _clients:
            _clients.remove(self)


class _Local(_Pool):
    """Tasks run in the calling thread, one a progress step (mpi4py's thread pool)."""

    def __init__(self, size: int = 1):
        super().__init__()
        self.size = size

    def progress(self, block: bool) -> bool:
        while self.queue:
            _, future, (fn, args, kwargs) = self.queue.popleft()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args, **kwargs))
                except BaseException as exc:  # noqa: BLE001  (the task's error is its future's)
                    future.set_exception(exc)
                return True
        return False


class _Client(_Pool):
    """Workers: every rank of ``comm`` but ``root``, which this rank is (module docstring)."""

    def __init__(self, comm, root: int, options: dict | None = None):
        super().__init__()
        self.comm, self.root = comm, root
        self.idle = deque(r for r in range(comm.Get_size()) if r != root)
        self.size = len(self.idle)
        self.pending: dict = {}  # worker -> (executor, future)
        self.pinned: dict = {}  # worker -> deque of (executor, future, task) only it may run
        self.status = MPI.Status()
        if options is not None:  # the workers run the program's __main__ (python -m mpi4py.futures)
            self.to_all(_server.sync, _server.sync_data(options))

    def to_all(self, fn, *args) -> list:
        """``fn(*args)`` on every worker, once each; their results (an exception is raised)."""
        fs = []
        for pid in range(self.comm.Get_size()):
            if pid != self.root:
                fs.append(Future())
                self.pinned.setdefault(pid, deque()).append((None, fs[-1], (fn, args, {})))
        self.progress(False)
        return [f.result() for f in fs]

    def owes(self, owner) -> bool:
        return super().owes(owner) or any(o is owner for o, _ in self.pending.values())

    def busy(self) -> bool:
        return bool(self.queue or self.pending or any(self.pinned.values()))

    def progress(self, block: bool) -> bool:
        """Hand out what can go, take in what came back; ``block``: wait for one reply."""
        did = self._dispatch()
        if self.pending and (block or self.comm.iprobe(MPI.ANY_SOURCE, TAG, self.status)):
            self._receive()
            self._dispatch()
            did = True
        return did

    def _dispatch(self) -> bool:
        sent = False
        for pid in [p for p in self.idle if self.pinned.get(p)]:
            self.idle.remove(pid)
            sent = self._send(pid, *self.pinned[pid].popleft()) or sent
        while self.queue and self.idle:
            owner, future, task = self.queue.popleft()
            if future.set_running_or_notify_cancel():
                sent = self._send(self.idle.popleft(), owner, future, task) or sent
        return sent

    def _send(self, pid: int, owner, future, task) -> bool:
        if owner is None:
            future.set_running_or_notify_cancel()
        try:
            self.comm.send(task, pid, TAG)
        except BaseException as exc:  # noqa: BLE001  (a task that cannot be pickled fails its future)
            self.idle.appendleft(pid)
            future.set_exception(exc)
            return False
        self.pending[pid] = (owner, future)
        return True

    def _receive(self) -> None:
        try:
            result, exc = self.comm.recv(None, MPI.ANY_SOURCE, TAG, self.status)
        except BaseException as e:  # noqa: BLE001  (a result that cannot be unpickled here)
            result, exc = None, e
        pid = self.status.Get_source()
        _, future = self.pending.pop(pid)
        self.idle.append(pid)
        if exc is None:
            future.set_result(result)
        else:
            future.set_exception(exc)

    def close(self) -> None:
        """Finish the tasks, then stop the workers (their serve returns) and free the comm."""
        super().close()
        for pid in range(self.comm.Get_size()):
            if pid != self.root:
                self.comm.send(None, pid, TAG)
        self.comm.Free()


# the pool's own work is the MPI library's, not the program's, on a rank's virtual clock
timing.exclude(_Client)


def split(comm, root: int):
    """(the pool's communicator, the workers' intracomm; COMM_NULL on the root): collective
    over ``comm``, as mpi4py's comm_split (which makes an intercommunicator)."""
    pool = comm.Dup()
    rank = comm.Get_rank()
    workers = pool.Split(0 if rank == root else 1, rank)
    if rank == root:
        workers.Free()
        workers = MPI.COMM_NULL
    return pool, workers


def shared():
    """On the root of ``python -m mpi4py.futures``, its SharedPoolCtx; else None."""
    return _shared["ctx"]


class SharedPoolCtx:
    """``python -m mpi4py.futures``: rank 0 of COMM_WORLD runs the program (the context is
    itself there, None on the others), every other rank serves its executors' tasks from the
    exit of the context until rank 0 leaves it (after every task it handed out is done)."""

    def __init__(self):
        self.comm = self.workers = None
        self.on_root = False
        self.pool = None

    def __enter__(self):
        world = MPI.COMM_WORLD
        self.on_root = world.Get_rank() == 0
        if world.Get_size() > 1:
            self.comm, self.workers = split(world, 0)
        _shared["ctx"] = self if self.on_root else None
        return self if self.on_root else None

    def client(self, options: dict):
        """The root's pool, made (and the workers given the main module) at the first executor."""
        if self.pool is None:
            self.pool = _Local() if self.comm is None else _Client(self.comm, 0, options)
        return self.pool

    def __exit__(self, *exc) -> bool:
        try:
            if self.on_root:
                if self.pool is None and self.comm is not None:  # no executor was made: the stop only
                    self.pool = _Client(self.comm, 0)
                if self.pool is not None:
                    self.pool.close()
            elif self.comm is not None:
                _server.serve(self.comm, 0, self.workers)
                self.workers.Free()
                self.comm.Free()
        finally:
            _shared["ctx"] = None
        return False
