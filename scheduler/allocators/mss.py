"""``mss``: Dutt and Hayes's maximal set of subcubes (complete recognition).

Spec: lazy-scheduling-hypercube-journal.txt section 2.1 ("forming a maximal subset of
subcubes (MSS) ... a set of available disjoint subcubes that has the property of being
greater than or equal to other sets of such subcubes. The main idea is to maintain the
greatest MSS after every allocation and deallocation ... Conceptually free list and MSS are
the same except that the free list does not maintain MSS after allocation. Determination of
the best decomposition is a major overhead"); the original is Dutt and Hayes, IEEE Trans.
Computers 40(3), 1991.

The free nodes are kept as a set of disjoint free subcubes. Sets are compared as Dutt and
Hayes order them: by the number of subcubes of the highest dimension, then of the next, and
so on (a set with one more large cube is greater whatever it has below). A request is served
from the set, and the set is rebuilt after every allocation and release.

Readings chosen:
- Finding the truly greatest decomposition is the exponential part (the paper's O(2^(3^n)));
  we build it greedily, largest dimension first: for each dimension d from the largest free
  one down, the collapsed trees of d free dimensions are visited in lexicographic order
  (as in ``tree-collapsing``) and every free d-cube of a tree is taken, lowest base first.
  This is not always the greatest set, but its first entry always is: the set always holds a
  cube of the largest free dimension. That is exactly what complete recognition needs: a
  k-cube is free somewhere iff the set holds a member of dimension >= k.
- A k-request takes the smallest member of dimension >= k (best fit, so that large members
  survive), the lowest such member on ties, and within it the k-cube on its k lowest free
  dimensions at its base (the buddy split of the member). The set is then rebuilt from the
  remaining free nodes, which may merge the member's remainder with its neighbours.
- A release adds the cube's nodes back and rebuilds the set; the rebuild is O(n 2^n) word
  operations, the paper's deallocation bound.
"""
from __future__ import annotations

from scheduler.allocators import register
from scheduler.allocators._cubes import CubeBits, FreeBitmap
from scheduler.topology import Subcube


def decompose(bits: CubeBits, free: int) -> list[tuple[int, int, int]]:
    """Disjoint free subcubes covering ``free``, largest first: ``(dim, mask, base)``."""
    n, zero = bits.n, bits.zero
    members: list[tuple[int, int, int]] = []
    rest = free

    def take(d: int, start: int, left: int, f: int, z: int, mask: int) -> None:
        # f, z come from an earlier ``rest``, a superset of the current one: they still
        # prune soundly (no cube then, none now); a leaf re-checks against the current rest
        nonlocal rest
        for x in range(start, n - left + 1):
            f2 = f & (f >> (1 << x))
            z2 = z & zero[x]
            if not f2 & z2:
                continue
            m = mask | 1 << x
            if left > 1:
                take(d, x + 1, left - 1, f2, z2, m)
                continue
            hits = bits.free_bases(rest, m)
            if hits:
                rest &= ~bits.spread(hits, m)
                while hits:
                    low = hits & -hits
                    members.append((d, m, low.bit_length() - 1))
                    hits ^= low

    top = min(n, max(0, rest.bit_count().bit_length() - 1))  # a d-cube needs 2^d free nodes
    for d in range(top, 0, -1):
        if not rest:
            return members
        take(d, 0, d, rest, bits.full, 0)
    while rest:
        low = rest & -rest
        members.append((0, 0, low.bit_length() - 1))
        rest ^= low
    return members


@register("mss")
class MSS(FreeBitmap):
    """Dutt and Hayes: keep the free nodes as a maximal set of disjoint subcubes; best fit."""

    complete_recognition = True

    def __init__(self, topology, **options):
        super().__init__(topology, **options)
        self._mss = decompose(self._bits, self._free)

    @property
    def mss(self) -> list[Subcube]:
        """The current maximal set of subcubes, largest first."""
        n = self.topology.n
        return [Subcube(n, m, b) for _, m, b in self._mss]

    def _allocate(self, request):
        k = request.k
        best = None
        for member in self._mss:
            if member[0] >= k and (best is None or member[0] < best[0]):
                best = member
                if member[0] == k:
                    break
        if best is None:
            return None
        _, mask, base = best
        # the member's k lowest free dimensions: its buddy split
        sub = 0
        m = mask
        for _ in range(k):
            low = m & -m
            sub |= low
            m ^= low
        self._free &= ~self._bits.cube_bits(sub, base)
        self._mss = decompose(self._bits, self._free)
        return (Subcube(self.topology.n, sub, base),)

    def _release(self, pieces):
        super()._release(pieces)
        self._mss = decompose(self._bits, self._free)

    def free_nodes(self) -> frozenset:
        # read from the set of subcubes, so that a decomposition that loses or doubles a
        # node shows up in the contract tests
        out = []
        n = self.topology.n
        for _, m, b in self._mss:
            out.extend(Subcube(n, m, b).nodes())
        return frozenset(out)
