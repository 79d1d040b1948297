"""``first-fit``: Zhu's first-fit submesh allocation for 2-D meshes.

Spec: restricted-size-reduction.txt section 2.1.1 ("Perfect Recognition": Zhu's first-fit
and best-fit algorithms locate a requested submesh whenever one exists, in O(MN) time and
space); mesh-processor-management-dissertation.txt section 2.6 (FF versus BF, Zhu [68]).

Zhu's algorithm keeps a busy array of the mesh; for a w x h request it marks in a coverage
array every node that cannot be the base (lower-left corner) of a free w x h submesh -- the
nodes whose submesh would overlap a busy node, plus the "reject area" near the right and top
edges -- and scans it row by row from (0, 0); the first uncovered node is the base. Here the
busy array is a bitmap packed into one integer (see ``_meshgrid.MeshBits``) and the
complement of the coverage array is computed for all bases at once with shifts and ANDs;
the lowest set bit is exactly the first base of Zhu's row-major scan (rows from y = 0
upward, left to right within a row). Per request this costs O(log w + log h) operations on
a W*H-bit integer.

Orientation: the request is allocated as asked (w columns by h rows) and never rotated;
neither the RSR paper nor the dissertation credits Zhu with rotation (the dissertation names
changing the orientation as Ding and Bhuyan's later improvement of frame sliding).
"""
from __future__ import annotations

from scheduler.allocators import register
from scheduler.allocators._meshgrid import MeshBits
from scheduler.allocators.base import Allocator
from scheduler.topology import Request, Submesh


@register("first-fit")
class FirstFit(Allocator):
    """Zhu's first fit: the first free w x h submesh in row-major order of its base."""

    kinds = ("mesh",)
    complete_recognition = True

    def __init__(self, topology, **options):
        super().__init__(topology, **options)
        self._grid = MeshBits(topology.width, topology.height)

    def _choose(self, bases: int, w: int, h: int) -> tuple[int, int] | None:
        """The base to use among ``bases`` (a non-empty bitmap of free bases), or None."""
        return self._grid.first(bases)

    def _allocate(self, request: Request):
        w, h = request.w, request.h
        if w * h > self.free_count:
            return None
        bases = self._grid.bases(w, h)
        if not bases:
            return None
        xy = self._choose(bases, w, h)
        if xy is None:
            return None
        x, y = xy
        self._grid.take(x, y, w, h)
        return (Submesh(x, y, w, h),)

    def _release(self, pieces) -> None:
        for p in pieces:
            self._grid.give(p.x, p.y, p.w, p.h)

    def free_nodes(self) -> frozenset:
        return self._grid.free_nodes()
