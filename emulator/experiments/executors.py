"""Where the runner's replications run: in this process, on a local process pool, or on a Dask
cluster. Each is the same small interface, so the runner (``runner.replicate``) has one loop:

    ex.submit(fn, *args) -> handle      ex.wait(handles) -> the handles now finished
    ex.submit_all(fn, [args, ...]) -> handles   (optional) several at once
    ex.outcome(handle)   -> fn's value (or its exception raised)
    ex.lost(exc)         -> whether the run was lost with its worker (submit it again)
    ex.close(cancel)     ex.workers (how many run at once, for the progress line)
    ex.describe()        one line for the report
    ex.prepare(fn, *args) (optional) ready the workers for tasks fn(*args) before the first
    ex.batch_s           the seconds of runs one task should carry (0: one run per task)

A task costs the pool or the cluster a few milliseconds whatever it does (submitting, the
scheduler's bookkeeping, results coming back); many short runs would spend as long in that as in
the simulation. So the runner hands an executor batches of runs (:class:`Batcher`): as many runs as
fill about ``batch_s`` seconds by the run times seen so far, fewer towards the end of the queue so
that every worker still gets a share.

:func:`make_executor` picks one from ``--jobs`` and ``--dask``. Dask (``dask[distributed]``,
the optional extra ``mcemu[dask]``) is imported only when ``--dask`` is given. ``--dask
tcp://HOST:PORT`` (or any address a Dask client takes) connects to a running scheduler --
``dask scheduler`` + ``dask worker``, or one started by dask-jobqueue on Slurm, or on
Kubernetes; ``--dask local:N`` starts a local cluster of N one-thread worker processes for the
run. A worker that dies mid-run costs only the replications it held: the Dask scheduler gives
them to another worker, and a replication that still comes back lost (``KilledWorker``) is
submitted again by the runner (up to :data:`RESUBMITS` times).
"""
from __future__ import annotations

import importlib
import logging
import math
import os
import socket
from collections import deque
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

from emulator.experiments.experiment import ReproduceError

RESUBMITS = 3
POOL_BATCH_S = 0.05  # a process pool's task costs ~0.3 ms: 50 ms of runs make it < 1 %
DASK_BATCH_S = 0.5  # a Dask task costs several ms: 0.5 s makes it ~1 %, and a lost worker costs little
MAX_BATCH = 1000  # runs in one task, whatever their estimate (a bound on a lost task's cost)
DASK_HINT = "--dask needs Dask: pip install 'mcemu[dask]' (or: pip install 'dask[distributed]')"


class Inline:
    """One replication at a time in this process (``--jobs 1``): each is run when the runner
    waits for it, so every finished one is logged before the next starts."""

    workers = 1
    batch_s = 0.0  # each run logged as it ends: nothing to amortize in-process

    class _Run:
        __slots__ = ("fn", "args", "value", "error")

        def __init__(self, fn, args):
            self.fn, self.args, self.value, self.error = fn, args, None, None

    def submit(self, fn, *args):
        return self._Run(fn, args)

    def wait(self, handles):
        h = next(iter(handles))
        try:
            h.value = h.fn(*h.args)
        except Exception as e:  # noqa: BLE001 - raised again by outcome()
            h.error = e
        return [h]

    def outcome(self, h):
        if h.error is not None:
            raise h.error
        return h.value

    def lost(self, exc) -> bool:
        return False

    def close(self, cancel: bool = False) -> None:
        pass

    def describe(self) -> str:
        return "one process"


class LocalPool:
    """A local process pool of ``workers`` processes."""

    batch_s = POOL_BATCH_S

    def __init__(self, workers: int):
        self.workers = workers
        self.pool = ProcessPoolExecutor(max_workers=workers)

    def submit(self, fn, *args):
        return self.pool.submit(fn, *args)

    def wait(self, handles):
        return wait(handles, return_when=FIRST_COMPLETED)[0]

    def outcome(self, h):
        return h.result()

    def lost(self, exc) -> bool:
        return False

    def close(self, cancel: bool = False) -> None:
        self.pool.shutdown(wait=not cancel, cancel_futures=cancel)

    def describe(self) -> str:
        return f"a local process pool of {self.workers} workers"


