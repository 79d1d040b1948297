"""``gray-code``: Chen and Shin's single gray code strategy.

Lazy-scheduling paper (journal), section 2.1 "Gray Code" (its ref. [4]: Chen and Shin,
IEEE Trans. Computers, Dec. 1987). The allocation bits are stored in the order of the binary
reflected gray code (BRGC): position i holds node G(i) = i XOR (i >> 1). A k-cube request
takes the least integer m such that the bits at positions (i mod 2^n),
i in [m 2^(k-1), (m+2) 2^(k-1) - 1], all show free nodes; release clears those bits.

Those 2^k cyclically consecutive codes always form a k-subcube: for even m = 2j it is the
buddy block with free dimensions {0..k-1} and high bits G(j) (so every block ``buddy``
finds, this finds too); for odd m = 2j+1 it straddles two buddy blocks whose high bits G(j)
and G(j+1) differ in one dimension d, giving free dimensions {0..k-2, d} with bit k-1 fixed
to 1 - (j mod 2). The tests check these formulas against the explicit codes.

Readings: for k = 0 the window formula has no meaning (2^(k-1) = 1/2); a 0-cube takes the
free node at the least gray position, i.e. the least m with bit m free. For k = n both
windows m = 0 and m = 1 are the whole machine; m = 0 is found first. The last window
(m = 2^(n-k+1) - 1) wraps around to position 0, as the ``mod 2^n`` says.

The scan works on half-windows of 2^(k-1) bits with C-level ``find``; it visits m in
increasing order, so it returns the least m like the paper's bit scan.
"""
from __future__ import annotations

from scheduler.allocators import register
from scheduler.allocators._cubes import BusyBytes, least_free_block
from scheduler.topology import Request, Subcube


def gray(i: int) -> int:
    return i ^ (i >> 1)


def gray_inverse(g: int) -> int:
    i = g
    while g:
        g >>= 1
        i ^= g
    return i


def window_cube(n: int, k: int, m: int) -> tuple[int, int]:
    """(mask, base) of the k-subcube formed by BRGC window m (positions m 2^(k-1) ..
    (m+2) 2^(k-1) - 1 mod 2^n) of an n-cube, k >= 1; for k = 0, the node G(m)."""
    if k == 0:
        return 0, gray(m)
    j, odd = m >> 1, m & 1
    if not odd or k == n:
        return (1 << k) - 1, gray(j % (1 << (n - k))) << k
    hi_j = gray(j)
    hi_next = gray((j + 1) % (1 << (n - k)))
    d = k + (hi_j ^ hi_next).bit_length() - 1
    mask = ((1 << (k - 1)) - 1) | (1 << d)
    base = ((hi_j << k) & ~(1 << d)) | ((1 ^ (j & 1)) << (k - 1))
    return mask, base


def least_window(bits: bytearray, k: int, start_half: int = 0) -> int:
    """The least m >= start_half whose BRGC window for a k-cube (k >= 1) is free in
    ``bits`` (gray-ordered, 1 = busy); -1 when there is none."""
    size = len(bits)
    half = 1 << (k - 1)
    halves = size // half
    start = start_half * half
    while True:
        lo = least_free_block(bits, half, size, start)
        if lo < 0:
            return -1
        h = lo // half
        nxt = (h + 1) % halves
        if bits.find(1, nxt * half, nxt * half + half) < 0:
            return h
        if nxt == 0:
            return -1
        start = (nxt + 1) * half


@register("gray-code")
class GrayCode(BusyBytes):
    """Single binary reflected gray code strategy (Chen and Shin; lazy paper 2.1)."""

    complete_recognition = False

    def __init__(self, topology, **options):
        super().__init__(topology, **options)  # _bits gray-ordered: position i is node G(i)
        self._windows: dict[tuple[int, int], tuple[int, int]] = {}  # (mask, base) -> (pos, len)

    def _allocate(self, request: Request):
        k, n = request.k, self.n
        bits = self._bits
        if k == 0:
            pos = bits.find(0)
            if pos < 0:
                return None
            bits[pos] = 1
            self._windows[(0, gray(pos))] = (pos, 1)
            return (Subcube(n, 0, gray(pos)),)
        m = least_window(bits, k)
        if m < 0:
            return None
        pos, length = m << (k - 1), 1 << k
        self._mark(pos, length, 1)
        mask, base = window_cube(n, k, m)
        self._windows[(mask, base)] = (pos, length)
        return (Subcube(n, mask, base),)

    def _mark(self, pos: int, length: int, value: int) -> None:
        bits = self._bits
        end = pos + length
        first = min(end, len(bits))
        bits[pos:first] = bytes([value]) * (first - pos)
        if end > len(bits):  # the wrapping last window
            bits[0:end - len(bits)] = bytes([value]) * (end - len(bits))

    def _release(self, pieces):
        for piece in pieces:
            pos, length = self._windows.pop((piece.mask, piece.base))
            self._mark(pos, length, 0)

    def free_nodes(self) -> frozenset:
        bits = self._bits
        return frozenset(gray(i) for i in range(len(bits)) if not bits[i])
