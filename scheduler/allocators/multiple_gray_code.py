"""``multiple-gray-code``: Chen and Shin's multiple gray code strategy.

Lazy-scheduling paper (journal), section 2.1 "Gray Code" (its ref. [4]): a single binary
reflected gray code (``gray-code``) cannot recognize every free subcube; with
C(n, floor(n/2)) gray codes recognition is complete. A k-cube request tries the gray codes in
order and, in each, the windows m = 0, 1, ..., 2^(n-k+1) - 1 of ``gray-code`` (2^k cyclically
consecutive codes starting at m 2^(k-1)); the first free window is allocated.

Which gray codes (the summary gives only their number). A gray code here is the BRGC with
its bit positions permuted: code bit t is address dimension pi[t]. Its even windows at level
k are all the k-cubes whose free dimensions are the set {pi[0], ..., pi[k-1]}, so a family of
permutations recognizes every k-cube of every k if each set of dimensions is a prefix set of
some permutation. A symmetric chain decomposition of the subsets of {0..n-1} (de Bruijn,
van Ebbenhorst Tengbergen and Kruyswijk; the construction that gives Chen and Shin's count)
has exactly C(n, floor(n/2)) chains, each a run of sets growing by one element; extending
every chain to a full ordering of the dimensions gives C(n, floor(n/2)) gray codes with that
property. The first is the plain BRGC (the chain from the empty set). The tests check
complete recognition by brute force over every subcube for n <= 5.

Readings: a 0-cube is any free node in every gray code; the lowest free address is taken.
For speed the free nodes are one Python int (bit a set = node a free). ANDing it with copies
shifted along the k-1 lowest code dimensions leaves, at each base, whether that (k-1)-cube
is free; a window is free when its two (k-1)-halves are. A gray code is skipped at once when
no window of it can be free; otherwise its windows are visited in increasing m, so the
allocation is the paper's (first gray code, least m) with its O(C(n, n/2) 2^n) worst case.
Release is O(k) big-integer operations.
"""
from __future__ import annotations

from math import comb

from scheduler.allocators import register
from scheduler.allocators.base import Allocator
from scheduler.allocators.gray_code import window_cube
from scheduler.topology import Request, Subcube


def symmetric_chains(n: int) -> list[list[frozenset]]:
    """A symmetric chain decomposition of the subsets of {0..n-1} (de Bruijn et al.)."""
    chains: list[list[frozenset]] = [[frozenset()]]
    for x in range(n):
        nxt = []
        for chain in chains:
            nxt.append(chain + [chain[-1] | {x}])
            if len(chain) > 1:
                nxt.append([s | {x} for s in chain[:-1]])
        chains = nxt
    return chains


def gray_code_orders(n: int) -> list[tuple[int, ...]]:
    """C(n, floor(n/2)) dimension orders; every subset of dimensions is the set of the first
    |subset| dimensions of one of them."""
    orders = []
    for chain in symmetric_chains(n):
        order = sorted(chain[0])
        for prev, cur in zip(chain, chain[1:]):
            order += sorted(cur - prev)
        order += sorted(set(range(n)) - chain[-1])
        orders.append(tuple(order))
    assert len(orders) == comb(n, n // 2)
    return orders


def _permute(value: int, order: tuple[int, ...]) -> int:
    out, t = 0, 0
    while value:
        if value & 1:
            out |= 1 << order[t]
        value >>= 1
        t += 1
    return out


def cube_bitmap(mask: int, base: int) -> int:
    """The nodes of subcube (mask, base) as a bitmap int."""
    pat = 1 << base
    while mask:
        bit = mask & -mask
        mask ^= bit
        pat |= pat << bit
    return pat


_ZERO: dict[tuple[int, int], int] = {}


def zero_on(n: int, mask: int) -> int:
    """Bitmap over the 2^n addresses of those with 0 under ``mask``."""
    z = _ZERO.get((n, mask))
    if z is None:
        z = (1 << (1 << n)) - 1
        m = mask
        while m:
            bit = m & -m
            m ^= bit
            block = (1 << bit) - 1  # 2^d ones then 2^d zeros, repeated
            z &= block * (((1 << (1 << n)) - 1) // ((1 << (bit << 1)) - 1))
        if len(_ZERO) < 4096:
            _ZERO[(n, mask)] = z
    return z


@register("multiple-gray-code")
class MultipleGrayCode(Allocator):
    """C(n, floor(n/2)) gray codes, complete subcube recognition (Chen and Shin; lazy 2.1)."""

    kinds = ("hypercube",)
    complete_recognition = True

    def __init__(self, topology, **options):
        super().__init__(topology, **options)
        self.n = topology.n
        self.orders = gray_code_orders(self.n)
        self._free = (1 << topology.size) - 1

    def _allocate(self, request: Request):
        k, n, free = request.k, self.n, self._free
        if not free:
            return None
        if k == 0:
            node = (free & -free).bit_length() - 1
            self._free ^= 1 << node
            return (Subcube(n, 0, node),)
        halves: dict[int, int] = {}  # mask of k-1 dims -> bitmap of free (k-1)-cube bases
        nbytes = max(1, (1 << n) // 8)
        for order in self.orders:
            low = 0
            for t in range(k - 1):
                low |= 1 << order[t]
            a = halves.get(low)
            if a is None:
                a = free
                m = low
                while m:
                    bit = m & -m
                    m ^= bit
                    a &= a >> bit
                a &= zero_on(n, low)
                halves[low] = a
            # Any window of this code is two free (k-1)-halves joined along one of its
            # dimensions order[k-1:]; if no such pair exists, skip the code.
            if not any(a & (a >> (1 << e)) & zero_on(n, 1 << e) for e in order[k - 1:]):
                continue
            found = self._first_window(order, k, low, a.to_bytes(nbytes, "little"))
            if found is not None:
                mask, base = found
                self._free ^= cube_bitmap(mask, base)
                return (Subcube(n, mask, base),)
        return None

    def _first_window(self, order, k, low, halves_free: bytes):
        n = self.n
        for m in range(1 << (n - k + 1)):
            cmask, cbase = window_cube(n, k, m)
            mask, base = _permute(cmask, order), _permute(cbase, order)
            other = base | (mask & ~low)  # the second (k-1)-half of the window
            if (halves_free[base >> 3] >> (base & 7) & 1) and (halves_free[other >> 3] >> (other & 7) & 1):
                return mask, base
        return None

    def _release(self, pieces):
        for piece in pieces:
            self._free |= cube_bitmap(piece.mask, piece.base)

    def free_nodes(self) -> frozenset:
        bits = bin(self._free)[:1:-1]
        return frozenset(i for i, c in enumerate(bits) if c == "1")
