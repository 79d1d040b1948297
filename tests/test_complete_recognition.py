"""Complete subcube recognition of ``mss``, ``tree-collapsing`` and ``pc-graph``.

A k-request must succeed exactly when some k-subcube (any of the 3^n subcubes, not only the
buddy-aligned ones) is free. The oracle is brute force over every subcube for n <= 5, on
arbitrary free sets (every node taken as a 0-cube, then a random subset given back) and on
the states random allocate/release sequences reach.
"""
from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from scheduler import allocators
from scheduler.topology import Request, Subcube

NAMES = ["mss", "tree-collapsing", "pc-graph"]


def all_subcubes(n):
    """Every subcube of an n-cube as (dim, mask, base, node bitmap)."""
    out = []
    for text in itertools.product("01*", repeat=n):
        s = Subcube.parse("".join(text)) if n else Subcube(0, 0, 0)
        bits = 0
        for a in s.nodes():
            bits |= 1 << a
        out.append((s.dim, s.mask, s.base, bits))
    return out


CUBES = {n: all_subcubes(n) for n in range(6)}


def bitmap(nodes):
    b = 0
    for a in nodes:
        b |= 1 << a
    return b


def free_dims(n, free_bits):
    """The dimensions k for which some k-subcube is free (brute force)."""
    return {d for d, _, _, bits in CUBES[n] if bits & ~free_bits == 0}


def with_busy(name, n, busy):
    """An allocator whose busy nodes are exactly ``busy`` (each held as a 0-cube)."""
    alloc = allocators.create(name, f"hypercube:{n}")
    singles = [alloc.allocate(Request.cube(0)) for _ in range(1 << n)]
    assert all(singles) and alloc.allocate(Request.cube(0)) is None
    held = []
    for a in singles:
        if next(iter(a.nodes)) in busy:
            held.append(a)
        else:
            alloc.release(a)
    assert alloc.free_nodes() == frozenset(range(1 << n)) - frozenset(busy)
    return alloc, held


def check_recognition(alloc, n):
    """For every k: allocation succeeds iff a free k-subcube exists; nothing changes after
    the trial allocation is released."""
    busy = frozenset(x for a in alloc.live for x in a.nodes)
    free = frozenset(range(1 << n)) - busy
    assert alloc.free_nodes() == free
    dims = free_dims(n, bitmap(free))
    for k in range(n + 1):
        a = alloc.allocate(Request.cube(k))
        assert (a is not None) == (k in dims), f"k={k}, free={sorted(free)}"
        if a is not None:
            assert a.piece.dim == k and a.nodes <= free
            alloc.release(a)
            assert alloc.free_nodes() == free


def test_all_three_claim_complete_recognition():
    for name in NAMES:
        assert allocators.REGISTRY.get(name).complete_recognition is True


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_arbitrary_free_sets(name, data):
    n = data.draw(st.integers(0, 5), label="n")
    busy = data.draw(st.sets(st.integers(0, (1 << n) - 1)), label="busy")
    alloc, _ = with_busy(name, n, busy)
    check_recognition(alloc, n)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_states_reached_by_sequences(name, data):
    n = data.draw(st.integers(1, 5), label="n")
    alloc = allocators.create(name, f"hypercube:{n}")
    live = []
    for _ in range(data.draw(st.integers(1, 30), label="steps")):
        if live and data.draw(st.booleans(), label="release?"):
            alloc.release(live.pop(data.draw(st.integers(0, len(live) - 1), label="which")))
        else:
            a = alloc.allocate(Request.cube(data.draw(st.integers(0, n), label="k")))
            if a is not None:
                live.append(a)
        check_recognition(alloc, n)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_pc_graph_holds_exactly_the_prime_cubes(data):
    n = data.draw(st.integers(1, 5), label="n")
    alloc = allocators.create("pc-graph", f"hypercube:{n}")
    live = []
    for _ in range(data.draw(st.integers(1, 25), label="steps")):
        if live and data.draw(st.booleans(), label="release?"):
            alloc.release(live.pop(data.draw(st.integers(0, len(live) - 1), label="which")))
        else:
            a = alloc.allocate(Request.cube(data.draw(st.integers(0, n), label="k")))
            if a is not None:
                live.append(a)
        free = bitmap(alloc.free_nodes())
        inside = [(m, b, bits) for _, m, b, bits in CUBES[n] if bits & ~free == 0]
        primes = {(m, b) for m, b, bits in inside
                  if not any(o != bits and bits & ~o == 0 for _, _, o in inside)}
        assert primes == {(s.mask, s.base) for s in alloc.prime_cubes}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mss_is_a_disjoint_cover_holding_a_largest_free_cube(data):
    n = data.draw(st.integers(1, 5), label="n")
    busy = data.draw(st.sets(st.integers(0, (1 << n) - 1)), label="busy")
    alloc, _ = with_busy("mss", n, busy)
    seen = []
    for s in alloc.mss:
        seen.extend(s.nodes())
    assert len(seen) == len(set(seen)), "members overlap"
    assert set(seen) == set(range(1 << n)) - busy
    dims = free_dims(n, bitmap(seen))
    assert max((s.dim for s in alloc.mss), default=-1) == max(dims, default=-1)


