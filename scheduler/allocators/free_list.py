"""``free-list``: Kim, Das and Lin's free list strategy.

Lazy-scheduling paper (journal), section 2.1 "Free List" (its ref. [9]); section 5 uses it
as the representative of complete-recognition policies (Figure 10). n+1 lists F_0..F_n hold
disjoint free subcubes of every orientation (any k of the n dimensions free, not only the
low k as in buddy). A k-cube request takes a cube from F_k; if F_k is empty, a cube of the
smallest larger dimension is decomposed and part of it is allocated, the rest going back to
the lists. On release the cube is merged with adjacent free cubes, as often as possible, to
form the largest possible disjoint subcubes.

Readings (the summary leaves them open):

* Which cube: the one with the lowest (base, mask) in the list; decomposition splits the
  highest free dimension first and keeps the half with that bit 0, so the allocated k-cube
  keeps the lowest k free dimensions of the cube and its upper halves go to F_{j-1}..F_k.
* "Merged with all possible adjacent cubes": two free j-cubes merge when they have the same
  free dimensions and their bases differ in exactly one bit, giving a (j+1)-cube; a merged
  cube is merged again, and so on (buddy's rule without the alignment restriction: any
  dimension may be the one that joins them). Candidates are found by hashing, O(n) per level.
* Complete recognition: the paper says the scheme "has the ability to recognize a subcube if
  it exists". With disjoint lists that is not exact: a free k-cube may straddle listed
  cubes that cannot be merged pairwise (a reachable 4-cube state lists 0100, 0*01, 011*:
  the free 2-cube 01** spans all three, see the tests). When the lists hold no cube of
  dimension >= k,
  the allocator therefore falls back to a search of the free set for any free k-cube, built
  from the listed cubes, and re-partitions the pieces it used. This makes recognition
  complete (verified by brute force in the tests) at the cost the paper assigns to this
  scheme's deallocation, O(n 2^n), paid only when the lists alone fail.
"""
from __future__ import annotations

import heapq
from scheduler.allocators import register
from scheduler.allocators.base import Allocator
from scheduler.allocators.multiple_gray_code import cube_bitmap, zero_on
from scheduler.topology import Request, Subcube


class _CubeList:
    """One F_k: free cubes as (base, mask), a set plus a lazily pruned min-heap."""

    __slots__ = ("members", "heap")

    def __init__(self):
        self.members: set[tuple[int, int]] = set()
        self.heap: list[tuple[int, int]] = []

    def add(self, cube: tuple[int, int]) -> None:
        self.members.add(cube)
        heapq.heappush(self.heap, cube)

    def discard(self, cube: tuple[int, int]) -> bool:
        if cube in self.members:
            self.members.remove(cube)
            if len(self.heap) > 2 * len(self.members) + 16:
                self.heap = sorted(self.members)
            return True
        return False

    def pop_lowest(self) -> tuple[int, int]:
        while True:
            cube = heapq.heappop(self.heap)
            if cube in self.members:
                self.members.remove(cube)
                return cube

    def __bool__(self) -> bool:
        return bool(self.members)


def _split_off(base: int, mask: int, k: int):
    """Decompose the cube (base, mask) down to a k-cube: returns the kept k-cube and the
    upper halves split off, highest free dimension first."""
    rest = []
    while bin(mask).count("1") > k:
        top = 1 << (mask.bit_length() - 1)
        mask &= ~top
        rest.append((base | top, mask))
    return (base, mask), rest


