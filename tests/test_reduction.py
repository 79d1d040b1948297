"""Size reduction (restricted-size-reduction.txt sections 2.3, 3.2, 4): RSR-t and limit
allocation around any allocator."""
from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from scheduler import allocators, reduction
from scheduler.allocators import AllocationError
from scheduler.decisions import Start
from scheduler.jobs import Job
from scheduler.reduction import ReductionError, fold
from scheduler.topology import Request, RequestTooLarge, Subcube, TopologyError, parse_topology

CUBE_ALLOCATORS = allocators.names("hypercube:8")


def eight_cube_with_a_6cube_hole(name):
    """An 8-cube with a 7-cube busy and one node of the other half busy: the largest free
    subcube is a 6-cube (a lone busy 7-cube would leave the other 7-cube free)."""
    alloc = allocators.create(name, "hypercube:8")
    big = alloc.allocate(Request.cube(7))
    one = alloc.allocate(Request.cube(0))
    assert big is not None and one is not None
    return alloc, [big, one]


@pytest.mark.parametrize("name", CUBE_ALLOCATORS)
def test_rsr1_folds_a_7cube_to_a_6cube_rsr0_waits(name):
    alloc, held = eight_cube_with_a_6cube_hole(name)
    before = alloc.free_nodes()
    assert reduction.wrap(alloc, "rsr:0").allocate(Request.cube(7)) is None
    assert alloc.free_nodes() == before
    r1 = reduction.wrap(alloc, "rsr:1")
    a = r1.allocate(Request.cube(7))
    if a is None:
        # an allocator without complete recognition may miss the 6-cube of this hole
        assert not alloc.complete_recognition
        return
    assert a.folds == 1 and a.asked == Request.cube(7) and a.request == Request.cube(6)
    assert a.size == 64 and a.nodes <= before
    assert list(r1.live)[-1] is a  # the wrapper reports the folded allocation
    r1.release(a)
    assert alloc.free_nodes() == before
    with pytest.raises(AllocationError):
        r1.release(a)


def test_rsr_hand_example_on_tree_collapsing():
    alloc, held = eight_cube_with_a_6cube_hole("tree-collapsing")
    assert str(held[0].piece) == "0*******"  # the buddy tree's first 7-cube
    a = reduction.wrap(alloc, "rsr:1").allocate(Request.cube(7))
    assert a.piece == Subcube(8, 0b00111111, 0b11000000)  # 11******, next to busy 10000000
    # the execution time doubles: the paper's pessimistic linear rule
    job = Job(1, 0.0, Request.cube(7), runtime=5.0)
    assert Start(job, a, 0.0).runtime == 10.0


def test_rsr_folds_at_most_t_times():
    alloc = allocators.create("tree-collapsing", "hypercube:4")
    held = [alloc.allocate(Request.cube(0)) for _ in range(16)]
    for h in held[::2]:  # nodes come in address order: free the even ones, the 3-cube ***0
        alloc.release(h)
    assert reduction.wrap(alloc, "rsr:0").allocate(Request.cube(4)) is None
    # a 4-cube folded once fits the free 3-cube
    assert reduction.wrap(alloc, "rsr:1").allocate(Request.cube(4)).piece == Subcube(4, 0b1110, 0)
    # now every node is busy: even four folds (down to a 0-cube) find nothing
    assert reduction.wrap(alloc, "rsr:4").allocate(Request.cube(4)) is None


def test_limit5_folds_a_7cube_on_an_empty_machine():
    alloc = allocators.create("tree-collapsing", "hypercube:8")
    lim = reduction.wrap(alloc, "limit:5")
    a = lim.allocate(Request.cube(7))
    assert a.folds == 2 and a.request == Request.cube(5) and a.asked == Request.cube(7)
    assert Start(Job(1, 0.0, Request.cube(7), 5.0), a, 0.0).runtime == 20.0
    small = lim.allocate(Request.cube(3))
    assert small.folds == 0 and small.request == Request.cube(3)
    assert lim.free_count == 256 - 32 - 8 and lim.used == 40
    # no further folding: with 5-cubes exhausted the job waits even though a 4-cube is free
    busy = [alloc.allocate(Request.cube(5)) for _ in range(6)]
    assert all(busy) and alloc.allocate(Request.cube(5)) is None
    assert alloc.allocate(Request.cube(4)) is not None
    assert lim.allocate(Request.cube(7)) is None


