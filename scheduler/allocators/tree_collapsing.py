"""``tree-collapsing``: Chuang and Tzeng's tree collapsing strategy (complete recognition).

Spec: lazy-scheduling-hypercube-journal.txt section 2.1 ("successive collapsing of the
binary tree representation of a hypercube ... nodes that form a subcube but are at a
distance are brought close to each other ... generates its search space dynamically and has
complete subcube recognition ability"; allocation O(C(n,k) 2^(n-k)), release O(2^k)); the
original is Chuang and Tzeng, ISCA 1990.

The buddy system searches one complete binary tree: the k-cubes whose free dimensions are
the k lowest address bits. Collapsing the tree at a level swaps the roles of two address
bits, so every collapse brings a new set of k dimensions to the bottom of the tree; after all
C(n,k) collapses every k-subcube (every choice of k free dimensions and of the 2^(n-k)
values of the others) has been a leaf-level subtree once, which is where complete
recognition comes from.

Readings chosen (the summary fixes the search space, not the order):
- the collapsed trees are visited in lexicographic order of their k free dimensions, lowest
  first, so the first tree is the buddy tree and an allocator on a lightly loaded machine
  makes the buddy system's choices; within a tree the lowest base address wins;
- the 2^(n-k) subtrees of one tree are tested together, bit-parallel: with the free bitmap
  ``F`` as one integer, ``F & (F >> 2^d)`` for each free dimension ``d`` leaves bit ``a`` set
  exactly when the subcube with base ``a`` is free. That is the same O(C(n,k) 2^(n-k)) work
  done a machine word at a time; a prefix of dimensions that already admits no free cube
  prunes every tree that extends it.
Release clears the bits of the cube, O(2^k) as in the paper.
"""
from __future__ import annotations

from scheduler.allocators import register
from scheduler.allocators.base import Allocator
from scheduler.topology import Subcube


class CubeBits:
    """Bit-parallel subcube tests on an n-cube whose free nodes are one integer bitmap.

    Shared by the complete-recognition allocators (tree collapsing, MSS)."""

    __slots__ = ("n", "full", "zero", "_patterns")

    def __init__(self, n: int):
        self.n = n
        self.full = (1 << (1 << n)) - 1
        # zero[d]: the addresses whose bit d is 0 (the bases a cube free in d may have)
        self.zero = []
        for d in range(n):
            block = ((1 << (1 << d)) - 1)  # 2^d ones, then 2^d zeros, repeated
            period = 1 << (d + 1)
            z = block
            width = period
            while width < (1 << n):
                z |= z << width
                width <<= 1
            self.zero.append(z & self.full)
        self._patterns: dict[int, int] = {}

    def pattern(self, mask: int) -> int:
        """The bitmap of the cube with free dimensions ``mask`` and base 0."""
        p = self._patterns.get(mask)
        if p is None:
            p, m, d = 1, mask, 0
            while m:
                if m & 1:
                    p |= p << (1 << d)
                m >>= 1
                d += 1
            self._patterns[mask] = p
        return p

    def cube_bits(self, mask: int, base: int) -> int:
        return self.pattern(mask) << base

    def spread(self, bases: int, mask: int) -> int:
        """The union of the cubes with free dimensions ``mask`` at every base in ``bases``."""
        d = 0
        while mask:
            if mask & 1:
                bases |= bases << (1 << d)
            mask >>= 1
            d += 1
        return bases

    def free_bases(self, free: int, mask: int) -> int:
        """Bit ``a`` set iff the cube (mask, a) lies inside ``free``."""
        f, z, d, m = free, self.full, 0, mask
        while m:
            if m & 1:
                f &= f >> (1 << d)
                z &= self.zero[d]
                if not f & z:
                    return 0
            m >>= 1
            d += 1
        return f & z

    def first_free(self, free: int, k: int) -> tuple[int, int] | None:
        """The first free k-cube in collapsing order: lexicographic free-dimension sets,
        then the lowest base. None when no k-subcube is free."""
        if k == 0:
            return (0, (free & -free).bit_length() - 1) if free else None
        n, zero = self.n, self.zero

        def search(start: int, left: int, f: int, z: int, mask: int):
            for d in range(start, n - left + 1):
                f2 = f & (f >> (1 << d))
                z2 = z & zero[d]
                hits = f2 & z2
                if not hits:
                    continue  # no cube with these dimensions, nor with any superset
                if left == 1:
                    return mask | 1 << d, (hits & -hits).bit_length() - 1
                found = search(d + 1, left - 1, f2, z2, mask | 1 << d)
                if found is not None:
                    return found
            return None

        return search(0, k, free, self.full, 0)

    def nodes(self, bits: int) -> frozenset:
        out, i = [], 0
        while bits:
            if bits & 1:
                out.append(i)
            bits >>= 1
            i += 1
        return frozenset(out)


@register("tree-collapsing")
class TreeCollapsing(Allocator):
    """Chuang and Tzeng: search all C(n,k) collapsed binary trees; complete recognition."""

    kinds = ("hypercube",)
    complete_recognition = True

    def __init__(self, topology, **options):
        super().__init__(topology, **options)
        self._bits = CubeBits(topology.n)
        self._free = self._bits.full

    def _allocate(self, request):
        n = self.topology.n
        found = self._bits.first_free(self._free, request.k)
        if found is None:
            return None
        mask, base = found
        self._free &= ~self._bits.cube_bits(mask, base)
        return (Subcube(n, mask, base),)

    def _release(self, pieces):
        for p in pieces:
            self._free |= self._bits.cube_bits(p.mask, p.base)

    def free_nodes(self) -> frozenset:
        return self._bits.nodes(self._free)
