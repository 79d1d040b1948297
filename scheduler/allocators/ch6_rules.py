"""The dissertation's chapter-6 placement rules as allocator variants: ``naive-ch6`` and
``multiple-buddy-ch6`` (NETWORK.md 6.4; §6.2.5, §6.3, §9.1). The rules are the text's; making
them allocators, and every operational reading below, is ours.

Why variants with their own names, and not an option of ``naive`` and ``multiple-buddy``: a
name is what every front end already takes (``--allocator`` of ``mcemu simulate``, ``mcemu
up``, the experiments' ``allocator`` parameter), ``mcemu policies`` lists it with its one-line
summary, and the contract tests pick it up by itself; an option would need a new
``--alloc-param`` path through the stack, the daemon and the experiment points for one
parameter. The threshold is a constructor option (``allocators.create("naive-ch6", topo,
threshold=50)``), 25 us by default; so is ``naive-ch6``'s ``sides``.

What the rules need, the request carries (:mod:`scheduler.comm_profile`): the new job's pattern and
MTBS are on its :class:`~scheduler.comm_profile.CommRequest`, the running jobs' on the requests of the
allocator's own live allocations. Rates are the declared ones (the text: profiled history,
§6.2.5). A request without a profile (or a job that does not communicate) is allocated exactly
as the base policy does, so every plain run is unchanged.

``naive-ch6`` (R2 + R3, §6.2.5): "if the communication rate of the allocated job is high, then
it would be better not to allocate the processor to the job [...] allocating the job to next
possible places in a row major, or do not allocate the job in such a scattered way if there
are no other possibilities". Our reading: during naive's row-major scan a free processor is
skipped when taking it would make the new job *surround* a protected running job J, i.e. the
new job would hold processors on both sides of J in J's rows: to the left of J's nodes in one
of J's rows and to the right of J's nodes in one of J's rows (per row: J's leftmost and
rightmost node in that row; processors between them count for no side). Its XY paths would
then cross J's row channels (NETWORK.md 6.4's reading, ``sides="rows"``). By default
(``sides="rows+columns"``, our generalisation) the same holds along J's columns: above and
below J in its columns, where the new job's Y segments would cross J. A naive job is a band of
rows, and the jobs around it are mostly above and below it. J is protected when it is a
high-rate job (MTBS < threshold) and the new job does not communicate more (R2: the one that
communicates more belongs outside); at equal MTBS, when the new job's pattern has no higher
internal competing level than J's (R3: partition the job with the higher level). If fewer than
p processors remain, the job waits. Ranks: row-major order of the nodes, as ``naive``.

``multiple-buddy-ch6`` (R4, §6.2.4-6.2.5): MBS's pieces are unchanged (the free 2^k squares
it would take); the rule chooses how the logical job is divided over them, "which among the
four equal buddies is divided further" and which logical block runs on which piece. The
candidates: row-major order of the nodes (MBS's own mapping, NETWORK.md 8.23), the logical
rows and the logical columns filled piece by piece, and the logical grid's Z (Morton) order
under its eight symmetries filled piece by piece, largest piece first (the Z order keeps
aligned logical squares together, so a 4^i piece gets a logical 2^i x 2^i block; the
symmetries choose which logical quadrant is divided further). When the job's MTBS >=
threshold ("not too high", default 25 us, NETWORK.md 6.4 [D]) the candidate with the fewest
logical paths crossing between pieces wins (the overall congestion factor it adds); below it,
the one whose crossing paths load the busiest physical row or column least (X segments run in
the source's row, Y segments in the destination's column), then the fewest crossings. Ties go
to the earlier candidate, MBS's own mapping first.
"""
from __future__ import annotations

import math

from scheduler.allocators import register
from scheduler.allocators.multiple_buddy import MultipleBuddy
from scheduler.allocators.naive import Naive
from scheduler.comm_profile import CommProfile, comm_of, logical_shape
from scheduler.topology import Scattered, Submesh


