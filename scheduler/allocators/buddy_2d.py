"""``buddy-2d``: the two-dimensional buddy system (TDB) of Li and Cheng.

Spec: restricted-size-reduction.txt section 2.1.1 ("The system is assumed to be a square
with the side length equal to a power of two. The size of a requested submesh is rounded up
to the nearest square with sides power of two. Every square of processors can form a larger
square with its three neighboring buddies."); mesh-processor-management-dissertation.txt
section 2.6 (partitions are 2^k x 2^k squares; large internal fragmentation for irregular
requests). RSR paper section 4 also relies on it: one size reduction of a TDB job quarters
its square.

Rules implemented:
- the mesh must be 2^n x 2^n; any other mesh is refused at construction (TopologyError);
- a w x h request becomes the smallest 2^k x 2^k square with 2^k >= max(w, h), a request
  for p processors the smallest 2^k x 2^k square with 4^k >= p (:meth:`normalize`);
- a 2^k square is taken from the free blocks of order k; if there is none, the smallest
  larger free block is split into four buddies repeatedly (the lower-left quarter is kept
  each time); among free blocks of one order the one with the lowest corner in row-major
  order is used, so the allocator is deterministic;
- a released square merges with its three buddies while all four are free.
Free blocks are kept per order (``_meshgrid.QuadBuddy``): allocation and release cost
O(n log b) for a 2^n mesh, independent of the block's area.
"""
from __future__ import annotations

from scheduler.allocators import register
from scheduler.allocators._meshgrid import QuadBuddy
from scheduler.allocators.base import Allocator
from scheduler.topology import Request, RequestTooLarge, Submesh, TopologyError, ceil_log2


@register("buddy-2d")
class Buddy2D(Allocator):
    """Two-dimensional buddy (Li and Cheng): 2^k x 2^k squares on a 2^n x 2^n mesh."""

    kinds = ("mesh",)

    def __init__(self, topology, **options):
        super().__init__(topology, **options)
        w, h = topology.width, topology.height
        if w != h or w & (w - 1):
            raise TopologyError(
                f"buddy-2d needs a square mesh whose side is a power of two "
                f"(e.g. mesh:16x16 or mesh:32x32), not {topology}"
            )
        self.n = w.bit_length() - 1
        self._buddy = QuadBuddy(w, h, [(0, 0, self.n)])

    def normalize(self, request: Request) -> Request:
        if request.kind == "submesh":
            self.topology.normalize(request)  # a side longer than the mesh: RequestTooLarge
            k = ceil_log2(max(request.w, request.h))
        else:
            p = request.processors_needed
            if p > self.topology.size:
                raise RequestTooLarge(f"request {request} needs {p} nodes; {self.topology} has {self.topology.size}")
            k = (ceil_log2(p) + 1) // 2
        side = 1 << k
        if request.kind == "submesh" and request.w == side and request.h == side:
            return request
        return Request.submesh(side, side)

    def _allocate(self, request: Request):
        k = request.w.bit_length() - 1
        xy = self._buddy.take(k)
        if xy is None:
            return None
        return (Submesh(xy[0], xy[1], request.w, request.w),)

    def _release(self, pieces) -> None:
        for p in pieces:
            self._buddy.give(p.x, p.y, p.w.bit_length() - 1)

    def free_nodes(self) -> frozenset:
        return self._buddy.free_nodes()
