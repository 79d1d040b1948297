"""MPIPoolExecutor and MPICommExecutor, as mpi4py 4.1's futures/pool.py (Lisandro Dalcin;
BSD-2-Clause, its text in ../LICENSE-mpi4py.rst) defines them: the same arguments, results,
errors and map iterator (ported), over the pools of ._core, which the calling thread drives
(mcemu's MPI is single-threaded).

Only the static pools exist: the one ``python -m mpi4py.futures`` makes of COMM_WORLD's ranks
other than 0, and MPICommExecutor's. An MPIPoolExecutor outside them would start its workers
with ``MPI.COMM_SELF.Spawn``, which mcemu does not offer: its first use says so.
"""
from __future__ import annotations

import collections
import functools
import itertools
import sys
import time
import weakref
from concurrent.futures import BrokenExecutor, Executor, as_completed

from mpi4py import MPI
from mpi4py.futures import _core, _server
from mpi4py.futures._core import Future

SPAWN = ("mpi4py's MPIPoolExecutor outside `python -m mpi4py.futures` starts its workers with "
         "MPI.COMM_SELF.Spawn (dynamic process management), which mcemu does not offer: run the program "
         "with `python -m mpi4py.futures prog.py` (in a job: `mcemu run -n N python -m mpi4py.futures "
         "prog.py`; rank 0 runs it, the other ranks are its workers), or use MPICommExecutor(comm, root)")


class MPIPoolExecutor(Executor):
    """MPI-based asynchronous executor (its tasks run on the pool's worker ranks)."""

    Future = Future

    def __init__(self, max_workers=None, initializer=None, initargs=(), **kwargs):
        if max_workers is not None:
            max_workers = int(max_workers)
            if max_workers <= 0:
                raise ValueError("max_workers must be greater than 0")
            kwargs["max_workers"] = max_workers
        if initializer is not None:
            if not callable(initializer):
                raise TypeError("initializer must be a callable")
            kwargs["initializer"] = initializer
            kwargs["initargs"] = tuple(initargs)
        self._options = kwargs
        self._shutdown = False
        self._broken = None
        self._pool = None
        self._owned = False  # its own pool (MPICommExecutor's, a thread pool): closed at shutdown
        self._booted = False

    def _make_pool(self):
        """(pool, owned): the shared pool of python -m mpi4py.futures; nothing else is offered."""
        ctx = _core.shared()
        if ctx is None:
            raise NotImplementedError(SPAWN)
        return ctx.client(self._options), False

    def _bootstrap(self) -> None:
        if self._booted:
            return
        if self._pool is None:
            self._pool, self._owned = self._make_pool()
        self._booted = True
        opts = self._options
        init = opts.get("initializer")
        if init is not None:
            ok = self._pool.to_all(_server.initialize, init, opts.get("initargs", ()), opts.get("initkwargs"))
            if not all(ok):
                self._broken = "initializer failed"

    @property
    def _max_workers(self):
        return self.num_workers

    @property
    def num_workers(self):
        """Number of worker processes."""
        if self._broken or self._shutdown:
            return 0
        self._bootstrap()
        return self._pool.size

    def bootup(self, wait=True):
        """Allocate executor resources eagerly."""
        if self._shutdown:
            raise RuntimeError("cannot bootup after shutdown")
        self._bootstrap()
        return self

    def submit(self, fn, /, *args, **kwargs):
        """Schedule ``fn(*args, **kwargs)``; a Future of its result."""
        if self._broken:
            raise BrokenExecutor(self._broken)
        if self._shutdown:
            raise RuntimeError("cannot submit after shutdown")
        self._bootstrap()
        future = self.Future()
        if self._broken:  # its initializer failed on a worker just now: mpi4py fails what was queued
            future.set_running_or_notify_cancel()
            future.set_exception(BrokenExecutor(self._broken))
        else:
            self._pool.push(self, future, (fn, args, kwargs))
        return future

    def map(self, fn, *iterables, timeout=None, chunksize=1, buffersize=None, unordered=False):
        """An iterator equivalent to ``map(fn, *iterables)``, its calls run by the workers."""
        return self.starmap(fn, zip(*iterables), timeout, chunksize, buffersize, unordered)

    def starmap(self, fn, iterable, timeout=None, chunksize=1, buffersize=None, unordered=False):
        """An iterator equivalent to ``itertools.starmap(fn, iterable)``."""
        if chunksize < 1:
            raise ValueError("chunksize must be >= 1.")
        if buffersize is not None:
            if not isinstance(buffersize, int):
                raise TypeError("buffersize must be an integer or None")
            if buffersize < 1:
                raise ValueError("buffersize must be None or > 0")
            if unordered:
                raise ValueError("buffersize must be None if unordered")
        if chunksize == 1:
            return _starmap_helper(self, fn, iterable, timeout, buffersize, unordered)
        return _starmap_chunks(self, fn, iterable, timeout, chunksize, buffersize, unordered)

    def shutdown(self, wait=True, *, cancel_futures=False):
        """No more submissions; ``cancel_futures``: cancel the tasks not yet started; ``wait``:
        return when the others are done (without it they go on whenever this rank waits)."""
        self._shutdown = True
        if cancel_futures and self._pool is not None:
            self._pool.cancel(self)
        if wait and self._pool is not None:
            pool, self._pool = self._pool, None
            if self._owned:
                pool.close()
            else:
                _core.progress_until(lambda: not pool.owes(self))


