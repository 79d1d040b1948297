"""Representations shared by hypercube allocators; no policy here (each search stays in its
own module).

* :func:`least_free_block` and :class:`BusyBytes`: one busy byte per node, scanned with
  C-level ``bytearray.find`` (``buddy-bitmap``, ``modified-buddy``, ``gray-code``).
* :class:`CubeBits` and :class:`FreeBitmap`: the free nodes as one 2^n-bit integer, subcubes
  tested a machine word at a time (``tree-collapsing``, ``mss``).
"""
from __future__ import annotations

from scheduler.allocators.base import Allocator


def least_free_block(bits: bytearray, size: int, limit: int, start: int = 0) -> int:
    """The lowest start of an aligned run of ``size`` zero bytes (size a power of two) at or
    after ``start`` and below ``limit``; -1 when there is none."""
    lo = bits.find(0, start, limit)
    while lo >= 0:
        lo &= ~(size - 1)
        busy = bits.find(1, lo, lo + size)
        if busy < 0:
            return lo
        lo = bits.find(0, (busy | (size - 1)) + 1, limit)
    return -1


class BusyBytes(Allocator):
    """Base of a hypercube allocator keeping one byte per node, 1 = busy, node order."""

    kinds = ("hypercube",)

    def __init__(self, topology, **options):
        super().__init__(topology, **options)
        self.n = topology.n
        self._bits = bytearray(topology.size)  # 1 = busy

    def free_nodes(self) -> frozenset:
        bits = self._bits
        return frozenset(i for i in range(len(bits)) if not bits[i])


class CubeBits:
    """Bit-parallel subcube tests on an n-cube whose free nodes are one integer bitmap."""

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

    def nodes(self, bits: int) -> frozenset:
        out, i = [], 0
        while bits:
            if bits & 1:
                out.append(i)
            bits >>= 1
            i += 1
        return frozenset(out)


class FreeBitmap(Allocator):
    """Base of a hypercube allocator whose free nodes are one integer bitmap ``_free``."""

    kinds = ("hypercube",)

    def __init__(self, topology, **options):
        super().__init__(topology, **options)
        self._bits = CubeBits(topology.n)
        self._free = self._bits.full

    def _release(self, pieces):
        for p in pieces:
            self._free |= self._bits.cube_bits(p.mask, p.base)

    def free_nodes(self) -> frozenset:
        return self._bits.nodes(self._free)


__all__ = ["BusyBytes", "CubeBits", "FreeBitmap", "least_free_block"]
