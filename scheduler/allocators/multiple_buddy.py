"""``multiple-buddy``: the non-contiguous Multiple Buddy Strategy (MBS) of Liu et al.

Spec: mesh-processor-management-dissertation.txt section 2.6 (Liu et al. [7]: a
non-contiguous strategy that may give a job processors scattered across the machine) and
section 6.2.5 ("The strategy divides the request of the job into smaller square submeshes
whose sides have sizes of 2^k when there are no contiguous partitions that are big enough
for the required submesh. At each time of division, the scattered allocator should decide
which among the four equal buddies is divided further.").

Rules implemented (Liu et al.'s MBS, which the dissertation summarizes):
- The mesh is cut once into power-of-two squares, as large as possible
  (``_meshgrid.power_of_two_squares``), so any W x H mesh is served; each square is the
  root of a 2-D buddy system (four buddies make the next larger square).
- A job asks for p processors (a w x h request asks for p = w*h; it is not rounded up).
  If fewer than p nodes are free the job waits (None). Otherwise p is written in base 4,
  p = sum d_i 4^i with 0 <= d_i <= 3, i.e. d_i squares of side 2^i, and the squares are
  taken from the largest down. A 2^i square comes from the free blocks of order i, or by
  splitting the smallest larger free block (buddy rule). When no block of order >= i is
  free, each square still missing is divided into its four 2^(i-1) buddies and added to
  the next order's demand.
- Ties: the lowest free block in row-major order of its corner; when a larger block is
  split the lower-left quarter is used and the other three stay free. The dissertation's
  communication-aware choice of which buddy to divide (section 6.2.4) needs the job's
  communication rate, which a request does not carry, so it is not applied.

So a request that is a single 4^i (e.g. 16 = one 4x4) is contiguous whenever such a square
is free, and an allocation always holds exactly p nodes: no internal fragmentation, and
every request that fits the free count succeeds. The pieces are Submesh squares.
"""
from __future__ import annotations

from scheduler.allocators import register
from scheduler.allocators._meshgrid import QuadBuddy, power_of_two_squares
from scheduler.allocators.base import Allocator
from scheduler.topology import Request, RequestTooLarge, Submesh


@register("multiple-buddy")
class MultipleBuddy(Allocator):
    """Liu et al.'s multiple buddy: p processors as base-4 digits of 2^k x 2^k squares."""

    kinds = ("mesh",)
    scattered = True
    complete_recognition = True

    def __init__(self, topology, **options):
        super().__init__(topology, **options)
        self._buddy = QuadBuddy(topology.width, topology.height,
                                power_of_two_squares(topology.width, topology.height))

    def normalize(self, request: Request) -> Request:
        if request.kind == "submesh":
            self.topology.normalize(request)  # a side longer than the mesh: RequestTooLarge
            return request
        p = request.processors_needed
        if p > self.topology.size:
            raise RequestTooLarge(f"request {request} needs {p} nodes; {self.topology} has {self.topology.size}")
        return request if request.kind == "processors" else Request.processors(p)

    @staticmethod
    def squares(p: int) -> list[int]:
        """How many 2^i x 2^i squares p splits into at first: the base-4 digits of p."""
        digits = []
        while p:
            p, d = divmod(p, 4)
            digits.append(d)
        return digits

    def _allocate(self, request: Request):
        p = request.processors_needed
        if p > self.free_count:
            return None
        need = self.squares(p)
        pieces = []
        for i in range(len(need) - 1, -1, -1):
            missing = need[i]
            while missing:
                xy = self._buddy.take(i)
                if xy is None:
                    break
                pieces.append(Submesh(xy[0], xy[1], 1 << i, 1 << i))
                missing -= 1
            if missing:
                # p <= free nodes, so 1x1 blocks never run out: only i > 0 gets here.
                assert i > 0, "free count and buddy free blocks disagree"
                need[i - 1] += 4 * missing
        return tuple(pieces)

    def _release(self, pieces) -> None:
        for p in pieces:
            self._buddy.give(p.x, p.y, p.w.bit_length() - 1)

    def free_nodes(self) -> frozenset:
        return self._buddy.free_nodes()
