"""Logical communication patterns: which rank of a job sends to which.

A pattern is a function of the job's logical shape ``(w, h)`` (ranks ``y * w + x``, row-major,
as the daemon numbers a job's nodes) and its options, returning the paths as
``(source rank, destination rank)`` pairs. Registered by name, like every policy, so a user's
own pattern is one decorated function.

From the dissertation (NETWORK.md 3.1):

* ``stair`` (§3.2, §4.1, Fig 4.1; geometry of NETWORK.md 2.1): ``lv`` paths on a row of
  ``lv + 1`` nodes, all ending at the last node; path ``P_j`` (j = 1 top .. lv bottom) starts
  at position ``lv - j``. Paths are listed top to bottom.
* ``transpose`` (§4.3.2, Fig 4.6): ``Node_{i,j} -> Node_{j,i}`` for ``i != j``; n(n-1) paths.
  Node_{i,j} is row i, column j, i.e. (x=j, y=i).
* ``diagonal`` (§6.2.1, Fig 6.6): ``Node_{i,i} <-> Node_{n-1-i,n-1-i}``; for odd n the centre
  pairs with itself and does not send (NETWORK.md 3.1 [D]).
* ``pairs``: explicit rank pairs (``paths=0-5/3-1``).

Ours, the ones users of such a tool ask for (none is in the text):

* ``all-to-all``: every ordered pair of ranks.
* ``ring``: rank i -> i+1 (mod n), one direction, in row-major rank order.
* ``stencil``: 2-D nearest neighbour, each node to its (up to) four neighbours in the job's
  grid, not periodic.
* ``one-to-all``: rank 0 to every other rank.
* ``permutation``: a random permutation of the ranks (``seed=``), fixed points dropped.
"""
from __future__ import annotations

import random

from scheduler.network.wormhole import NetworkError
from scheduler.registry import Registry

PATTERNS = Registry("pattern")
MAX_PATHS = 1_000_000  # all-to-all on 1001 nodes; more would exhaust memory before it started

Pairs = list[tuple[int, int]]


def _square(name: str, w: int, h: int) -> int:
    if w != h:
        raise NetworkError(f"{name} needs a square job, got {w}x{h}")
    return w


@PATTERNS.register("stair")
def stair(w: int, h: int) -> Pairs:
    """The stair-layered model (§4.1): w-1 paths along a row, all to its last node."""
    if h != 1 or w < 2:
        raise NetworkError(f"stair needs a row of at least 2 nodes, got {w}x{h}")
    m = w - 1
    return [(m - j, m) for j in range(1, m + 1)]


@PATTERNS.register("transpose")
def transpose(w: int, h: int) -> Pairs:
    """Matrix transpose (§4.3.2): Node_{i,j} -> Node_{j,i}, i != j."""
    n = _square("transpose", w, h)
    return [(i * n + j, j * n + i) for i in range(n) for j in range(n) if i != j]


@PATTERNS.register("diagonal")
def diagonal(w: int, h: int) -> Pairs:
    """Diagonal (§6.2.1): Node_{i,i} <-> Node_{n-1-i,n-1-i}; no internal contention."""
    n = _square("diagonal", w, h)
    out = []
    for i in range(n):
        k = n - 1 - i
        if i != k:
            out.append((i * n + i, k * n + k))
    return out


@PATTERNS.register("pairs")
def pairs(w: int, h: int, paths: str = "") -> Pairs:
    """Explicit rank pairs: ``paths=0-5/3-1``."""
    out = []
    for part in filter(None, str(paths).split("/")):
        try:
            s, d = (int(x) for x in part.split("-"))
        except ValueError:
            raise NetworkError(f"pairs: {part!r} is not SRC-DST (ranks)") from None
        out.append((s, d))
    if not out:
        raise NetworkError("pairs needs paths=SRC-DST/SRC-DST...")
    return out


@PATTERNS.register("all-to-all")
def all_to_all(w: int, h: int) -> Pairs:
    """Every rank to every other rank."""
    n = w * h
    if n * (n - 1) > MAX_PATHS:
        raise NetworkError(f"all-to-all on {n} nodes is {n * (n - 1):,} paths; at most {MAX_PATHS:,}")
    return [(s, d) for s in range(n) for d in range(n) if s != d]


@PATTERNS.register("ring")
def ring(w: int, h: int) -> Pairs:
    """Rank i to rank i+1 (mod n), row-major."""
    n = w * h
    return [(i, (i + 1) % n) for i in range(n)] if n > 1 else []


@PATTERNS.register("stencil")
def stencil(w: int, h: int) -> Pairs:
    """2-D nearest neighbour: each node to its neighbours in the job's grid (not periodic)."""
    out = []
    for y in range(h):
        for x in range(w):
            for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                if 0 <= x + dx < w and 0 <= y + dy < h:
                    out.append((y * w + x, (y + dy) * w + x + dx))
    return out


@PATTERNS.register("one-to-all")
def one_to_all(w: int, h: int) -> Pairs:
    """Rank 0 to every other rank."""
    return [(0, d) for d in range(1, w * h)]


@PATTERNS.register("permutation")
def permutation(w: int, h: int, seed: int = 0) -> Pairs:
    """A random permutation of the ranks (seeded); fixed points do not send."""
    n = w * h
    perm = list(range(n))
    random.Random(int(seed)).shuffle(perm)
    return [(i, perm[i]) for i in range(n) if perm[i] != i]


def pattern_pairs(name: str, w: int, h: int, **options) -> Pairs:
    """The pattern's rank pairs, checked: ranks inside the job, no self-pairs."""
    fn = PATTERNS.get(name)
    try:
        out = fn(w, h, **options)
    except TypeError as e:
        raise NetworkError(f"pattern {name}: {e}") from None
    n = w * h
    for s, d in out:
        if not (0 <= s < n and 0 <= d < n):
            raise NetworkError(f"pattern {name}: rank pair {s}-{d} is outside a {w}x{h} job")
        if s == d:
            raise NetworkError(f"pattern {name}: rank {s} sends to itself")
    return out


__all__ = ["PATTERNS", "pattern_pairs"]
