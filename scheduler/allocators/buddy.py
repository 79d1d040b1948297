"""``buddy``: the buddy strategy on the O(n) free-list structure.

Lazy-scheduling paper (journal), section 3.2 "Buddy Strategy" (structure of its ref. [11]);
section 2.1 describes the same policy on 2^n allocation bits (``buddy-bitmap``).

Lists F_0 .. F_n hold the free *buddy* subcubes: a k-cube here is aligned, its low k address
bits are free (mask 2^k - 1) and its base is a multiple of 2^k. Initially only F_n is
non-empty and holds the whole n-cube.

Buddy_Request(I_k): take a cube from F_k; else search F_{k+1}, ..., F_n in order for the
first non-empty list, decompose its cube by the buddy rule until a k-cube is obtained (each
halving keeps the lower half and puts the upper half, its buddy, into the list below) and
allocate that k-cube. Buddy_Release(I_k): insert the cube into F_k; while F_k holds its
buddy (base XOR 2^k), remove both and insert the merged cube into F_{k+1}.

Readings (the text does not say which cube of a list is taken):

* The cube with the **lowest base address** is taken from a list, and a decomposition keeps
  the lower half (the upper halves go to the lists). Step 1 takes from F_k before any
  larger cube is split, so a request may be placed above a lower free block of a larger
  cube; ``buddy-bitmap`` (least m over 2^n bits) would take the lower one. The two
  recognize exactly the same requests (a free aligned k-cube exists), which the tests
  check, but may place them differently.
* Each F_k is a set (O(1) membership for the buddy test) plus a min-heap with lazy
  deletion (O(log) lowest-address lookup). Entries removed by a merge stay in the heap
  until they surface or the heap is compacted, so allocation and release are
  O(n log(free cubes)) amortized and never scan the machine.

Speed (issue 18; the same cubes, in the same order): one integer has bit k set while F_k
is not empty, so a request finds its list (the lowest non-empty F_j, j >= k) or fails with a
shift instead of a scan of the lists; the Subcube of an aligned cube (and its 1-tuple of
pieces) is made once per (k, base) and reused (pieces are immutable values); ``allocate``
and ``release`` do the base class's bookkeeping (normalized request, serial, live
allocations, used nodes) in the same order without its extra calls. A subclass that
overrides ``_allocate``, ``_release`` or ``normalize`` gets the base class's path.
"""
from __future__ import annotations

import heapq

from scheduler.allocators import register
from scheduler.allocators.base import Allocation, AllocationError, Allocator
from scheduler.topology import Request, Subcube


class _Level:
    """One free list F_k: the bases of the free aligned k-cubes."""

    __slots__ = ("members", "heap")

    def __init__(self):
        self.members: set[int] = set()
        self.heap: list[int] = []

    def add(self, base: int) -> None:
        self.members.add(base)
        heapq.heappush(self.heap, base)

    def discard(self, base: int) -> bool:
        if base in self.members:
            self.members.remove(base)
            # Stale heap entries are dropped lazily; compact when they dominate so the heap
            # stays O(live entries).
            if len(self.heap) > 2 * len(self.members) + 16:
                self.heap = sorted(self.members)
            return True
        return False

    def pop_lowest(self) -> int:
        heap, members = self.heap, self.members
        while True:
            base = heapq.heappop(heap)
            if base in members:
                members.remove(base)
                return base

    def __bool__(self) -> bool:
        return bool(self.members)

    def __len__(self) -> int:
        return len(self.members)


