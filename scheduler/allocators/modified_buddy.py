"""``modified-buddy``: Al-Dhelaan and Bose's modified buddy strategy.

Lazy-scheduling paper (journal), section 2.1 "Modified Buddy" (its ref. [2]). Like buddy it
keeps 2^n allocation bits. For a k-cube (k >= 1) it finds the least integer alpha,
0 <= alpha <= 2^(n-k+1) - 1, such that the (k-1)-cube alpha^(n-k+1) is free and has a p-th
partner alpha_p^(n-k+1), 1 <= p <= n-k+1, that is also free; the two form the k-cube.

Reading of the notation (the summary does not define it): alpha^(n-k+1) is the (k-1)-cube
whose n-k+1 high address bits are alpha and whose k-1 low bits are free (the buddy block
[alpha 2^(k-1), (alpha+1) 2^(k-1) - 1]); its p-th partner is the (k-1)-cube whose number
differs from alpha in bit p-1, i.e. in address dimension k-2+p. The pair is the k-cube with
free dimensions {0..k-2} and k-2+p. With p = 1 this is the buddy pair, so every cube buddy
recognizes, this recognizes too; p > 1 adds the n-k other pairings (2^(n-k)(n-k+1) candidate
k-cubes instead of buddy's 2^(n-k)), the "better subcube recognition" the paper cites.
Ties: least alpha first, then least p. A 0-cube takes the least free node (k - 1 < 0 leaves
no smaller cube to pair). Allocation is O(n 2^n) and release O(2^k), as the paper states.
"""
from __future__ import annotations

from scheduler.allocators import register
from scheduler.allocators._cubes import BusyBytes, least_free_block
from scheduler.topology import Request, Subcube


@register("modified-buddy")
class ModifiedBuddy(BusyBytes):
    """Modified buddy (Al-Dhelaan and Bose; lazy paper 2.1): a free (k-1)-block and a free
    p-th partner."""

    complete_recognition = False

    def _allocate(self, request: Request):
        k, n, bits = request.k, self.n, self._bits
        if k == 0:
            node = bits.find(0)
            if node < 0:
                return None
            bits[node] = 1
            return (Subcube(n, 0, node),)
        half = 1 << (k - 1)
        size = len(bits)
        lo = least_free_block(bits, half, size)
        while lo >= 0:
            for p in range(1, n - k + 2):
                partner = lo ^ (half << (p - 1))
                if bits.find(1, partner, partner + half) < 0:
                    mask = (half - 1) | (half << (p - 1))
                    self._mark(Subcube(n, mask, lo & ~mask), 1)
                    return (Subcube(n, mask, lo & ~mask),)
            lo = least_free_block(bits, half, size, lo + half)
        return None

    def _mark(self, cube: Subcube, value: int) -> None:
        # A cube here is two aligned blocks of 2^(k-1): its free dims are the low k-1 plus one.
        k = cube.dim
        if k == 0:
            self._bits[cube.base] = value
            return
        half = 1 << (k - 1)
        high = cube.mask & ~(half - 1)
        fill = bytes([value]) * half
        for start in (cube.base, cube.base | high):
            self._bits[start:start + half] = fill

    def _release(self, pieces):
        for piece in pieces:
            self._mark(piece, 0)
