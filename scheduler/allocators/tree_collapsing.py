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
from scheduler.allocators._cubes import CubeBits, FreeBitmap
from scheduler.topology import Subcube


def first_free(bits: CubeBits, free: int, k: int) -> tuple[int, int] | None:
    """(mask, base) of the first free k-cube of the bitmap ``free`` in collapsing order:
    lexicographic free-dimension sets, then the lowest base. None when no k-subcube is free."""
    if k == 0:
        return (0, (free & -free).bit_length() - 1) if free else None
    n, zero = bits.n, bits.zero

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

    return search(0, k, free, bits.full, 0)


@register("tree-collapsing")
class TreeCollapsing(FreeBitmap):
    """Chuang and Tzeng: search all C(n,k) collapsed binary trees; complete recognition."""

    complete_recognition = True

    def _allocate(self, request):
        found = first_free(self._bits, self._free, request.k)
        if found is None:
            return None
        mask, base = found
        self._free &= ~self._bits.cube_bits(mask, base)
        return (Subcube(self.topology.n, mask, base),)
