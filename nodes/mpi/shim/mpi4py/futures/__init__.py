"""mpi4py.futures on mcemu's MPI: ``MPIPoolExecutor`` and ``MPICommExecutor`` over static pools
of ranks, with the standard library's Future, ``wait`` and ``as_completed``.

- ``python -m mpi4py.futures prog.py ARGS`` (also ``-m mod``, ``-c cmd``): rank 0 of
  COMM_WORLD runs the program as ``__main__``; every other rank is a worker of the pool its
  executors share (it imports the program as ``__worker__``, so the functions it defines can
  be sent by name). ``MPIPoolExecutor()`` anywhere else would need ``MPI.COMM_SELF.Spawn``,
  which mcemu does not offer: its first use raises NotImplementedError saying so.
- ``MPICommExecutor(comm, root)``: every rank of ``comm`` enters it; the root gets an executor
  over the others, which serve until it shuts down, and get None.

No management thread: mcemu's MPI is single-threaded (``MPI.Query_thread()`` is
THREAD_SINGLE), so the thread that uses an executor drives its workers whenever it calls in:
``submit`` sends a task to an idle worker at once, and ``result``, ``exception``, ``wait``,
``as_completed``, ``map``'s iterator and ``shutdown(wait=True)`` progress (hand out queued
tasks, take in results) until what they wait for is done. While the root computes between such
calls, a worker that is done waits for its next task. The pool's traffic is point-to-point
messages on a ``Dup`` of the communicator: timed by the network model, counted in the job's
statistics, never matched by the program's own receives. (``futures._core`` has the details.)
"""
from concurrent.futures import (ALL_COMPLETED, FIRST_COMPLETED, FIRST_EXCEPTION, BrokenExecutor,  # noqa: F401
                                CancelledError, Executor, InvalidStateError, TimeoutError, as_completed, wait)

from mpi4py.futures._core import Future
from mpi4py.futures.pool import (MPICommExecutor, MPIPoolExecutor, ProcessPoolExecutor, ThreadPoolExecutor,
                                 get_comm_workers)

__all__ = ["Future", "Executor", "wait", "FIRST_COMPLETED", "FIRST_EXCEPTION", "ALL_COMPLETED", "as_completed",
           "CancelledError", "TimeoutError", "InvalidStateError", "BrokenExecutor", "MPIPoolExecutor",
           "MPICommExecutor", "ThreadPoolExecutor", "ProcessPoolExecutor", "get_comm_workers"]