@register("buddy")
class Buddy(Allocator):
    """Buddy strategy with free lists F_0..F_n (lazy paper 3.2): O(n) allocate/release."""

    kinds = ("hypercube",)
    complete_recognition = False

    def __init__(self, topology, **options):
        super().__init__(topology, **options)
        self.n = topology.n
        self._lists = [_Level() for _ in range(self.n + 1)]
        self._lists[self.n].add(0)
        self._nonempty = 1 << self.n  # bit k set iff F_k is not empty
        self._pieces: dict = {}  # (base << 6) | k -> (Subcube,) of that aligned k-cube
        cls = type(self)
        if (cls._allocate is Buddy._allocate and cls._release is Buddy._release
                and cls.normalize is Allocator.normalize and cls.allocate is Allocator.allocate
                and cls.release is Allocator.release):
            self.allocate, self.release = self._fast_allocate, self._fast_release

    def _fast_allocate(self, request: Request):
        """Allocator.allocate with Buddy._allocate inlined (the same result, serial and
        bookkeeping)."""
        req = self._normalized.get(request)
        if req is None:
            req = self._normalized[request] = self.normalize(request)
        k = req.a
        m = self._nonempty >> k
        if not m:
            return None
        j = k + (m & -m).bit_length() - 1  # the lowest non-empty list F_j, j >= k
        lists = self._lists
        level = lists[j]
        heap, members = level.heap, level.members
        while True:  # _Level.pop_lowest
            base = heapq.heappop(heap)
            if base in members:
                members.remove(base)
                break
        if not members:
            self._nonempty &= ~(1 << j)
        while j > k:  # buddy rule: keep the lower half, free the upper half (its buddy)
            j -= 1
            level = lists[j]
            b = base | (1 << j)
            level.members.add(b)
            heapq.heappush(level.heap, b)
            self._nonempty |= 1 << j
        key = (base << 6) | k
        pieces = self._pieces.get(key)
        if pieces is None:
            pieces = self._pieces[key] = (Subcube(self.n, (1 << k) - 1, base),)
        a = Allocation(pieces, req, 1 << k, self, next(self._serials))
        self._live[a.serial] = a
        self.used += 1 << k
        return a

    def _fast_release(self, allocation) -> None:
        """Allocator.release with Buddy._release inlined (the same checks, errors and merges)."""
        if not isinstance(allocation, Allocation) or allocation.owner is not self:
            raise AllocationError(f"{allocation!r} was not made by this {self.name} allocator")
        serial = allocation.serial
        if self._live.get(serial) is None:
            raise AllocationError(f"{allocation!r} is not allocated (released twice?)")
        lists, n = self._lists, self.n
        for piece in allocation.pieces:
            k, base = piece.mask.bit_count(), piece.base
            while k < n:
                level = lists[k]
                members = level.members
                b = base ^ (1 << k)
                if b not in members:  # _Level.discard, inlined
                    break
                members.remove(b)
                if len(level.heap) > 2 * len(members) + 16:
                    level.heap = sorted(members)
                if not members:
                    self._nonempty &= ~(1 << k)
                base &= ~(1 << k)
                k += 1
            level = lists[k]
            level.members.add(base)  # _Level.add
            heapq.heappush(level.heap, base)
            self._nonempty |= 1 << k
        del self._live[serial]
        self.used -= allocation.size

    # ------------------------------------------------------------------ policy

    def _allocate(self, request: Request):
        k = request.a  # the dimension: normalize made it a cube request
        lists, n = self._lists, self.n
        j = k
        while j <= n and not lists[j].members:
            j += 1
        if j > n:
            return None
        base = lists[j].pop_lowest()
        if not lists[j].members:
            self._nonempty &= ~(1 << j)
        while j > k:  # buddy rule: keep the lower half, free the upper half (its buddy)
            j -= 1
            lists[j].add(base | (1 << j))
            self._nonempty |= 1 << j
        return (Subcube(n, (1 << k) - 1, base),)

    def _release(self, pieces):
        lists = self._lists
        for piece in pieces:
            k, base = piece.dim, piece.base
            while k < self.n and lists[k].discard(base ^ (1 << k)):
                if not lists[k].members:
                    self._nonempty &= ~(1 << k)
                base &= ~(1 << k)
                k += 1
            lists[k].add(base)
            self._nonempty |= 1 << k

    # ------------------------------------------------------------------ views

    def free_lists(self) -> list[list[Subcube]]:
        """F_0..F_n as subcubes, each list sorted by base address (for tests and monitors)."""
        return [[Subcube(self.n, (1 << k) - 1, b) for b in sorted(level.members)]
                for k, level in enumerate(self._lists)]

    def free_nodes(self) -> frozenset:
        return frozenset(b + i for k, level in enumerate(self._lists)
                         for b in level.members for i in range(1 << k))

    def largest_free(self) -> int:
        """The dimension of the largest free buddy cube, -1 when the machine is full."""
        for k in range(self.n, -1, -1):
            if self._lists[k]:
                return k
        return -1
