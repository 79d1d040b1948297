"""``naive``: the lowest free node ids, no shape.

This is the flat machine of most batch simulators (and of AccaSim's first fit): a request
for p processors (a k-cube counts as 2^k, a w x h submesh as w*h) takes the p free nodes
with the smallest ids — on a mesh that is row-major order. A processor count is taken as
it is, not rounded up to a cube or submesh: the machine is flat. The allocation is one
scattered piece.
"""
from __future__ import annotations

from scheduler.allocators import register
from scheduler.allocators.base import Allocator
from scheduler.topology import Request, RequestTooLarge, Scattered


@register("naive")
class Naive(Allocator):
    """Lowest free node ids (row-major on a mesh), scattered; works on any topology."""

    kinds = ("hypercube", "mesh")
    scattered = True
    complete_recognition = True

    def __init__(self, topology, **options):
        super().__init__(topology, **options)
        # The free ids kept sorted: the lowest p are one slice, a release one sort of two
        # sorted runs (timsort merges them in linear time; both run in C), cheaper than a
        # heap operation per node.
        self._free = list(range(topology.size))

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