@register("free-list")
class FreeList(Allocator):
    """Free list strategy (Kim, Das and Lin; lazy paper 2.1): lists of disjoint free cubes of
    any orientation, decompose on allocation, merge adjacent cubes on release."""

    kinds = ("hypercube",)
    complete_recognition = True

    def __init__(self, topology, **options):
        super().__init__(topology, **options)
        self.n = topology.n
        self._lists = [_CubeList() for _ in range(self.n + 1)]
        self._lists[self.n].add((0, (1 << self.n) - 1))

    # ------------------------------------------------------------------ policy

    def _allocate(self, request: Request):
        k, lists = request.k, self._lists
        for j in range(k, self.n + 1):
            if lists[j]:
                base, mask = lists[j].pop_lowest()
                (base, mask), rest = _split_off(base, mask, k)
                for cube in rest:
                    self._insert(cube)
                return (Subcube(self.n, mask, base),)
        return self._allocate_across(k)

    def _insert(self, cube: tuple[int, int]) -> None:
        """Put a free cube in its list, merging it with an adjacent equal cube while one
        exists (lowest joining dimension first)."""
        base, mask = cube
        lists, full = self._lists, (1 << self.n) - 1
        k = bin(mask).count("1")
        while k < self.n:
            fixed = full & ~mask
            while fixed:
                bit = fixed & -fixed
                if lists[k].discard((base ^ bit, mask)):
                    base &= ~bit
                    mask |= bit
                    k += 1
                    break
                fixed ^= bit
            else:
                break
        lists[k].add((base, mask))

    def _release(self, pieces):
        for piece in pieces:
            self._insert((piece.base, piece.mask))

    # ------------------------------------------------------------------ fallback search

    def _allocate_across(self, k: int):
        """Find a free k-cube that straddles listed cubes (none of dimension >= k exists).

        The free set is a bitmap (a Python int); ANDing it with a copy shifted along
        dimension d leaves a bit at each base (bit d = 0) of a free cube one dimension
        larger. Sets of dimensions are grown in increasing order, and a set with no free
        cube is not grown further (every face of a free cube is free). Of all free
        k-cubes the one with the lowest (base, mask) is taken."""
        n = self.n
        if k == 0:
            return None  # any free node would be a listed 0-cube or inside a larger one
        lists = self._lists
        if sum(len(level.members) << j for j, level in enumerate(lists)) < 1 << k:
            return None
        free = 0
        for level in lists:
            for base, mask in level.members:
                free |= cube_bitmap(mask, base)
        best = None
        stack = [(free, 0, 0, 0)]  # (bases of free cubes, mask, size of mask, next dim)
        while stack:
            cand, mask, size, nxt = stack.pop()
            if size == k:
                base = (cand & -cand).bit_length() - 1
                if best is None or (base, mask) < best:
                    best = (base, mask)
                continue
            for d in range(nxt, n - (k - size) + 1):
                grown = cand & (cand >> (1 << d)) & zero_on(n, 1 << d)
                if grown:
                    stack.append((grown, mask | 1 << d, size + 1, d + 1))
        if best is None:
            return None
        base, mask = best
        self._take(Subcube(n, mask, base))
        return (Subcube(n, mask, base),)

    def _take(self, cube: Subcube) -> None:
        """Remove ``cube``'s nodes from the listed cubes, returning the remains to the lists
        as disjoint cubes (each listed cube minus the taken part splits into cubes)."""
        touched = []
        for level in self._lists:
            for base, mask in list(level.members):
                # Two subcubes intersect iff they agree on the dimensions fixed in both.
                if (base ^ cube.base) & ~mask & ~cube.mask == 0:
                    level.discard((base, mask))
                    touched.append((base, mask))
        for base, mask in touched:
            for piece in _subtract(base, mask, cube.base, cube.mask):
                self._insert(piece)

    # ------------------------------------------------------------------ views

    def free_lists(self) -> list[list[Subcube]]:
        return [[Subcube(self.n, m, b) for b, m in sorted(level.members)] for level in self._lists]

    def free_nodes(self) -> frozenset:
        return frozenset(node for level in self._lists for base, mask in level.members
                         for node in Subcube(self.n, mask, base).nodes())


def _subtract(base: int, mask: int, cbase: int, cmask: int):
    """The cube (base, mask) minus the cube (cbase, cmask), as disjoint cubes: peel off,
    one free dimension of the first that is fixed in the second at a time, the half that
    lies outside."""
    out = []
    dims = mask & ~cmask
    while dims:
        bit = dims & -dims
        dims ^= bit
        mask &= ~bit
        out.append(((base & ~bit) | (~cbase & bit), mask))  # the half away from the cube
        base = (base & ~bit) | (cbase & bit)
    return out
