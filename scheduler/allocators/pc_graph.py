"""``pc-graph``: Wang and Yang's prime cube graph (complete recognition).

Spec: lazy-scheduling-hypercube-journal.txt section 2.1 ("represent available processors in
the system by means of a prime cube (PC) graph. Subcubes are allocated efficiently by
manipulating the PC-graph ... Relationship between free subcubes are maintained ... complete
subcube recognition ability"); the original is Wang and Yang, ICPP 1991.

A prime cube is a free subcube contained in no larger free subcube (the prime implicants of
the free nodes read as a Boolean function). The PC-graph has one vertex per prime cube and an
edge between two prime cubes that share nodes. Every free k-cube lies inside some prime cube,
so a k-request can be met iff some prime cube has dimension >= k: complete recognition.

Readings chosen (the summary gives the structure, not the selection rule):
- the prime cube used is the smallest one of dimension >= k (best fit, keeping large free
  cubes), then the one of least degree in the PC-graph (it overlaps the fewest other prime
  cubes, so carving it destroys the fewest), then the lowest (base, mask);
- inside it the k-cube is carved one dimension at a time: each step fixes the free dimension
  and value that leave the fewest neighbouring prime cubes intersected, preferring the
  highest dimension and the value 0 on ties, so that on an empty machine the choice is the
  buddy system's (a k-cube on the k lowest address bits);
- the graph is updated incrementally, as in the paper, not rebuilt. Allocation of C: a prime
  cube P that meets C is replaced by its maximal parts outside C (P with one dimension that
  is free in P and fixed in C set to the opposite of C's bit), and parts contained in
  another prime cube are dropped. Release of C: C joins the set and iterated consensus (two
  cubes that conflict in exactly one fixed bit imply the cube that frees it) with absorption
  restores exactly the prime cubes of the larger free set. Edges are read off the cube
  strings when needed (two cubes meet iff they agree on every bit fixed in both).
"""
from __future__ import annotations

from scheduler.allocators import register
from scheduler.allocators.base import Allocator
from scheduler.topology import Subcube


def _meets(m1: int, b1: int, m2: int, b2: int) -> bool:
    return not (b1 ^ b2) & ~m1 & ~m2


def _within(m1: int, b1: int, m2: int, b2: int) -> bool:
    """Cube 1 lies inside cube 2."""
    return m1 & ~m2 == 0 and (b1 & ~m2) == b2


@register("pc-graph")
class PCGraph(Allocator):
    """Wang and Yang: the prime cube graph of the free nodes; best fit, least overlap."""

    kinds = ("hypercube",)
    complete_recognition = True

    def __init__(self, topology, **options):
        super().__init__(topology, **options)
        n = topology.n
        self._full = (1 << n) - 1
        # prime cubes as (mask, base) -> dimension
        self._primes: dict[tuple[int, int], int] = {(self._full, 0): n}

    @property
    def prime_cubes(self) -> list[Subcube]:
        n = self.topology.n
        return sorted((Subcube(n, m, b) for m, b in self._primes), key=lambda s: (-s.dim, s.base, s.mask))

    def edges(self) -> list[tuple[Subcube, Subcube]]:
        """The PC-graph's edges: pairs of prime cubes that share nodes."""
        pcs = self.prime_cubes
        return [(a, b) for i, a in enumerate(pcs) for b in pcs[i + 1:]
                if _meets(a.mask, a.base, b.mask, b.base)]

    # ------------------------------------------------------------------ allocation

    def _allocate(self, request):
        k = request.k
        primes = self._primes
        j = min((d for d in primes.values() if d >= k), default=None)
        if j is None:
            return None
        best = None
        for (m, b), d in primes.items():
            if d != j:
                continue
            deg = sum(1 for (m2, b2) in primes if _meets(m, b, m2, b2)) - 1
            key = (deg, b, m)
            if best is None or key < best:
                best = key
        _, base, mask = best
        neighbours = [(m2, b2) for (m2, b2) in primes
                      if (m2, b2) != (mask, base) and _meets(mask, base, m2, b2)]
        for _ in range(j - k):
            choice = None
            m, d = mask, 0
            while m:
                if m & 1:
                    bit = 1 << d
                    for v in (0, bit):
                        cm, cb = mask & ~bit, base | v
                        hit = sum(1 for (m2, b2) in neighbours if _meets(cm, cb, m2, b2))
                        key = (hit, -d, v)
                        if choice is None or key < choice[0]:
                            choice = (key, cm, cb)
                m >>= 1
                d += 1
            _, mask, base = choice
            neighbours = [(m2, b2) for (m2, b2) in neighbours if _meets(mask, base, m2, b2)]
        self._carve(mask, base)
        return (Subcube(self.topology.n, mask, base),)

    def _carve(self, cm: int, cb: int) -> None:
        primes = self._primes
        full = self._full
        hit = [key for key in primes if _meets(cm, cb, *key)]
        parts: dict[tuple[int, int], int] = {}
        for (m, b) in hit:
            del primes[(m, b)]
            split = m & ~cm  # free in P, fixed in C: P with that bit opposite to C lies outside C
            d = 0
            while split:
                if split & 1:
                    bit = 1 << d
                    pm = m & ~bit
                    pb = b | (~cb & bit)
                    parts[(pm, pb)] = (pm & full).bit_count()
                split >>= 1
                d += 1
        # keep the maximal parts: untouched primes stay prime; a part inside another part or
        # inside an untouched prime is not prime
        kept = list(parts.items())
        for (pm, pb), dim in kept:
            # equal parts share one key, so a part inside another is strictly smaller
            if any(odim > dim and _within(pm, pb, *other) for other, odim in kept):
                continue
            if any(_within(pm, pb, m2, b2) for (m2, b2) in primes):
                continue
            primes[(pm, pb)] = dim

    # ------------------------------------------------------------------ release

    def _release(self, pieces):
        for p in pieces:
            self._add(p.mask, p.base)

    def _add(self, cm: int, cb: int) -> None:
        primes = self._primes
        full = self._full
        self._insert((cm, cb), (cm & full).bit_count())
        queue = [(cm, cb)]
        while queue:
            x = queue.pop()
            if x not in primes:
                continue  # absorbed by a larger cube found meanwhile
            xm, xb = x
            for (ym, yb) in list(primes):
                conflict = (xb ^ yb) & ~xm & ~ym & full
                if not conflict or conflict & (conflict - 1):
                    continue  # consensus needs exactly one conflicting fixed bit
                zm = (xm & ym) | conflict
                zb = (xb | yb) & ~zm
                if any(_within(zm, zb, m2, b2) for (m2, b2) in primes):
                    continue
                self._insert((zm, zb), (zm & full).bit_count())
                queue.append((zm, zb))
                if x not in primes:
                    break

    def _insert(self, key: tuple[int, int], dim: int) -> None:
        primes = self._primes
        for other in [o for o in primes if _within(*o, *key)]:
            del primes[other]
        primes[key] = dim

    def free_nodes(self) -> frozenset:
        n = self.topology.n
        out = set()
        for m, b in self._primes:
            out.update(Subcube(n, m, b).nodes())
        return frozenset(out)