def test_limit_greedy_folds_down_to_one_node():
    alloc = allocators.create("pc-graph", "hypercube:8")
    held = [alloc.allocate(Request.cube(0)) for _ in range(256)]
    alloc.release(held[100])
    a = reduction.wrap(alloc, "limit:greedy").allocate(Request.cube(7))
    assert a.folds == 7 and a.request == Request.cube(0) and a.nodes == held[100].nodes
    assert Start(Job(1, 0.0, Request.cube(7), 1.0), a, 0.0).runtime == 128.0
    # limit:greedy is adaptive: on a free machine nothing is folded
    other = reduction.wrap(allocators.create("pc-graph", "hypercube:8"), "limit:greedy")
    assert other.allocate(Request.cube(7)).folds == 0


def test_limit_average_uses_the_running_mean_size():
    lim = reduction.wrap(allocators.create("tree-collapsing", "hypercube:8"), "limit:average")
    assert lim.allocate(Request.cube(7)).folds == 0  # mean 7
    assert lim.allocate(Request.cube(1)).folds == 0  # mean (7+1)/2 = 4
    a = lim.allocate(Request.cube(7))  # mean (8+7)/3 = 5: folded to a 5-cube
    assert a.folds == 2 and a.request == Request.cube(5)
    b = lim.allocate(Request.cube(6))  # mean (15+6)/4 = 5.25 -> 5
    assert b.folds == 1
    # a failed or refused request changes nothing, the mean included
    with pytest.raises(RequestTooLarge):
        lim.allocate(Request.cube(9))
    assert (lim._dims, lim._jobs) == (21, 4)


def test_errors_change_nothing_and_release_is_delegated():
    alloc = allocators.create("mss", "hypercube:5")
    for spec in ("rsr:2", "limit:1", "limit:greedy", "limit:average"):
        w = reduction.wrap(alloc, spec)
        before = alloc.free_nodes()
        with pytest.raises(RequestTooLarge):
            w.allocate(Request.cube(6))
        with pytest.raises(RequestTooLarge):
            w.normalize(Request.processors(33))
        assert alloc.free_nodes() == before
        foreign = allocators.create("mss", "hypercube:5").allocate(Request.cube(1))
        with pytest.raises(AllocationError):
            w.release(foreign)
        a = w.allocate(Request.cube(3))
        w.release(a)
        with pytest.raises(AllocationError):
            w.release(a)
        assert alloc.free_nodes() == before


@pytest.mark.parametrize("spec,msg", [
    ("rsr", "rsr:T"), ("rsr:", "rsr:T"), ("rsr:-1", "rsr:T"), ("rsr:x", "rsr:T"),
    ("limit", "limit:K"), ("limit:", "limit:K"), ("limit:big", "limit:K"),
    ("bogus:1", "unknown size reduction"), ("", "unknown size reduction"), (3, "must be a string"),
])
def test_malformed_spec_is_a_clear_error(spec, msg):
    alloc = allocators.create("tree-collapsing", "hypercube:3")
    with pytest.raises(ReductionError) as e:
        reduction.wrap(alloc, spec)
    assert msg in str(e.value)


