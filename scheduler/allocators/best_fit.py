"""``best-fit``: Zhu's best-fit submesh allocation for 2-D meshes.

Spec: restricted-size-reduction.txt section 2.1.1 (Zhu's first-fit and best-fit are the
"perfect recognition" algorithms: a requested submesh is always located if it exists, in
O(MN)); mesh-processor-management-dissertation.txt section 2.6 (Zhu compared a best-fit
strategy "based on certain heuristic" with first fit; neither wins at all times).

Zhu's best fit builds the same coverage array C as first fit (C = 1 at every node that
cannot be the base of a free w x h submesh) and, among the uncovered candidate bases,
picks the one with the most busy neighbours in C: a base wedged into a corner of the
candidate region uses up a hole that fits the request tightly and leaves the large free
regions whole. The texts here give only "certain heuristic"; the reading chosen, and
tested, is Zhu's: neighbours are the four nodes left, right, below and above the base in
C, a neighbour outside the mesh counts as busy, and ties go to the first candidate in
first fit's row-major order (so on an empty mesh best fit also picks (0, 0)).

The count is done for all candidates at once with bit-sliced adders on the packed bitmap
(``_meshgrid.MeshBits``): four shifted copies of the candidate set are summed bitwise, and
the lowest set bit of the class with the fewest candidate neighbours is the choice. The
request is never rotated (see first_fit.py).
"""
from __future__ import annotations

from scheduler.allocators import register
from scheduler.allocators.first_fit import FirstFit


@register("best-fit")
class BestFit(FirstFit):
    """Zhu's best fit: the free base with the most busy neighbours in the coverage array."""

    def _choose(self, bases: int, w: int, h: int):
        b, S = bases, self._grid.S
        # Candidate-neighbour indicators at each base (guard column and shifts past the
        # mesh edges bring in zeros, i.e. "not a candidate" = busy in C).
        left, right, down, up = b << 1, b >> 1, b << S, b >> S
        s1, c1 = left ^ right, left & right
        s2, c2 = down ^ up, down & up
        bit0, c3 = s1 ^ s2, s1 & s2
        bit1 = c1 ^ c2 ^ c3
        bit2 = (c1 & c2) | (c1 & c3) | (c2 & c3)
        # Fewest candidate neighbours = most busy neighbours; try 0, 1, 2, 3, 4 in turn.
        for k in range(5):
            m = b & (bit0 if k & 1 else ~bit0) & (bit1 if k & 2 else ~bit1) & (bit2 if k & 4 else ~bit2)
            if m:
                return self._grid.first(m)
        raise AssertionError("a non-empty candidate set has a neighbour class")
