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
"""
from __future__ import annotations

import heapq

from scheduler.allocators import register
from scheduler.allocators.base import Allocator
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
        while j > k:  # buddy rule: keep the lower half, free the upper half (its buddy)
            j -= 1
            lists[j].add(base | (1 << j))
        return (Subcube(n, (1 << k) - 1, base),)

    def _release(self, pieces):
        lists = self._lists
        for piece in pieces:
            k, base = piece.dim, piece.base
            while k < self.n and lists[k].discard(base ^ (1 << k)):
                base &= ~(1 << k)
                k += 1
            lists[k].add(base)

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