def _threshold(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (value >= 0 and math.isfinite(value)):
        raise ValueError(f"threshold must be microseconds >= 0, got {value!r}")
    return float(value)


def protects(running: CommProfile, running_shape, new: CommProfile, new_shape, threshold: float) -> bool:
    """R2 + R3: may a job communicating as ``new`` not surround one running as ``running``?"""
    if running.mtbs >= threshold:  # not a high-rate job
        return False
    if new.mtbs != running.mtbs:  # R2: the rate first
        return new.mtbs > running.mtbs
    return not new.internal_level(*new_shape) > running.internal_level(*running_shape)  # R3


@register("naive-ch6")
class NaiveCh6(Naive):
    """Naive with the chapter-6 rules R2+R3: do not surround a job that communicates more."""

    kinds = ("mesh",)

    def __init__(self, topology, threshold: float = 25.0, sides: str = "rows+columns", **options):
        super().__init__(topology, **options)
        self.threshold = _threshold(threshold)
        if sides not in ("rows", "rows+columns"):
            raise ValueError(f"sides must be 'rows' or 'rows+columns', got {sides!r}")
        self.sides = sides
        self._spans: dict = {}  # allocation serial -> guards (see _spans_of)

    def _spans_of(self, a) -> list:
        """A running job's guards: ``(axis, spans)`` with ``spans[line] = (lo, hi)``, its first
        and last node along each row (axis 0: the x extent of row y) and, with
        ``rows+columns``, along each column (axis 1: the y extent of column x)."""
        got = self._spans.get(a.serial)
        if got is None:
            width = self.topology.width
            rows: dict = {}
            cols: dict = {}
            for n in a.nodes:
                y, x = divmod(n, width)
                lo, hi = rows.get(y, (x, x))
                rows[y] = (min(lo, x), max(hi, x))
                lo, hi = cols.get(x, (y, y))
                cols[x] = (min(lo, y), max(hi, y))
            got = self._spans[a.serial] = [(0, rows)] + ([(1, cols)] if self.sides != "rows" else [])
        return got

    def _guards(self, request, comm: CommProfile) -> list:
        """``(axis, spans)`` of the running jobs this job may not surround."""
        topo, out = self.topology, []
        shape = logical_shape(request, topo)
        for a in self._live.values():
            other = comm_of(a.request)
            if other is not None and protects(other, logical_shape(a.request, topo), comm, shape, self.threshold):
                out.extend(self._spans_of(a))
        return out

    def _allocate(self, request):
        comm = comm_of(request)
        guards = self._guards(request, comm) if comm is not None else None
        if not guards:
            return super()._allocate(request)
        p, free, width = request.processors_needed, self._free, self.topology.width
        if p > len(free):
            return None
        taken: list = []
        sides = [0] * len(guards)  # per guard: 1 = holds a processor before the job, 2 = after it
        for n in free:
            y, x = divmod(n, width)
            marks = []
            for g, (axis, spans) in enumerate(guards):
                line, pos = (y, x) if axis == 0 else (x, y)
                s = spans.get(line)
                if s is None or s[0] <= pos <= s[1]:
                    continue
                bit = 1 if pos < s[0] else 2
                if sides[g] & (3 - bit):  # the other side is taken: this one would surround
                    break
                marks.append((g, bit))
            else:
                for g, bit in marks:
                    sides[g] |= bit
                taken.append(n)
                if len(taken) == p:
                    break
        if len(taken) < p:
            return None  # the job waits
        chosen = set(taken)
        self._free = [n for n in free if n not in chosen]
        return (Scattered(frozenset(taken)),)

    def release(self, allocation) -> None:
        super().release(allocation)
        self._spans.pop(allocation.serial, None)


def _morton(x: int, y: int) -> int:
    z, i = 0, 0
    while x or y:
        z |= (x & 1) << (2 * i) | (y & 1) << (2 * i + 1)
        x, y, i = x >> 1, y >> 1, i + 1
    return z


def _symmetries(w: int, h: int):
    yield lambda x, y: (x, y)
    yield lambda x, y: (w - 1 - x, y)
    yield lambda x, y: (x, h - 1 - y)
    yield lambda x, y: (w - 1 - x, h - 1 - y)
    yield lambda x, y: (y, x)
    yield lambda x, y: (y, w - 1 - x)
    yield lambda x, y: (h - 1 - y, x)
    yield lambda x, y: (h - 1 - y, w - 1 - x)


@register("multiple-buddy-ch6")
class MultipleBuddyCh6(MultipleBuddy):
    """Multiple buddy with the chapter-6 rule R4: divide the job where few paths cross."""

    def __init__(self, topology, threshold: float = 25.0, **options):
        super().__init__(topology, **options)
        self.threshold = _threshold(threshold)
        self._orders: dict = {}  # allocation serial -> chosen rank order

    def release(self, allocation) -> None:
        super().release(allocation)
        self._orders.pop(allocation.serial, None)

    def rank_order(self, allocation) -> tuple:
        comm = comm_of(allocation.request)
        if comm is None or len(allocation.pieces) < 2:
            return super().rank_order(allocation)
        order = self._orders.get(allocation.serial)
        if order is None:
            order = self._orders[allocation.serial] = self._choose(allocation, comm)
        return order

    def candidates(self, allocation) -> list[tuple]:
        """The rank orders R4 chooses among (module docstring), MBS's own first."""
        w, h = logical_shape(allocation.request, self.topology)
        width, pieces = self.topology.width, allocation.pieces
        out = [tuple(sorted(allocation.nodes))]
        row_slots = [n for p in pieces for n in p.nodes_in(width)]

        def local_z(p: Submesh):
            return sorted(((xx, yy) for yy in range(p.h) for xx in range(p.w)), key=lambda c: _morton(*c))

        z_slots = [(p.y + yy) * width + p.x + xx for p in pieces for xx, yy in local_z(p)]
        logical = [(x, y) for y in range(h) for x in range(w)]
        fills = [(range(w * h), row_slots), ([y * w + x for x in range(w) for y in range(h)], row_slots)]
        for t in _symmetries(w, h):
            fills.append((sorted(range(w * h), key=lambda r, t=t: _morton(*t(*logical[r]))), z_slots))
        for ranks, slots in fills:
            node = [0] * (w * h)
            for r, n in zip(ranks, slots):
                node[r] = n
            cand = tuple(node)
            if cand not in out:
                out.append(cand)
        return out

    def cost(self, allocation, order: tuple, comm: CommProfile) -> tuple:
        """(crossing paths, busiest row or column of them), in the order R4 compares them."""
        w, h = logical_shape(allocation.request, self.topology)
        width = self.topology.width
        piece = {}
        for i, p in enumerate(allocation.pieces):
            for n in p.nodes_in(width):
                piece[n] = i
        rows: dict = {}
        cols: dict = {}
        crossing = 0
        for s, d in comm.pairs(w, h):
            a, b = order[s], order[d]
            if piece[a] != piece[b]:
                crossing += 1
                rows[a // width] = rows.get(a // width, 0) + 1
                cols[b % width] = cols.get(b % width, 0) + 1
        spread = max(max(rows.values(), default=0), max(cols.values(), default=0))
        return (crossing, spread) if comm.mtbs >= self.threshold else (spread, crossing)

    def _choose(self, allocation, comm: CommProfile) -> tuple:
        cands = self.candidates(allocation)
        return min(cands, key=lambda c: self.cost(allocation, c, comm))


__all__ = ["MultipleBuddyCh6", "NaiveCh6", "protects"]
