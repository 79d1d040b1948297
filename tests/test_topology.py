"""Topologies: parsing, node ids, neighbours, e-cube and XY routes, request normalization."""
from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from scheduler.topology import (Hypercube, Mesh, Request, RequestError, RequestTooLarge, Subcube,
                                Submesh, TopologyError, parse_topology)


def test_parse_and_sizes():
    assert parse_topology("hypercube:16").size == 65536
    assert parse_topology("cube:0").size == 1
    m = parse_topology("mesh:128x128")
    assert (m.width, m.height, m.size) == (128, 128, 16384)
    for bad in ("hypercube:-1", "mesh:0x4", "torus:4", "mesh:4", "hypercube:x"):
        with pytest.raises(TopologyError):
            parse_topology(bad)


def test_mesh_node_ids_are_row_major():
    m = Mesh(5, 3)
    assert m.node(0, 0) == 0 and m.node(4, 0) == 4 and m.node(0, 1) == 5 and m.node(4, 2) == 14
    assert m.xy(7) == (2, 1)
    assert sorted(m.neighbours(0)) == [1, 5]
    assert sorted(m.neighbours(7)) == [2, 6, 8, 12]


def test_cube_neighbours_differ_in_one_bit():
    h = Hypercube(4)
    assert sorted(h.neighbours(0b0101)) == [0b0001, 0b0100, 0b0111, 0b1101]


@given(st.integers(0, 10).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, 2**n - 1), st.integers(0, 2**n - 1))))
def test_ecube_route_fixes_bits_from_dimension_zero_up(t):
    n, a, b = t
    path = Hypercube(n).route(a, b)
    assert path[0] == a and path[-1] == b
    assert len(path) - 1 == bin(a ^ b).count("1")
    dims = [(x ^ y).bit_length() - 1 for x, y in zip(path, path[1:])]
    assert all(bin(x ^ y).count("1") == 1 for x, y in zip(path, path[1:]))
    assert dims == sorted(dims)


@given(st.integers(1, 12), st.integers(1, 12), st.data())
def test_xy_route_goes_along_x_then_y(w, h, data):
    m = Mesh(w, h)
    a = data.draw(st.integers(0, m.size - 1))
    b = data.draw(st.integers(0, m.size - 1))
    path = m.route(a, b)
    (ax, ay), (bx, by) = m.xy(a), m.xy(b)
    assert path[0] == a and path[-1] == b
    assert len(path) - 1 == abs(ax - bx) + abs(ay - by)
    for x, y in zip(path, path[1:]):
        assert y in m.neighbours(x)
    turn = abs(ax - bx)
    assert all(m.xy(p)[1] == ay for p in path[: turn + 1])
    assert all(m.xy(p)[0] == bx for p in path[turn:])


def test_subcube_text_and_nodes():
    s = Subcube.parse("1*0*")
    assert s.dim == 2 and str(s) == "1*0*"
    assert sorted(s.nodes()) == [0b1000, 0b1001, 0b1100, 0b1101]
    assert s.contains(0b1101) and not s.contains(0b0101)
    with pytest.raises(TopologyError):
        Hypercube(3).subcube("1*0*")


def test_submesh_nodes():
    assert sorted(Submesh(1, 1, 2, 2).nodes_in(4)) == [5, 6, 9, 10]


def test_processor_counts_round_up():
    h = Hypercube(5)
    assert h.normalize(Request.processors(5)) == Request.cube(3)
    assert h.normalize(Request.processors(1)) == Request.cube(0)
    m = Mesh(8, 8)
    assert m.normalize(Request.processors(12)) == Request.submesh(4, 3)  # area 12, squarest, wider
    assert m.normalize(Request.processors(7)) == Request.submesh(7, 1)   # least area first, then squarest
    assert m.normalize(Request.processors(9)) == Request.submesh(3, 3)
    assert Mesh(16, 2).normalize(Request.processors(9)) == Request.submesh(9, 1)  # 3x3 does not fit
    assert Mesh(16, 2).normalize(Request.processors(10)) == Request.submesh(5, 2)  # squarer than 10x1


def test_requests_that_can_never_fit_are_clear_errors():
    with pytest.raises(RequestTooLarge, match="12-cube"):
        Hypercube(10).normalize(Request.cube(12))
    with pytest.raises(RequestTooLarge, match="40x3"):
        Mesh(32, 32).normalize(Request.submesh(40, 3))
    with pytest.raises(RequestTooLarge):
        Mesh(4, 4).normalize(Request.processors(17))
    for bad in (lambda: Request.cube(-1), lambda: Request.submesh(0, 2), lambda: Request.processors(0),
                lambda: Request.parse("seven")):
        with pytest.raises(RequestError):
            bad()


def test_request_parse_and_round_trip():
    assert Request.parse("cube:3") == Request.cube(3) == Request.parse("3-cube")
    assert Request.parse("4x2") == Request.submesh(4, 2)
    assert Request.parse("12") == Request.processors(12)
    for r in (Request.cube(2), Request.submesh(3, 1), Request.processors(9)):
        assert Request.from_dict(r.to_dict()) == r


def test_size_classes():
    assert Hypercube(4).size_class(Request.processors(5)) == 3
    assert Hypercube(4).num_classes == 5
    assert Mesh(8, 8).size_class(Request.submesh(3, 3)) == 4
    assert Mesh(8, 8).num_classes == 7