def _starmap_helper(executor, function, iterable, timeout, buffersize, unordered):
    end_time = sys.float_info.max if timeout is None else timeout + time.monotonic()
    if buffersize is not None:
        fs = collections.deque(executor.submit(function, *args) for args in itertools.islice(iterable, buffersize))
        unordered = False
    else:
        fs = collections.deque(executor.submit(function, *args) for args in iterable)
        if unordered:
            fs = set(fs)
    executor_weakref = weakref.ref(executor)
    del executor

    def resolve(future, timeout=None):
        try:
            return future.result(timeout)
        finally:
            future.cancel()

    def result_iterator():
        try:
            if unordered:
                for future in as_completed(fs, None if timeout is None else end_time - time.monotonic()):
                    fs.remove(future)
                    yield resolve(future)
            else:
                fs.reverse()
                while fs:
                    result = resolve(fs.pop(), None if timeout is None else end_time - time.monotonic())
                    if buffersize is not None and (ex := executor_weakref()) and (args := next(iterable, None)):
                        fs.appendleft(ex.submit(function, *args))
                    yield result
        finally:
            while fs:
                fs.pop().cancel()

    return result_iterator()


def _apply_chunks(function, chunk):
    return list(itertools.starmap(function, chunk))


def _build_chunks(iterable, chunksize):
    iterable = iter(iterable)
    while chunk := tuple(itertools.islice(iterable, chunksize)):
        yield (chunk,)


def _chain_from_iterable_of_lists(iterable):
    for item in iterable:
        item.reverse()
        while item:
            yield item.pop()


def _starmap_chunks(executor, function, iterable, timeout, chunksize, buffersize, unordered):
    function = functools.partial(_apply_chunks, function)
    result = _starmap_helper(executor, function, _build_chunks(iterable, chunksize), timeout, buffersize, unordered)
    return _chain_from_iterable_of_lists(result)


class MPICommExecutor:
    """``with MPICommExecutor(comm, root) as executor``: on ``root`` an MPIPoolExecutor whose
    workers are the other ranks of ``comm``; elsewhere None, after serving its tasks until the
    root's executor shut down (an exception in the body is then swallowed, as mpi4py does)."""

    def __init__(self, comm=None, root=0, **kwargs):
        if comm is None:
            comm = MPI.COMM_WORLD
        if comm.Is_inter():
            raise ValueError("expecting an intracommunicator")
        if root < 0 or root >= comm.Get_size():
            raise ValueError("expecting root in range(comm.size)")
        if _core.shared() is not None:
            comm = MPI.COMM_WORLD
            root = comm.Get_rank()
        self._comm, self._root, self._options = comm, root, kwargs
        self._executor = None

    def __enter__(self):
        if self._executor is not None:
            raise RuntimeError("__enter__")
        comm, root = self._comm, self._root
        if comm.Get_rank() != root:
            pool, workers = _core.split(comm, root)
            _server.serve(pool, root, workers)
            workers.Free()
            pool.Free()
            return None
        executor = self._executor = MPIPoolExecutor(**self._options)
        if _core.shared() is None:
            if comm.Get_size() == 1:
                executor._pool = _core._Local()
            else:
                executor._pool = _core._Client(_core.split(comm, root)[0], root)
            executor._owned = True
        return executor

    def __exit__(self, *args):
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)
            return False
        return True


class ThreadPoolExecutor(MPIPoolExecutor):
    """mpi4py's executor over a pool of threads: here the tasks run in the calling thread, each
    when it next waits (mcemu's MPI is single-threaded)."""

    def _make_pool(self):
        return _core._Local(self._options.get("max_workers", 1)), True


class ProcessPoolExecutor(MPIPoolExecutor):
    """mpi4py's executor over spawned processes: not offered (MPI.COMM_SELF.Spawn)."""

    def _make_pool(self):
        raise NotImplementedError(SPAWN)


def get_comm_workers():
    """The intracommunicator of the worker ranks, inside a task."""
    return _server.get_comm_workers()