def test_none_returns_the_allocator_and_parse():
    alloc = allocators.create("tree-collapsing", "hypercube:3")
    assert reduction.wrap(alloc, None) is alloc
    assert reduction.wrap(alloc, "none") is alloc
    assert reduction.parse("RSR:3") == ("rsr", 3)
    assert reduction.parse("limit:average") == ("limit", "average")
    assert reduction.parse("limit:0") == ("limit", 0)
    assert reduction.REGISTRY.names() == ["limit", "rsr"]
    assert "rsr:T" in reduction.REGISTRY.doc("rsr") and "limit:K" in reduction.REGISTRY.doc("limit")
    w = reduction.wrap(alloc, "rsr:2")
    assert w.name == "tree-collapsing+rsr:2" and w.kinds == ("hypercube",)
    assert w.topology is alloc.topology and w.scattered is False


# ---------------------------------------------------------------------- meshes


def test_fold_rules():
    assert fold(Request.cube(3)) == Request.cube(2)
    assert fold(Request.cube(0)) is None
    assert fold(Request.submesh(5, 3)) == Request.submesh(3, 3)  # longer side, rounded up
    assert fold(Request.submesh(3, 5)) == Request.submesh(3, 3)
    assert fold(Request.submesh(4, 4)) == Request.submesh(2, 4)  # a tie halves the width
    assert fold(Request.submesh(1, 1)) is None
    assert fold(Request.submesh(1, 2)) == Request.submesh(1, 1)
    assert fold(Request.submesh(8, 8), square=True) == Request.submesh(4, 4)
    assert fold(Request.submesh(1, 1), square=True) is None
    assert fold(Request.processors(5)) == Request.processors(3)
    assert fold(Request.processors(1)) is None


def test_buddy_2d_folds_squares_and_runs_four_times_longer():
    from scheduler.quarantine import Quarantine

    alloc = allocators.create("buddy-2d", "mesh:8x8")
    one = alloc.allocate(Request.submesh(1, 1))
    for inner in (alloc, Quarantine(alloc)):  # detected through another wrapper too
        w = reduction.wrap(inner, "rsr:1")
        a = w.allocate(Request.submesh(7, 5))  # an 8x8 square to buddy-2d
        assert a.folds == 1 and a.asked == Request.submesh(8, 8) and a.request == Request.submesh(4, 4)
        assert Start(Job(1, 0.0, Request.submesh(7, 5), 2.0), a, 0.0).runtime == 8.0
        w.release(a)
    # limit:4 caps at 16 processors: 8x8 -> 4x4, even on a free machine
    alloc.release(one)
    a = reduction.wrap(alloc, "limit:4").allocate(Request.submesh(8, 8))
    assert a.request == Request.submesh(4, 4) and a.folds == 1


def test_submesh_folds_along_the_longer_side():
    alloc = allocators.create("first-fit", "mesh:8x8")
    band = alloc.allocate(Request.submesh(8, 4))  # leaves an 8x4 band free
    assert band is not None
    assert reduction.wrap(alloc, "rsr:1").allocate(Request.submesh(8, 8)) is None  # 4x8 does not fit
    a = reduction.wrap(alloc, "rsr:2").allocate(Request.submesh(8, 8))
    assert a.folds == 2 and a.request == Request.submesh(4, 4)
    b = reduction.wrap(alloc, "rsr:1").allocate(Request.submesh(3, 6))
    assert b.request == Request.submesh(3, 3) and b.folds == 1
    # 8x8 asked, 4x4 given: four times the run time
    assert Start(Job(1, 0.0, Request.submesh(8, 8), 1.0), a, 0.0).runtime == 4.0


# ---------------------------------------------------------------------- properties


def wrapped_cases():
    for topo in ("hypercube:4", "mesh:8x8"):
        for name in allocators.names(topo):
            try:
                allocators.create(name, topo)
            except TopologyError:  # a machine the allocator refuses; any other error fails the collection
                continue
            yield pytest.param(name, topo, id=f"{name}-{topo}")


WRAPPED_CASES = list(wrapped_cases())


def test_every_registered_allocator_is_wrapped():
    # both machines suit every allocator of their kind (mesh:8x8 is a 2^n square for buddy-2d)
    want = [(n, t) for t in ("hypercube:4", "mesh:8x8") for n in allocators.names(t)]
    assert [tuple(p.values) for p in WRAPPED_CASES] == want
    assert {n for n, _ in want} == set(allocators.names())