class DaskPool:
    """A Dask cluster: ``address`` is a scheduler address or ``local:N``."""

    batch_s = DASK_BATCH_S

    def __init__(self, address: str, timeout: float = 10.0):
        try:
            import distributed  # lazy: the optional extra mcemu[dask], only for --dask
        except ImportError:
            raise ReproduceError(DASK_HINT) from None
        self.distributed = distributed
        self.address, self.cluster, self._done = address, None, None
        try:
            if address.startswith("local"):
                n = _local_workers(address)
                self.cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                                        dashboard_address=None, silence_logs=logging.ERROR)
                self.client = distributed.Client(self.cluster, timeout=timeout)
            else:
                self.client = distributed.Client(address, timeout=timeout)
        except (OSError, TimeoutError, ValueError) as e:
            if self.cluster is not None:
                self.cluster.close()
            why = " ".join(str(e).split()) or type(e).__name__
            raise ReproduceError(f"cannot reach the Dask scheduler at {address}: {why}") from None
        found = self.client.scheduler_info().get("workers", {})
        self.workers = max(1, len(found))
        # results fetched from the workers, not relayed by the scheduler: about half a short
        # task's round trip (a worker that cannot be reached is still asked through the scheduler)
        self.client.direct_to_workers = _reachable(list(found)[:4])
        self._warm: set = set()
        self.prepare()

    def prepare(self, fn=None, *args) -> None:
        """Ready every worker for tasks ``fn(*args)``, once per connection: import the runner, the
        simulator and the modules of ``fn`` and of the functions among ``args`` (a worker without
        mcemu is a one-line error before any run; the first tasks do not pay ~0.2 s of imports
        each), then one call of ``fn(*args)`` on each worker (a no-op such as an empty batch: a
        worker's first task of a kind costs it ~0.1-0.3 s more, paid here, before the runs)."""
        mods = ["emulator.experiments._points", "emulator.experiments.runner"]
        mods += [getattr(f, "__module__", None) for f in (fn, *args) if callable(f)]
        try:
            for mod in (m for m in mods if m and m not in self._warm):
                self.client.run(importlib.import_module, mod)
                self._warm.add(mod)
            if fn is not None and fn not in self._warm:
                ws = list(self.client.scheduler_info().get("workers", {}))
                # allow_other_workers: a worker gone meanwhile does not hold the call up
                self.client.gather([self.client.submit(fn, *args, workers=[w], allow_other_workers=True, pure=False)
                                    for w in ws])
                self._warm.add(fn)
        except ImportError as e:
            self.close()
            raise ReproduceError(_worker_import_error(e)) from None

    def submit(self, fn, *args):
        return self.submit_all(fn, [args])[0]

    def submit_all(self, fn, arglists: list) -> list:
        """``submit`` for each of ``arglists``, sent to the scheduler in one message (the client
        batches what it sends in 10 ms: a second task alone would reach its worker up to 10 ms late)."""
        # pure=False: a replication is a task of its own even when its arguments repeat
        fs = self.client.map(fn, *zip(*arglists), pure=False)
        if self._done is None:
            self._done = self.distributed.as_completed(fs)
        else:
            self._done.update(fs)
        return fs

    def wait(self, handles):
        # as_completed, not distributed.wait over every pending future: O(1) per finished run
        return self._done.next_batch(block=True)

    def outcome(self, h):
        try:
            return h.result()
        except ImportError as e:
            raise ReproduceError(_worker_import_error(e)) from None

    def lost(self, exc) -> bool:
        names = {"KilledWorker", "CommClosedError", "FutureCancelledError"}
        return type(exc).__name__ in names

    def close(self, cancel: bool = False) -> None:
        try:
            self.client.close()
        finally:
            if self.cluster is not None:
                self.cluster.close()

    def describe(self) -> str:
        where = f"a local Dask cluster ({self.address})" if self.cluster is not None else f"Dask at {self.address}"
        return f"{where}, {self.workers} workers"


