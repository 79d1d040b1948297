"""``buddy-bitmap``: the buddy strategy on 2^n allocation bits.

Lazy-scheduling paper (journal), section 2.1 "Buddy" (the nCUBE scheme): one allocation bit
per node; a k-cube request takes the region [m 2^k, (m+1) 2^k - 1] for the **least** integer
m whose bits all show free nodes; release clears the region's bits. Allocation is O(2^n)
and release O(2^k), as the paper states; ``buddy`` is the O(n) free-list version of the same
recognition.

The bits are a bytearray and the scan uses C-level ``find``: the first free node gives the
first candidate block, and a busy node inside a candidate skips the scan past that node's
block. This visits blocks in increasing m, so the block found is the least m, as in the
paper; only the constant factor differs from a bit-by-bit scan.
"""
from __future__ import annotations

from scheduler.allocators import register
from scheduler.allocators._cubes import BusyBytes, least_free_block
from scheduler.topology import Request, Subcube


@register("buddy-bitmap")
class BuddyBitmap(BusyBytes):
    """Buddy strategy on 2^n allocation bits, least m (lazy paper 2.1)."""

    complete_recognition = False

    def _allocate(self, request: Request):
        k = request.k
        lo = least_free_block(self._bits, 1 << k, len(self._bits))
        if lo < 0:
            return None
        self._bits[lo:lo + (1 << k)] = b"\x01" * (1 << k)
        return (Subcube(self.n, (1 << k) - 1, lo),)

    def _release(self, pieces):
        for piece in pieces:
            size = piece.size
            self._bits[piece.base:piece.base + size] = bytes(size)