SPECS = st.one_of(st.integers(0, 5).map("rsr:{}".format), st.integers(0, 6).map("limit:{}".format),
                  st.sampled_from(["limit:greedy", "limit:average"]))


def requests(topo):
    if topo.kind == "hypercube":
        return st.one_of(st.integers(0, topo.n).map(Request.cube), st.integers(1, topo.size).map(Request.processors))
    return st.one_of(st.tuples(st.integers(1, topo.width), st.integers(1, topo.height)).map(lambda t: Request.submesh(*t)),
                     st.integers(1, topo.size).map(Request.processors))


@pytest.mark.parametrize("name,topo_text", WRAPPED_CASES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_wrapped_allocators_keep_the_contract(name, topo_text, data):
    topo = parse_topology(topo_text)
    inner = allocators.create(name, topo)
    spec = data.draw(SPECS, label="spec")
    w = reduction.wrap(inner, spec)
    mode, arg = reduction.parse(spec)
    live = []
    for _ in range(data.draw(st.integers(1, 30), label="steps")):
        if live and data.draw(st.booleans(), label="release?"):
            a = live.pop(data.draw(st.integers(0, len(live) - 1), label="which"))
            before = w.free_nodes()
            w.release(a)
            assert w.free_nodes() == before | a.nodes
        else:
            req = data.draw(requests(topo), label="request")
            before = w.free_nodes()
            a = w.allocate(req)
            if a is None:
                assert w.free_nodes() == before
                continue
            assert a.nodes <= before and w.free_nodes() == before - a.nodes
            asked = inner.normalize(req)
            assert a.asked == asked
            shrunk = asked
            for _ in range(a.folds):
                shrunk = fold(shrunk, name == "buddy-2d")
            assert inner.normalize(shrunk) == a.request
            if mode == "rsr" and isinstance(arg, int):
                assert a.folds <= arg
            if mode == "limit" and isinstance(arg, int) and a.folds:
                assert a.request.processors_needed <= 1 << arg  # folded just enough ...
                unfolded = asked
                for _ in range(a.folds - 1):
                    unfolded = fold(unfolded, name == "buddy-2d")
                assert unfolded.processors_needed > 1 << arg  # ... and no more
            live.append(a)
        busy = [x for a in live for x in a.nodes]
        assert len(busy) == len(set(busy)), "a node was given twice"
        assert w.free_count == topo.size - len(busy) == len(w.free_nodes())
        assert {a.serial: a.folds for a in w.live} == {a.serial: a.folds for a in live}
    for a in live:
        w.release(a)
    assert w.free_nodes() == frozenset(range(topo.size))


def free_cube_dims(alloc, n):
    free = alloc.free_nodes()
    return {s.dim for s in (Subcube.parse("".join(t)) for t in itertools.product("01*", repeat=n))
            if free.issuperset(s.nodes())}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_rsr_folds_only_when_needed(data):
    # with a complete-recognition allocator, a job folded f times found no free cube of any
    # size between the asked one and the given one, and got the largest that was free
    n = 4
    inner = allocators.create(data.draw(st.sampled_from(["tree-collapsing", "mss", "pc-graph"])), f"hypercube:{n}")
    t = data.draw(st.integers(0, 4), label="t")
    w = reduction.wrap(inner, f"rsr:{t}")
    live = []
    for _ in range(data.draw(st.integers(1, 25), label="steps")):
        if live and data.draw(st.booleans(), label="release?"):
            w.release(live.pop(data.draw(st.integers(0, len(live) - 1))))
            continue
        k = data.draw(st.integers(0, n), label="k")
        dims = free_cube_dims(inner, n)
        a = w.allocate(Request.cube(k))
        fits = [d for d in range(max(0, k - t), k + 1) if d in dims]
        if not fits:
            assert a is None
        else:
            assert a is not None and a.request.k == max(fits) and a.folds == k - max(fits)
            live.append(a)
