"""``static``: static partitioning (lazy-scheduling journal paper, section 3.1; conference
paper 3.1).

"Static partitioning scheme divides an n-cube system into one (n-1)-cube, one (n-2)-cube,
..., one 1-cube, and two 0-cubes. Let S_i denote the partition which accommodates jobs of
cube size i, for 0 <= i <= n-1. There is a queue Q_i associated with each S_i." Each queue
is FCFS; Static_Request(I_k) allocates S_k when Q_k is empty, else enqueues; Static_Release
hands S_k to the head of Q_k.

Readings:

* **Placement of the partitions**: the buddy decomposition of the n-cube, largest partition
  at the lowest addresses: S_{n-1} = 0*...*, S_{n-2} = 10*...*, ..., S_1 = 1...10*, and the
  two 0-cubes 1...10 and 1...11. Which subcube is which does not change any result.
* **The two 0-cubes both serve Q_0** (S_0 has two servers). The text names n partitions
  S_0..S_{n-1} but n+1 pieces; giving the spare node to Q_0 rather than leaving it idle for
  ever is the only use the partition list allows.
* "If Q_k is empty, then allocate S_k" is read as "if Q_k is empty *and S_k is free*":
  a partition runs one job at a time (two for S_0), otherwise the job joins Q_k.
* **No partition for n-cubes**: the paper's workloads ask for 0..n-1 cubes only. A request
  for the whole machine can never be served, so it is refused at arrival with
  RequestTooLarge, like any request that can never fit. A processor count or a submesh
  request is rounded up to a cube first (class = ``topology.size_class``).
* **Allocation bookkeeping**: placement is decided once, at start-up, so the allocator
  passed in is never asked where to put a job, and size reduction is refused with a
  DisciplineError (a folded job would take the partition of another queue). The discipline replaces ``self.allocator``
  with a private allocator, :class:`StaticPartitions`, that owns the fixed partitions and
  hands out only the free piece of the request's class; the allocator given is kept as
  ``placement_allocator``. Allocations are ordinary :class:`Allocation` objects (their
  ``nodes`` are addresses of the whole machine), and ``self.allocator.free_nodes()`` / ``used``
  report the machine as the partitions see it. Under the live daemon the allocator comes
  wrapped in a quarantine (nodes that are down); a partition holding a down node is not
  given out, and ``tick`` (which the daemon calls when a node comes back) retries every
  queue.
* Only hypercubes of dimension >= 1 make sense (the scheme is defined on an n-cube, and a
  0-cube has no partition); anything else is refused with a DisciplineError.
"""
from __future__ import annotations

from collections import deque

from scheduler.allocators.base import Allocator
from scheduler.disciplines import register
from scheduler.disciplines.base import Discipline, DisciplineError, remove_job
from scheduler.quarantine import Quarantine
from scheduler.topology import RequestTooLarge, Subcube


