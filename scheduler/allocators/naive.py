"""``naive``: the lowest free node ids, no shape.

This is the flat machine of most batch simulators (and of AccaSim's first fit): a request
for p processors (a k-cube counts as 2^k, a w x h submesh as w*h) takes the p free nodes
with the smallest ids — on a mesh that is row-major order. A processor count is taken as
it is, not rounded up to a cube or submesh: the machine is flat. The allocation is one
scattered piece.
"""
from __future__ import annotations

from scheduler.allocators import register
from scheduler.allocators.base import Allocation, AllocationError, Allocator
from scheduler.topology import Request, RequestTooLarge, Scattered

# Scattered(nodes) without the frozen dataclass __init__ (its one slot set through the
# descriptor): the same value, made at every allocation
_SET_NODES = Scattered.__dict__["node_ids"].__set__


class _Lazy(Allocation):
    """An allocation of the fast path: its one scattered piece is made when first read.

    Issue 18: the piece (a frozenset of its node ids) cost a quarter of a NASA replay's
    allocations and is seldom read (the node lists of ``--jobs-out``, a node view); ``ids``
    keeps the node ids, sorted. The same value as an eager Allocation once read."""

    __slots__ = ("ids", "_pieces")

    @property
    def pieces(self) -> tuple:
        if self._pieces is None:
            piece = object.__new__(Scattered)
            _SET_NODES(piece, frozenset(self.ids))
            self._pieces = (piece,)
        return self._pieces

    @pieces.setter
    def pieces(self, value) -> None:  # copy and pickle set every slot back
        self._pieces = value


@register("naive")
class Naive(Allocator):
    """Lowest free node ids (row-major on a mesh), scattered; works on any topology."""

    kinds = ("hypercube", "mesh")
    scattered = True
    complete_recognition = True

    def __init__(self, topology, **options):
        super().__init__(topology, **options)
        # The free ids kept sorted: the lowest p are one slice, a release a slice assignment
        # or one sort of two sorted runs (timsort merges them in linear time; both run in C),
        # cheaper than a heap operation per node.
        self._free = list(range(topology.size))
        # allocate and release: the base class's bookkeeping with _allocate and _release
        # inlined (the same result, serial and errors), unless a subclass changes them
        cls = type(self)
        if (cls._allocate is Naive._allocate and cls._release is Naive._release
                and cls.normalize is Naive.normalize and cls.allocate is Allocator.allocate
                and cls.release is Allocator.release):
            self.allocate, self.release = self._fast_allocate, self._fast_release
            self._with_count: dict = {}

    def _fast_allocate(self, request: Request, _new=object.__new__):
        rp = self._with_count.get(request)  # (normalized request, its processors)
        if rp is None:
            req = self._normalized.get(request)
            if req is None:
                req = self._normalized[request] = self.normalize(request)
            rp = self._with_count[request] = (req, req.processors_needed)
        req, p = rp
        free = self._free
        if p > len(free):
            return None
        ids = free[:p]
        del free[:p]
        # Allocation(((Scattered(frozenset(ids)),), req, p, self, serial) with its piece made
        # only when read (_Lazy) and without the call to __init__
        a = _new(_Lazy)
        a.ids, a._pieces, a.request, a.asked, a.size, a.folds, a.owner, a._nodes = ids, None, req, req, p, 0, self, None
        a.serial = serial = next(self._serials)
        self._live[serial] = a
        self.used += p
        return a

    def _fast_release(self, allocation) -> None:
        if not isinstance(allocation, Allocation) or allocation.owner is not self:
            raise AllocationError(f"{allocation!r} was not made by this {self.name} allocator")
        serial = allocation.serial
        if self._live.pop(serial, None) is None:
            raise AllocationError(f"{allocation!r} is not allocated (released twice?)")
        # the allocation's ids, still sorted: put back before or after the free ones when they
        # all are (a slice assignment), else merged by a sort (measured: the sort of the whole
        # free list was a fifth of a NASA replay)
        if type(allocation) is _Lazy:
            ids = allocation.ids
        else:  # folded by size reduction: an Allocation of the same pieces
            ids = sorted(n for piece in allocation.pieces for n in piece.node_ids)
        free = self._free
        if not free or ids[-1] < free[0]:
            free[:0] = ids
        elif ids[0] > free[-1]:
            free += ids
        else:
            free += ids
            free.sort()
        self.used -= allocation.size

    def normalize(self, request: Request) -> Request:
        if request.kind != "processors":
            self.topology.normalize(request)  # a shape must still fit the machine
        p = request.processors_needed
        if p > self.topology.size:
            raise RequestTooLarge(f"request {request} needs {p} nodes; {self.topology} has {self.topology.size}")
        return request

    def _allocate(self, request: Request):
        p = request.processors_needed
        free = self._free
        if p > len(free):
            return None
        taken = free[:p]
        del free[:p]
        return (Scattered(frozenset(taken)),)

    def _release(self, pieces):
        free = self._free
        for piece in pieces:
            free.extend(piece.node_ids)
        free.sort()

    def free_nodes(self) -> frozenset:
        return frozenset(self._free)
