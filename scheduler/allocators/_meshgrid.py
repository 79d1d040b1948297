"""Private helpers for the 2-D mesh allocators (not a policy; not registered).

:class:`MeshBits` is Zhu's "busy array" kept as one Python integer: row ``y`` of a W x H mesh
occupies bits ``y*S .. y*S+W-1`` with ``S = W + 1``; bit set = node free. The extra (guard)
bit at the end of every row is always 0, so that shifting the whole mesh by one column never
carries a free bit from the end of one row into the start of the next. With this layout the
set of all base nodes (lower-left corners) at which a free w x h submesh fits -- the
complement of Zhu's coverage array -- is computed for every base at once with
O(log w + log h) shifts and ANDs of one W*H-bit integer, instead of O(W*H*w*h) node tests.

:class:`QuadBuddy` holds the free blocks of a two-dimensional buddy system (Li and Cheng):
squares of side 2^k whose corners are multiples of 2^k, four buddies forming the square of
side 2^(k+1). It serves ``buddy-2d`` (one root: the whole square mesh) and
``multiple-buddy`` (the mesh first cut into power-of-two squares, Liu et al.).
"""
from __future__ import annotations

import heapq


def repunit(n: int, step: int) -> int:
    """``n`` one bits spaced ``step`` apart: sum(1 << (i * step) for i < n)."""
    if n <= 0:
        return 0
    return ((1 << (n * step)) - 1) // ((1 << step) - 1)


