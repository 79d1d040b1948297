"""2-D mesh allocators: first-fit, best-fit, frame-sliding, buddy-2d, multiple-buddy.

Hand-worked examples follow the rules of the papers (RSR paper 2.1.1, dissertation 2.6 and
6.2.5; readings in each module's docstring). The hypothesis tests compare each contiguous
allocator with a literal, node-by-node reference implementation of its rule.
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from scheduler import allocators
from scheduler.allocators._meshgrid import power_of_two_squares
from scheduler.topology import Request, RequestTooLarge, Submesh, TopologyError, parse_topology

MESH_ALLOCATORS = ["first-fit", "best-fit", "frame-sliding", "buddy-2d", "multiple-buddy"]


def occupy(alloc, busy):
    """Bring ``alloc`` to the state where exactly the cells ``busy`` (x, y) are allocated."""
    topo = alloc.topology
    held = []
    while alloc.free_count:
        held.append(alloc.allocate(Request.submesh(1, 1)))
    kept = []
    for a in held:
        (p,) = a.pieces
        if (p.x, p.y) in busy:
            kept.append(a)
        else:
            alloc.release(a)
    assert alloc.free_nodes() == frozenset(range(topo.size)) - {y * topo.width + x for x, y in busy}
    return kept


def base(a):
    (p,) = a.pieces
    return (p.x, p.y)


# ----------------------------------------------------------------------- references


def free_rect(free, x, y, w, h):
    return all((xx, yy) in free for xx in range(x, x + w) for yy in range(y, y + h))


def ref_bases(W, H, busy, w, h):
    free = {(x, y) for x in range(W) for y in range(H)} - set(busy)
    return [(x, y) for y in range(H - h + 1) for x in range(W - w + 1) if free_rect(free, x, y, w, h)]


def ref_first_fit(W, H, busy, w, h):
    b = ref_bases(W, H, busy, w, h)
    return b[0] if b else None


def ref_best_fit(W, H, busy, w, h):
    cands = ref_bases(W, H, busy, w, h)
    if not cands:
        return None
    cs = set(cands)
    busy_nb = {c: sum((c[0] + dx, c[1] + dy) not in cs for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)))
               for c in cands}
    most = max(busy_nb.values())
    return next(c for c in cands if busy_nb[c] == most)  # cands are in row-major order


def ref_frame_sliding(W, H, busy, w, h):
    free = {(x, y) for x in range(W) for y in range(H)} - set(busy)
    if not free:
        return None
    y0, x0 = min((y, x) for x, y in free)
    y = y0
    while y + h <= H:
        x = x0 if y == y0 else x0 % w
        while x + w <= W:
            if free_rect(free, x, y, w, h):
                return (x, y)
            x += w
        y += h
    return None


# ----------------------------------------------------------------------- first fit


def test_first_fit_packs_row_major_from_origin():
    ff = allocators.create("first-fit", "mesh:8x8")
    got = [base(ff.allocate(Request.submesh(3, 2))) for _ in range(3)]
    # Row 0 holds two 3x2 (x = 0, 3); x = 6 would stick out, so the third goes up to y = 2.
    assert got == [(0, 0), (3, 0), (0, 2)]
    a = ff.allocate(Request.submesh(2, 6))
    assert base(a) == (6, 0)  # the 2-wide column right of the first two jobs
    assert a.nodes == {y * 8 + x for x in (6, 7) for y in range(6)}


def test_first_fit_finds_any_free_submesh_and_does_not_rotate():
    ff = allocators.create("first-fit", "mesh:4x4")
    # Only row 3 is free: a 4x1 fits, a 1x4 (the same shape rotated) does not.
    occupy(ff, {(x, y) for x in range(4) for y in range(3)})
    assert ff.allocate(Request.submesh(1, 4)) is None
    assert base(ff.allocate(Request.submesh(4, 1))) == (0, 3)


# ----------------------------------------------------------------------- frame sliding


def test_frame_sliding_misses_a_submesh_first_fit_finds():
    # 4x2 mesh, (0,0) and (1,1) busy. The only free 2x2 is at (2,0). Frame sliding starts at
    # the lowest-leftmost free node (1,0) and moves by the frame width 2: frame (1,0) holds the
    # busy (1,1) and frame (3,0) sticks out of the mesh, so it reports no fit.
    busy = {(0, 0), (1, 1)}
    fs = allocators.create("frame-sliding", "mesh:4x2")
    ff = allocators.create("first-fit", "mesh:4x2")
    occupy(fs, busy)
    occupy(ff, busy)
    before = fs.free_nodes()
    assert fs.allocate(Request.submesh(2, 2)) is None
    assert fs.free_nodes() == before
    assert base(ff.allocate(Request.submesh(2, 2))) == (2, 0)


def test_frame_sliding_strides_from_first_free_node():
    fs = allocators.create("frame-sliding", "mesh:6x4")
    occupy(fs, {(0, 0)})
    # Frames of 2x2 lie at x = 1, 3 (x = 5 sticks out), y = 0, 2: the first is (1,0).
    assert base(fs.allocate(Request.submesh(2, 2))) == (1, 0)
    # Now row 0 is free from x = 3: frames of 3x1 at x = 0 and 3 on rows 0..3 -> (3,0).
    assert base(fs.allocate(Request.submesh(3, 1))) == (3, 0)
    # First free node is now (0,1); frames of 2x2 at x = 0, 2, 4 and y = 1 (y = 3 sticks
    # out). (0,1) and (2,1) overlap the first job at (1..2, 0..1): the frame lands at (4,1),
    # although first fit's scan would already stop at (3,1).
    assert base(fs.allocate(Request.submesh(2, 2))) == (4, 1)
    assert ref_first_fit(6, 4, {(0, 0), (1, 0), (2, 0), (1, 1), (2, 1), (3, 0), (4, 0), (5, 0)},
                         2, 2) == (3, 1)


# ----------------------------------------------------------------------- best fit


def test_best_fit_prefers_the_base_with_most_busy_neighbours_1x1():
    # 3x2 mesh, (0,0) and (2,1) busy. Candidates for 1x1: (1,0) has 2 busy/outside
    # neighbours, (2,0) and (0,1) have 3 each, (1,1) has 2. Best fit: (2,0), the first of the
    # best in row-major order; first fit takes (1,0).
    busy = {(0, 0), (2, 1)}
    bf = allocators.create("best-fit", "mesh:3x2")
    ff = allocators.create("first-fit", "mesh:3x2")
    occupy(bf, busy)
    occupy(ff, busy)
    assert base(bf.allocate(Request.submesh(1, 1))) == (2, 0)
    assert base(ff.allocate(Request.submesh(1, 1))) == (1, 0)


def test_best_fit_fills_the_corner_hole_2x2():
    # 6x4 mesh with 2x2 blocks busy at (0,0) and (4,2). Candidate bases for 2x2:
    # (2,0) (3,0) (4,0) (2,1) (0,2) (1,2) (2,2). Candidate neighbours: (4,0) -> only (3,0);
    # (0,2) -> only (1,2); every other candidate has two. Best fit takes (4,0), the hole at
    # the bottom-right corner; first fit takes (2,0) and splits the free area.
    busy = {(x, y) for x in (0, 1) for y in (0, 1)} | {(x, y) for x in (4, 5) for y in (2, 3)}
    bf = allocators.create("best-fit", "mesh:6x4")
    ff = allocators.create("first-fit", "mesh:6x4")
    occupy(bf, busy)
    occupy(ff, busy)
    assert base(bf.allocate(Request.submesh(2, 2))) == (4, 0)
    assert base(ff.allocate(Request.submesh(2, 2))) == (2, 0)
    # What is left is the 2x4 column at x = 2..3 plus the 2x2 at (0,2): a 2x4 still fits.
    assert base(bf.allocate(Request.submesh(2, 4))) == (2, 0)


def test_best_fit_on_an_empty_mesh_starts_at_the_origin():
    bf = allocators.create("best-fit", "mesh:8x8")
    assert base(bf.allocate(Request.submesh(3, 3))) == (0, 0)


# ----------------------------------------------------------------------- against references


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_contiguous_allocators_match_reference(data):
    W = data.draw(st.integers(1, 7), label="W")
    H = data.draw(st.integers(1, 7), label="H")
    cells = [(x, y) for x in range(W) for y in range(H)]
    busy = set(data.draw(st.lists(st.sampled_from(cells), max_size=len(cells)), label="busy"))
    w = data.draw(st.integers(1, W), label="w")
    h = data.draw(st.integers(1, H), label="h")
    for name, ref in (("first-fit", ref_first_fit), ("best-fit", ref_best_fit),
                      ("frame-sliding", ref_frame_sliding)):
        alloc = allocators.create(name, f"mesh:{W}x{H}")
        occupy(alloc, busy)
        a = alloc.allocate(Request.submesh(w, h))
        want = ref(W, H, busy, w, h)
        assert (None if a is None else base(a)) == want, name
        if a is not None:
            assert (a.piece.w, a.piece.h) == (w, h)
    # Zhu's strategies recognize every free submesh; frame sliding may not.
    assert (ref_first_fit(W, H, busy, w, h) is None) == (not ref_bases(W, H, busy, w, h))


# ----------------------------------------------------------------------- buddy-2d


@pytest.mark.parametrize("topo", ["mesh:6x4", "mesh:8x4", "mesh:12x12", "mesh:3x3"])
def test_buddy_2d_refuses_other_meshes(topo):
    with pytest.raises(TopologyError, match="square mesh whose side is a power of two"):
        allocators.create("buddy-2d", topo)


@pytest.mark.parametrize("req,side", [
    (Request.submesh(1, 1), 1), (Request.submesh(2, 2), 2), (Request.submesh(3, 2), 4),
    (Request.submesh(1, 5), 8), (Request.submesh(8, 8), 8), (Request.processors(1), 1),
    (Request.processors(4), 2), (Request.processors(5), 4), (Request.processors(16), 4),
    (Request.processors(17), 8),
])
def test_buddy_2d_rounds_up_to_power_of_two_square(req, side):
    b = allocators.create("buddy-2d", "mesh:8x8")
    assert b.normalize(req) == Request.submesh(side, side)
    a = b.allocate(req)
    assert (a.piece.w, a.piece.h) == (side, side) and a.size == side * side


def test_buddy_2d_splits_and_merges_buddies():
    b = allocators.create("buddy-2d", "mesh:8x8")
    big = b.allocate(Request.submesh(3, 3))  # 4x4: splits 8x8, keeps the lower-left quarter
    assert big.piece == Submesh(0, 0, 4, 4)
    one = b.allocate(Request.submesh(1, 1))  # splits 4x4 (4,0) -> 2x2 (4,0) -> 1x1 (4,0)
    assert one.piece == Submesh(4, 0, 1, 1)
    two = b.allocate(Request.submesh(2, 2))  # free 2x2s: (6,0) (4,2) (6,2): lowest is (6,0)
    assert two.piece == Submesh(6, 0, 2, 2)
    # Only 4x4 (0,4) and (4,4) are whole: an 8x8 cannot fit, though 40 of 64 nodes are free.
    assert b.allocate(Request.submesh(5, 5)) is None
    for a in (one, two, big):
        b.release(a)
    # All buddies merged back: the whole mesh is one free block again.
    whole = b.allocate(Request.submesh(8, 8))
    assert whole.piece == Submesh(0, 0, 8, 8)


def test_buddy_2d_keeps_buddies_apart_when_one_is_busy():
    b = allocators.create("buddy-2d", "mesh:4x4")
    ones = [b.allocate(Request.submesh(1, 1)) for _ in range(4)]
    assert [o.piece for o in ones] == [Submesh(0, 0, 1, 1), Submesh(1, 0, 1, 1),
                                       Submesh(0, 1, 1, 1), Submesh(1, 1, 1, 1)]
    b.release(ones[0])
    b.release(ones[1])
    b.release(ones[2])
    # (1,1) still busy: the 2x2 at (0,0) cannot re-form, so a 2x2 goes to (2,0).
    assert b.allocate(Request.submesh(2, 2)).piece == Submesh(2, 0, 2, 2)


# ----------------------------------------------------------------------- multiple buddy


def test_multiple_buddy_base4_squares():
    assert allocators.REGISTRY.get("multiple-buddy").squares(23) == [3, 1, 1]  # 16 + 4 + 3
    assert allocators.REGISTRY.get("multiple-buddy").squares(64) == [0, 0, 0, 1]


def test_multiple_buddy_splits_request_into_squares():
    mb = allocators.create("multiple-buddy", "mesh:8x8")
    a = mb.allocate(Request.processors(23))
    # One 4x4 (splitting 8x8), one 2x2 (splitting the 4x4 at (4,0)), three 1x1 (splitting
    # the lowest free 2x2, (6,0)).
    assert list(a.pieces) == [Submesh(0, 0, 4, 4), Submesh(4, 0, 2, 2), Submesh(6, 0, 1, 1),
                              Submesh(7, 0, 1, 1), Submesh(6, 1, 1, 1)]
    assert a.size == 23 and len(a.nodes) == 23
    assert a.nodes == {n for p in a.pieces for n in p.nodes_in(8)}
    assert mb.free_count == 64 - 23 == len(mb.free_nodes())
    b = mb.allocate(Request.submesh(3, 3))  # 9 = 2 * 4 + 1
    assert list(b.pieces) == [Submesh(4, 2, 2, 2), Submesh(6, 2, 2, 2), Submesh(7, 1, 1, 1)]
    assert b.size == 9 and len(b.nodes) == 9 and not (a.nodes & b.nodes)


def test_multiple_buddy_divides_a_square_it_cannot_find():
    mb = allocators.create("multiple-buddy", "mesh:4x4")
    corners = {(0, 0), (3, 0), (0, 3), (3, 3)}
    occupy(mb, {(x, y) for x in range(4) for y in range(4)} - corners)
    # 4 = one 2x2, but no 2x2 buddy block is free: it is divided into four 1x1 buddies.
    a = mb.allocate(Request.processors(4))
    assert sorted((p.x, p.y, p.w) for p in a.pieces) == sorted((x, y, 1) for x, y in corners)
    assert mb.free_count == 0
    before = mb.free_nodes()
    assert mb.allocate(Request.processors(1)) is None
    assert mb.free_nodes() == before


def test_multiple_buddy_on_a_non_power_of_two_mesh():
    assert sorted(power_of_two_squares(6, 4)) == [(0, 0, 2), (4, 0, 1), (4, 2, 1)]
    assert sorted(power_of_two_squares(1, 5)) == [(0, y, 0) for y in range(5)]
    mb = allocators.create("multiple-buddy", "mesh:6x4")
    a = mb.allocate(Request.processors(24))  # 24 = 1 * 16 + 2 * 4: the whole machine
    assert list(a.pieces) == [Submesh(0, 0, 4, 4), Submesh(4, 0, 2, 2), Submesh(4, 2, 2, 2)]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(1, 64)), min_size=1, max_size=20))
def test_multiple_buddy_gives_exactly_p_in_power_of_two_squares(ops):
    mb = allocators.create("multiple-buddy", "mesh:8x8")
    live = []
    for release, p in ops:
        if release and live:
            mb.release(live.pop(p % len(live)))
            continue
        free = mb.free_count
        a = mb.allocate(Request.processors(p))
        if p > free:
            assert a is None
            continue
        assert a is not None, "multiple buddy allocates whenever p nodes are free"
        assert a.size == p == len(a.nodes)
        for piece in a.pieces:
            assert piece.w == piece.h and piece.w & (piece.w - 1) == 0
            assert piece.x % piece.w == 0 and piece.y % piece.h == 0  # buddy-aligned
        # Division only moves demand to smaller squares: no square is larger than the
        # largest one in p's base-4 digits.
        assert max(piece.w for piece in a.pieces) ** 2 <= 4 ** (len(mb.squares(p)) - 1)
        live.append(a)
    for a in live:
        mb.release(a)
    # Every buddy merged back: the whole 8x8 is one square again.
    assert mb.allocate(Request.processors(64)).pieces == (Submesh(0, 0, 8, 8),)


def test_multiple_buddy_merges_only_within_its_root_squares():
    mb = allocators.create("multiple-buddy", "mesh:6x4")
    a = mb.allocate(Request.processors(24))
    mb.release(a)
    assert mb.allocate(Request.processors(16)).pieces == (Submesh(0, 0, 4, 4),)
    # The 2x4 strip is two 2x2 roots; they never merge into a 4x4.
    assert mb.allocate(Request.processors(8)).pieces == (Submesh(4, 0, 2, 2), Submesh(4, 2, 2, 2))


# ----------------------------------------------------------------------- errors


@pytest.mark.parametrize("name", MESH_ALLOCATORS)
def test_oversized_submesh_is_a_clear_error(name):
    alloc = allocators.create(name, "mesh:32x32")
    held = alloc.allocate(Request.submesh(2, 3))
    before = alloc.free_nodes()
    with pytest.raises(RequestTooLarge, match="40x3"):
        alloc.allocate(Request.submesh(40, 3))
    with pytest.raises(RequestTooLarge):
        alloc.allocate(Request.processors(32 * 32 + 1))
    assert alloc.free_nodes() == before
    alloc.release(held)
    assert alloc.free_count == 32 * 32


@pytest.mark.parametrize("name", ["first-fit", "best-fit", "frame-sliding", "multiple-buddy"])
def test_mesh_allocators_refuse_hypercubes(name):
    with pytest.raises(TopologyError):
        allocators.create(name, "hypercube:4")


@pytest.mark.parametrize("name", MESH_ALLOCATORS)
def test_large_mesh_fill_and_drain(name):
    topo = parse_topology("mesh:64x64")
    alloc = allocators.create(name, topo)
    held = []
    sizes = [(5, 3), (8, 8), (1, 7), (16, 2), (3, 3), (2, 2)]
    i = 0
    while True:
        a = alloc.allocate(Request.submesh(*sizes[i % len(sizes)]))
        i += 1
        if a is None:
            break
        held.append(a)
    assert alloc.used == sum(a.size for a in held) and len(alloc.free_nodes()) == alloc.free_count
    for a in held[::2]:
        alloc.release(a)
    for a in held[1::2]:
        alloc.release(a)
    assert alloc.free_nodes() == frozenset(range(topo.size))
