"""``frame-sliding``: Chuang and Tzeng's frame sliding submesh allocation for 2-D meshes.

Spec: restricted-size-reduction.txt section 2.1.1 ("The size of the required submesh of a
job is called a frame ... The algorithm slides the frame across the system at
non-overlapping locations to examine for a free submesh", O(MN/mn) for an m x n job on an
M x N mesh); mesh-processor-management-dissertation.txt section 2.6 (frame sliding
allocates exactly the requested shape, so no internal fragmentation, but its first-fit
nature leaves external fragmentation).

Reading chosen. "Non-overlapping locations" means the frame moves with a horizontal stride
of w and a vertical stride of h. The texts do not say where the sliding starts; we follow
Chuang and Tzeng's original: at the lowest, leftmost free node (x0, y0) (first free node in
row-major order from (0, 0)), sliding left to right along a row of frames and then up by h.
So the frames examined are those with base x = x0 (mod w), y = y0 (mod h); frames of that
lattice left of x0 in row y0 or below it contain busy nodes, so including them changes
nothing. Because of the strides, frame sliding can miss a free submesh that first fit finds
(see the tests) -- this is the recognition loss the papers compare against.

The frame is tested in the orientation asked (w x h) and never rotated: the dissertation
names rotation as Ding and Bhuyan's later improvement of this strategy.

All frames of the lattice are tested at once on the packed free bitmap (``_meshgrid``);
the lowest set bit of (free bases AND lattice) is the first free frame in sliding order.
"""
from __future__ import annotations

from scheduler.allocators import register
from scheduler.allocators.first_fit import FirstFit


@register("frame-sliding")
class FrameSliding(FirstFit):
    """Frame sliding: frames at strides (w, h) from the lowest-leftmost free node."""

    complete_recognition = False

    def _choose(self, bases: int, w: int, h: int):
        grid = self._grid
        x0, y0 = grid.first(grid.free)  # bases is non-empty, so some node is free
        frames = bases & grid.lattice(w, h, x0 % w, y0 % h)
        return grid.first(frames) if frames else None