# ---------------------------------------------------------------------- hand-worked examples


@pytest.mark.parametrize("name", NAMES)
def test_finds_the_only_free_2cube_which_is_not_buddy_aligned(name):
    # 3-cube, 000 and 110 busy: of the six 2-cubes only **1 = {1,3,5,7} is free; the buddy
    # tree (0**, 1**) has none
    alloc, _ = with_busy(name, 3, {0, 6})
    a = alloc.allocate(Request.cube(2))
    assert str(a.piece) == "**1"
    assert alloc.allocate(Request.cube(2)) is None


@pytest.mark.parametrize("name", NAMES)
def test_no_1cube_among_nodes_of_one_parity(name):
    # free {0,3,5,6}: every edge joins an even and an odd address, so no 1-cube is free
    alloc, _ = with_busy(name, 3, {1, 2, 4, 7})
    assert alloc.allocate(Request.cube(1)) is None
    assert alloc.allocate(Request.cube(0)) is not None


def test_tree_collapsing_visits_the_buddy_tree_first_then_collapses():
    alloc = allocators.create("tree-collapsing", "hypercube:3")
    assert str(alloc.allocate(Request.cube(1)).piece) == "00*"
    assert str(alloc.allocate(Request.cube(1)).piece) == "01*"
    # free {0,2,4,7} (busy 1,3,5,6): every pair of the buddy tree ({0,1},{2,3},...) is
    # broken; the first collapsed tree (free dimension 1) has 0*0 = {0,2}
    alloc, _ = with_busy("tree-collapsing", 3, {1, 3, 5, 6})
    assert str(alloc.allocate(Request.cube(1)).piece) == "0*0"
    assert str(alloc.allocate(Request.cube(0)).piece) == "100"


def test_mss_best_fit_keeps_larger_members():
    # free {0,2,4,7}: the set is {0*0, 100, 111}; a 0-cube comes from the smallest member,
    # node 4, not from the 1-cube that holds node 0
    alloc, _ = with_busy("mss", 3, {1, 3, 5, 6})
    assert [str(s) for s in alloc.mss] == ["0*0", "100", "111"]
    assert str(alloc.allocate(Request.cube(0)).piece) == "100"
    assert str(alloc.allocate(Request.cube(1)).piece) == "0*0"
    # on an empty 3-cube a 1-cube is the buddy split of ***; the rest is rebuilt as 1**, 01*
    alloc = allocators.create("mss", "hypercube:3")
    assert str(alloc.allocate(Request.cube(1)).piece) == "00*"
    assert [str(s) for s in alloc.mss] == ["1**", "01*"]
    assert str(alloc.allocate(Request.cube(1)).piece) == "01*"


def test_pc_graph_prime_cubes_and_choice():
    # free {0,2,4,7}: prime cubes 0*0, *00 (they share node 0: one PC-graph edge) and 111
    alloc, _ = with_busy("pc-graph", 3, {1, 3, 5, 6})
    assert [str(s) for s in alloc.prime_cubes] == ["0*0", "*00", "111"]
    assert [(str(a), str(b)) for a, b in alloc.edges()] == [("0*0", "*00")]
    # a 0-cube: best fit is the isolated prime cube 111, which overlaps nothing
    assert str(alloc.allocate(Request.cube(0)).piece) == "111"
    # a 1-cube: 0*0 and *00 tie on dimension and degree; the lower (base, mask) wins, and
    # what is left of *00 is its part outside 0*0, the node 100
    assert str(alloc.allocate(Request.cube(1)).piece) == "0*0"
    assert [str(s) for s in alloc.prime_cubes] == ["100"]


def test_pc_graph_carves_away_from_neighbours():
    # 3-cube with node 7 busy: prime cubes 0**, *0*, **0, pairwise overlapping. A 0-cube
    # taken from 0** (lowest base and mask among the equal-degree 2-cubes) is carved so as
    # to meet as few neighbours as possible: node 011 lies in neither *0* nor **0
    alloc, _ = with_busy("pc-graph", 3, {7})
    assert [str(s) for s in alloc.prime_cubes] == ["0**", "*0*", "**0"]
    assert str(alloc.allocate(Request.cube(0)).piece) == "011"
    # on an empty machine the carving is the buddy system's
    alloc = allocators.create("pc-graph", "hypercube:4")
    assert str(alloc.allocate(Request.cube(2)).piece) == "00**"