class Batcher:
    """Takes runs from the front of the runner's queue, ``(key, rep)`` pairs, in batches of about
    ``target`` seconds: a run's length is guessed from the runs of its point timed so far (of an
    unseen point, the longest point mean seen: a batch rather too short than too long). Before any
    run is timed, the queue is dealt out at once, one task per worker, each a stride through it
    (every point's replications spread over the workers alike): a short sweep is then a single
    round of tasks, a long one's first tasks stop at their time limit (:attr:`limit`) and hand
    back the runs they did not start. A batch also stays under the queued work's share per worker
    (/ :data:`SPREAD`), so the last batches do not leave a worker idle, down to :data:`FLOOR` of
    the target (smaller ones would cost more in tasks than they save at the end) but never past
    one worker's share."""

    SPREAD = 2
    FLOOR = 0.2

    def __init__(self, target: float, workers: int):
        self.target, self.workers = float(target), max(1, int(workers))
        # not batching: everything out at once, as an executor without batches always did
        self.in_flight = 2 * self.workers if self.target > 0 else math.inf
        # a task stops starting runs past this (its runs' estimate was short, or there was none)
        self.limit = 2 * self.target if self.target > 0 else None
        self._blind = self.workers  # tasks dealt out before any run is timed
        self._sum: dict = {}  # key -> (seconds, runs)
        self._all = [0.0, 0]

    def observe(self, key, seconds: float) -> None:
        t, n = self._sum.get(key, (0.0, 0))
        self._sum[key] = (t + seconds, n + 1)
        self._all[0] += seconds
        self._all[1] += 1

    def estimate(self, key) -> float | None:
        """Seconds of one run of ``key`` (None before any run is timed)."""
        if key in self._sum:
            t, n = self._sum[key]
            return t / n
        return max((t / n for t, n in self._sum.values()), default=None)

    def take(self, queue: deque) -> list:
        """The next batch, popped from ``queue`` (at least one run)."""
        if self.target <= 0:
            return [queue.popleft()]
        est = self.estimate(queue[0][0])
        if est is None:
            return self._deal(queue)
        first = queue.popleft()
        mean = self._all[0] / self._all[1]
        queued = (len(queue) + 1) * mean
        share = queued / (self.workers * self.SPREAD)
        budget = min(self.target, queued / self.workers, max(self.FLOOR * self.target, share))
        batch, used = [first], est
        while queue and len(batch) < MAX_BATCH:
            nxt = self.estimate(queue[0][0])
            if used + nxt > budget * (1 + 1e-9):  # 50 runs of 10 ms fill 0.5 s, rounding aside
                break
            batch.append(queue.popleft())
            used += nxt
        return batch

    def _deal(self, queue: deque) -> list:
        """Nothing timed yet: every ``k``-th run of the queue, k the tasks still to deal (the
        queue is point after point, so each task gets its share of every point); past them, one
        run a task until the first come back timed."""
        if self._blind < 1:
            return [queue.popleft()]
        stride, self._blind = self._blind, self._blind - 1
        runs = list(queue)
        batch = runs[::stride][:MAX_BATCH]
        picked = set(range(0, stride * len(batch), stride))
        queue.clear()
        queue.extend(r for i, r in enumerate(runs) if i not in picked)
        return batch


def _reachable(addresses: list, timeout: float = 1.0) -> bool:
    """Whether this process can open a connection to each of the ``tcp://`` ``addresses``."""
    if not addresses:
        return False
    for a in addresses:
        host, _, port = a.removeprefix("tcp://").rpartition(":")
        if not a.startswith("tcp://") or not port.isdigit():
            return False
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
        except OSError:
            return False
    return True


def _worker_import_error(e: ImportError) -> str:
    return (f"a Dask worker cannot import what the run needs ({e}): install mcemu, and any policy plugin, "
            "on every worker")


def _local_workers(address: str) -> int:
    _, _, n = address.partition(":")
    if not n:
        return os.cpu_count() or 1
    try:
        k = int(n)
    except ValueError:
        k = 0
    if k < 1:
        raise ReproduceError(f"--dask local:N needs N >= 1 workers, got {address!r}")
    return k


def check_dask_address(address: str) -> None:
    """Refuse a malformed ``--dask`` before anything starts."""
    if not address or address.strip() != address:
        raise ReproduceError(f"--dask needs a scheduler address (tcp://HOST:PORT) or local:N, got {address!r}")
    if address.startswith("local"):
        if address != "local" and not address.startswith("local:"):
            raise ReproduceError(f"--dask local:N, got {address!r}")
        _local_workers(address)


def make_executor(jobs: int | None = None, dask: str | None = None, dask_timeout: float = 10.0):
    if dask:
        check_dask_address(dask)
        return DaskPool(dask, dask_timeout)
    n = max(1, int(jobs or os.cpu_count() or 1))
    return Inline() if n == 1 else LocalPool(n)


__all__ = ["Batcher", "DaskPool", "Inline", "LocalPool", "RESUBMITS", "check_dask_address", "make_executor"]