class StaticPartitions(Allocator):
    """The fixed partitions S_0..S_{n-1} of an n-cube as an allocator: a k-cube request gets
    the free piece of S_k or nothing. Not registered: it is the static discipline's own."""

    kinds = ("hypercube",)
    complete_recognition = False

    def __init__(self, topology, quarantine=None, **options):
        super().__init__(topology, **options)
        self.quarantine = quarantine  # an object whose ``down`` set holds nodes not to use
        n = self.n = topology.n
        if n < 1:
            raise DisciplineError(f"static partitioning needs an n-cube with n >= 1, not {topology}")
        self.partitions: list[list[Subcube]] = []
        base = 0
        for k in range(n - 1, -1, -1):  # S_{n-1} lowest, then each next one above it
            self.partitions.append([Subcube(n, (1 << k) - 1, base)])
            base |= 1 << k
        self.partitions.reverse()
        self.partitions[0].append(Subcube(n, 0, base))  # the second 0-cube: all ones
        self._free = [list(p) for p in self.partitions]

    def normalize(self, request):
        req = self.topology.normalize(request)
        if req.k >= self.n:
            raise RequestTooLarge(
                f"request {request} needs the whole {self.n}-cube; static partitioning has "
                f"partitions for 0..{self.n - 1}-cubes only")
        return req

    def _allocate(self, request):
        free = self._free[request.k]
        if not free:
            return None
        down = self.quarantine.down if self.quarantine is not None else None
        if not down:
            return (free.pop(0),)
        for i, p in enumerate(free):  # the live daemon: never a partition with a down node
            if down.isdisjoint(p.nodes()):
                return (free.pop(i),)
        return None

    def _release(self, pieces):
        for p in pieces:
            free = self._free[p.dim]
            free.append(p)
            free.sort(key=lambda s: s.base)

    def unavailable(self, request) -> bool:
        """Every partition of the request's size has a down node (the daemon's quarantine):
        the job cannot start until one comes back (scheduler.disciplines.base holds it)."""
        down = self.quarantine.down if self.quarantine is not None else None
        if not down:
            return False
        k = self.normalize(request).k
        return all(not down.isdisjoint(p.nodes()) for p in self.partitions[k])

    def free_nodes(self) -> frozenset:
        return frozenset(x for free in self._free for p in free for x in p.nodes())


@register("static")
class Static(Discipline):
    """Fixed partitions S_0..S_{n-1} (one (n-1)-cube ... one 1-cube, two 0-cubes), one FCFS queue each."""

    kinds = ("hypercube",)

    def __init__(self, topology, allocator, **params):
        super().__init__(topology, allocator, **params)
        quarantine, inner = None, allocator
        while not isinstance(inner, Allocator):
            if isinstance(inner, Quarantine):
                quarantine, inner = inner, inner.inner
                continue
            # A size-reduction wrapper: folding a job into a smaller partition would take
            # the server of another queue, which static partitioning does not allow.
            raise DisciplineError(
                f"static partitioning fixes placement once and cannot fold jobs; "
                f"use it without size reduction (got {allocator!r})")
        self.placement_allocator = allocator
        self.allocator = StaticPartitions(topology, quarantine)
        self.queues = [deque() for _ in range(topology.n)]
        self._class_of: dict = {}
        self._dirty: set = set()
        self._seq = 0  # arrival order, to report simultaneous starts in that order

    def _enqueue(self, job, now):
        k = self._size_class(job.request)
        self._seq += 1
        self.queues[k].append((self._seq, job))
        self._class_of[job.id] = k
        self._dirty.add(k)

    def _dequeue(self, job_id):
        remove_job(self.queues[self._class_of.pop(job_id)], job_id, paired=True)

    def tick(self, now):
        # A node the daemon's quarantine brought back may free a partition for any queue.
        self._dirty.update(range(len(self.queues)))
        return super().tick(now)

    def _on_release(self, start, now):
        self._dirty.add(start.allocation.piece.dim)
        return []

    def _schedule(self, now):
        # Only a queue that gained a job or whose partition was freed can start anything.
        started = []
        for k in self._dirty:
            q = self.queues[k]
            while q:
                seq, job = q[0]
                s = self._try_start(job, now)
                if s is None:
                    break
                q.popleft()
                del self._class_of[job.id]
                started.append((seq, s))
        self._dirty.clear()
        if len(started) > 1:
            started.sort(key=lambda e: e[0])
        return [s for _, s in started]

    def waiting(self):
        return [j for _, j in sorted(e for q in self.queues for e in q)]

    def snapshot(self):
        busy = {}
        for jid, s in self.running.items():
            busy[str(s.allocation.piece)] = jid
        return {
            "discipline": self.name,
            "queues": [
                {"name": f"Q_{k}", "class": k, "jobs": [j.id for _, j in q],
                 "partition": [str(p) for p in self.allocator.partitions[k]],
                 "running": [busy.get(str(p)) for p in self.allocator.partitions[k]]}
                for k, q in enumerate(self.queues)
            ],
            "running": sorted(self.running, key=str),
        }


__all__ = ["Static", "StaticPartitions"]