class MeshBits:
    """Free-node bitmap of a W x H mesh packed row-major into one int (see module doc)."""

    __slots__ = ("W", "H", "S", "free", "full", "_rep", "_cache")

    def __init__(self, width: int, height: int):
        self.W, self.H = width, height
        self.S = width + 1
        self._rep: dict[int, int] = {}
        self._cache: dict[tuple, int] = {}
        self.full = ((1 << width) - 1) * self.rows(height)
        self.free = self.full

    def rows(self, h: int) -> int:
        """One bit at the start of each of ``h`` consecutive rows."""
        r = self._rep.get(h)
        if r is None:
            r = self._rep[h] = repunit(h, self.S)
        return r

    def rect(self, x: int, y: int, w: int, h: int) -> int:
        return ((1 << w) - 1) * self.rows(h) << (y * self.S + x)

    def bases(self, w: int, h: int) -> int:
        """Bit ``y*S + x`` set iff the w x h submesh with lower-left corner (x, y) is free."""
        a = self.free
        if w > self.W or h > self.H or not a:
            return 0
        # AND over a window of w columns by doubling: after each step bit p holds the AND
        # of bits p .. p+cov-1; the guard column (always 0) stops windows at the row's end.
        cov = 1
        while cov < w:
            s = min(cov, w - cov)
            a &= a >> s
            cov += s
        cov, S = 1, self.S
        while cov < h:
            s = min(cov, h - cov)
            a &= a >> (s * S)
            cov += s
        return a

    def xy(self, pos: int) -> tuple[int, int]:
        y, x = divmod(pos, self.S)
        return x, y

    def first(self, mask: int) -> tuple[int, int]:
        """The lowest set bit of ``mask`` as (x, y): the first base in row-major order from
        (0, 0), i.e. Zhu's scan of the coverage array."""
        return self.xy((mask & -mask).bit_length() - 1)

    def is_free(self, x: int, y: int, w: int, h: int) -> bool:
        r = self.rect(x, y, w, h)
        return self.free & r == r

    def take(self, x: int, y: int, w: int, h: int) -> None:
        r = self.rect(x, y, w, h)
        if self.free & r != r:
            raise AssertionError(f"{w}x{h}@({x},{y}) is not free")
        self.free ^= r

    def give(self, x: int, y: int, w: int, h: int) -> None:
        r = self.rect(x, y, w, h)
        if self.free & r:
            raise AssertionError(f"{w}x{h}@({x},{y}) is not (entirely) busy")
        self.free |= r

    def lattice(self, w: int, h: int, ox: int, oy: int) -> int:
        """Bits at every (x, y) with x = ox (mod w), y = oy (mod h), 0 <= x < W: frame
        positions. Bits above row H-1 may be set; callers AND with a base set."""
        cache = self._cache
        cols = cache.get(("c", w))
        if cols is None:
            cols = cache[("c", w)] = repunit(-(-self.W // w), w)
        rows = cache.get(("r", h))
        if rows is None:
            rows = cache[("r", h)] = repunit(-(-self.H // h), h * self.S)
        # Mask the shifted columns to the row so the product below has no carries.
        return ((cols << ox) & ((1 << self.W) - 1)) * (rows << (oy * self.S))

    def free_nodes(self) -> frozenset:
        out = []
        W, S, row_mask = self.W, self.S, (1 << self.W) - 1
        for y in range(self.H):
            r = (self.free >> (y * S)) & row_mask
            base = y * W
            while r:
                low = r & -r
                out.append(base + low.bit_length() - 1)
                r ^= low
        return frozenset(out)


def power_of_two_squares(width: int, height: int) -> list[tuple[int, int, int]]:
    """Cut a W x H mesh into squares of side 2^k as large as possible: (x, y, k).

    Tile the largest square side s <= min(W, H) over as much of the mesh as it covers, then
    cut the strip to the right and the strip above in the same way. Every square of side s
    lands on coordinates that are multiples of s (each strip starts at a multiple of a larger
    power of two), which the buddy arithmetic of :class:`QuadBuddy` relies on.
    """
    out: list[tuple[int, int, int]] = []

    def cut(x0: int, y0: int, w: int, h: int) -> None:
        if w <= 0 or h <= 0:
            return
        k = min(w, h).bit_length() - 1
        s = 1 << k
        nx, ny = w // s, h // s
        for j in range(ny):
            for i in range(nx):
                out.append((x0 + i * s, y0 + j * s, k))
        cut(x0 + nx * s, y0, w - nx * s, ny * s)
        cut(x0, y0 + ny * s, w, h - ny * s)

    cut(0, 0, width, height)
    return out


class QuadBuddy:
    """Free blocks of a 2-D buddy system over a set of power-of-two root squares.

    A block is (x, y, k): the 2^k x 2^k square with lower-left corner (x, y), x and y
    multiples of 2^k. Per order k a set of free corners plus a heap keyed (y, x) with lazy
    deletion gives the lowest free block (row-major) in O(log n) without scanning.
    """

    def __init__(self, width: int, height: int, roots: list[tuple[int, int, int]]):
        self.width = width
        self.max_order = max(k for _, _, k in roots)
        self._free: list[set] = [set() for _ in range(self.max_order + 1)]
        self._heap: list[list] = [[] for _ in range(self.max_order + 1)]
        # The order of the root square each node lies in bounds how far a block may merge.
        self._root_order = bytearray(width * height)
        for x, y, k in roots:
            s = 1 << k
            for yy in range(y, y + s):
                self._root_order[yy * width + x: yy * width + x + s] = bytes([k]) * s
            self._push(k, x, y)

    def _push(self, k: int, x: int, y: int) -> None:
        self._free[k].add((x, y))
        heap = self._heap[k]
        heapq.heappush(heap, (y, x))
        if len(heap) > 4 * len(self._free[k]) + 64:  # drop stale entries now and then
            self._heap[k] = [(yy, xx) for xx, yy in self._free[k]]
            heapq.heapify(self._heap[k])

    def _pop(self, k: int) -> tuple[int, int]:
        heap, free = self._heap[k], self._free[k]
        while True:
            y, x = heapq.heappop(heap)
            if (x, y) in free:
                free.discard((x, y))
                return x, y

    def has(self, k: int) -> bool:
        return k <= self.max_order and bool(self._free[k])

    def take(self, k: int) -> tuple[int, int] | None:
        """A free 2^k square: the lowest free block of order k, else the lowest block of the
        smallest larger order, split down (keeping the lower-left quarter each time)."""
        j = k
        while j <= self.max_order and not self._free[j]:
            j += 1
        if j > self.max_order:
            return None
        x, y = self._pop(j)
        while j > k:
            j -= 1
            half = 1 << j
            self._push(j, x + half, y)
            self._push(j, x, y + half)
            self._push(j, x + half, y + half)
        return x, y

    def give(self, x: int, y: int, k: int) -> None:
        """Free a block and merge it with its three buddies while they are all free."""
        limit = self._root_order[y * self.width + x]
        while k < limit:
            s2 = 2 << k
            px, py = x - x % s2, y - y % s2
            half = 1 << k
            quads = ((px, py), (px + half, py), (px, py + half), (px + half, py + half))
            free = self._free[k]
            if not all(q in free or q == (x, y) for q in quads):
                break
            for q in quads:
                free.discard(q)
            x, y, k = px, py, k + 1
        self._push(k, x, y)

    def free_count(self) -> int:
        return sum(len(f) << (2 * k) for k, f in enumerate(self._free))

    def free_nodes(self) -> frozenset:
        W = self.width
        out = []
        for k, blocks in enumerate(self._free):
            s = 1 << k
            for x, y in blocks:
                for yy in range(y, y + s):
                    out.extend(range(yy * W + x, yy * W + x + s))
        return frozenset(out)

    def free_blocks(self) -> list[tuple[int, int, int]]:
        return sorted((x, y, k) for k, f in enumerate(self._free) for x, y in f)
