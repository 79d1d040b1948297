"""mpi4py.util.pool: ``multiprocessing.pool``'s interface over mpi4py.futures, ported from mpi4py
4.1 (util/pool.py, Lisandro Dalcin; BSD-2-Clause, its text in ../LICENSE-mpi4py.rst). ``Pool``
is an MPIPoolExecutor, so it needs what that needs (``python -m mpi4py.futures``). One change
for mcemu's single-threaded MPI: an AsyncResult's ``wait``, ``get`` and ``ready`` progress the
pool from the calling thread (mpi4py.futures' docstring), and ``map_async``'s list is gathered
when the caller next waits."""
import functools
import operator
import warnings
import weakref

from mpi4py import futures
from mpi4py.futures._core import progress_until

__all__ = ["Pool", "ThreadPool", "AsyncResult", "ApplyResult", "MapResult"]


class Pool:
    """Pool using MPI processes as workers."""

    Executor = futures.MPIPoolExecutor

    def __init__(self, processes=None, initializer=None, initargs=(), **kwargs):
        if processes is not None and processes < 1:
            raise ValueError("number of processes must be at least 1")
        if initializer is not None and not callable(initializer):
            raise TypeError("initializer must be a callable")
        for name in ("maxtasksperchild", "context"):
            if kwargs.pop(name, None) is not None:
                warnings.warn(f"argument {name!r} is not supported", stacklevel=2)
        self.executor = self.Executor(processes, initializer=initializer, initargs=initargs, **kwargs)

    def apply(self, func, args=(), kwds={}):  # noqa: B006  (multiprocessing's signature)
        return self.executor.submit(func, *args, **kwds).result()

    def apply_async(self, func, args=(), kwds={}, callback=None, error_callback=None):  # noqa: B006
        return ApplyResult(self.executor.submit(func, *args, **kwds), callback, error_callback)

    def map(self, func, iterable, chunksize=None):
        iterable, chunksize = _chunksize(self, iterable, chunksize)
        return list(self.imap(func, iterable, chunksize=chunksize))

    def map_async(self, func, iterable, chunksize=None, callback=None, error_callback=None):
        iterable, chunksize = _chunksize(self, iterable, chunksize)
        result_iterator = self.imap(func, iterable, chunksize=chunksize)
        return MapResult(_async_executor(self).submit(list, result_iterator), callback, error_callback)

    def imap(self, func, iterable, chunksize=1):
        return self.executor.map(func, iterable, chunksize=chunksize)

    def imap_unordered(self, func, iterable, chunksize=1):
        return self.executor.map(func, iterable, chunksize=chunksize, unordered=True)

    def starmap(self, func, iterable, chunksize=None):
        iterable, chunksize = _chunksize(self, iterable, chunksize)
        return list(self.istarmap(func, iterable, chunksize=chunksize))

    def starmap_async(self, func, iterable, chunksize=None, callback=None, error_callback=None):
        iterable, chunksize = _chunksize(self, iterable, chunksize)
        result_iterator = self.istarmap(func, iterable, chunksize=chunksize)
        return MapResult(_async_executor(self).submit(list, result_iterator), callback, error_callback)

    def istarmap(self, func, iterable, chunksize=1):
        return self.executor.starmap(func, iterable, chunksize=chunksize)

    def istarmap_unordered(self, func, iterable, chunksize=1):
        return self.executor.starmap(func, iterable, chunksize=chunksize, unordered=True)

    def close(self):
        """Prevent any more tasks from being submitted to the pool."""
        self.executor.shutdown(wait=False)

    def terminate(self):
        """Stop the worker processes without completing pending tasks."""
        self.executor.shutdown(wait=False, cancel_futures=True)

    def join(self):
        """Wait for the worker processes to exit."""
        self.executor.shutdown(wait=True)
        _async_executor_shutdown(self)

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.close()


class ThreadPool(Pool):
    """Pool using threads as workers (here: the calling thread, when it waits)."""

    Executor = futures.ThreadPoolExecutor


class AsyncResult:
    """Asynchronous result."""

    def __init__(self, future, callback=None, error_callback=None):
        self.future = future
        self._done = False
        self.future.add_done_callback(functools.partial(_async_future_callback, result=self, callback=callback,
                                                        error_callback=error_callback))

    def get(self, timeout=None):
        self.wait(timeout)
        if not self.ready():
            raise TimeoutError
        try:
            return self.future.result()
        except futures.CancelledError:
            raise TimeoutError from None

    def wait(self, timeout=None):
        progress_until(lambda: self._done, timeout)

    def ready(self):
        progress_until(lambda: self._done, 0)
        return self._done

    def successful(self):
        if not self.ready():
            raise ValueError(f"{self!r} not ready")
        try:
            return self.future.exception() is None
        except futures.CancelledError:
            return False


class ApplyResult(AsyncResult):
    """Result type of apply_async()."""


class MapResult(AsyncResult):
    """Result type of map_async() and starmap_async()."""


def _chunksize(pool, iterable, chunksize):
    if chunksize is None:
        chunksize = 1
        num_workers = getattr(pool.executor, "_max_workers", 0)
        if num_workers > 0:
            num_tasks = operator.length_hint(iterable)
            if num_tasks == 0:
                iterable = list(iterable)
                num_tasks = len(iterable)
            if num_tasks > 0:
                quot, rem = divmod(num_tasks, num_workers * 4)
                chunksize = quot + bool(rem)
    return iterable, chunksize


def _async_future_callback(future, result, callback, error_callback):
    try:
        exception = future.exception()
    except futures.CancelledError:
        exception = TimeoutError()
    try:
        if exception is not None:
            if error_callback is not None:
                error_callback(exception)
        elif callback is not None:
            callback(future.result())
    finally:
        result._done = True


_async_executors = weakref.WeakKeyDictionary()


def _async_executor(pool):
    if pool not in _async_executors:
        _async_executors[pool] = futures.ThreadPoolExecutor(1)
    return _async_executors[pool]


def _async_executor_shutdown(pool, wait=True):
    executor = _async_executors.pop(pool, None)
    if executor is not None:
        executor.shutdown(wait=wait)
