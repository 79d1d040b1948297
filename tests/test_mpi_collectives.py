"""The MPI layer's collectives and communicators (nodes.mpi.intracomm, collectives, topo),
ranks as threads over an in-memory transport (tests.fixtures.mpi_ranks): results in both
APIs for every root and several sizes, the traffic each algorithm makes, and reductions
equal to numpy's."""
from __future__ import annotations

import functools
import math
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodes.mpi import MPI
from tests.fixtures.mpi_ranks import Hub, QueueTransport, run_ranks

SIZES = [1, 2, 3, 5, 8]


@pytest.mark.parametrize("n", SIZES)
def test_object_collectives(n):
    def prog(comm):
        r = comm.rank
        comm.barrier()
        out = {}
        out["bcast"] = [comm.bcast({"root": root} if r == root else None, root=root) for root in range(n)]
        out["reduce"] = [comm.reduce(r + 1, op=MPI.SUM, root=root) for root in range(n)]
        out["allreduce"] = (comm.allreduce(r, MPI.MAX), comm.allreduce([r], MPI.SUM), comm.allreduce(r > 0, MPI.LOR))
        out["gather"] = comm.gather(r * r, root=n - 1)
        out["scatter"] = comm.scatter([f"x{i}" for i in range(n)] if r == 0 else None, root=0)
        out["allgather"] = comm.allgather(r)
        out["alltoall"] = comm.alltoall([(r, i) for i in range(n)])
        out["scan"] = (comm.scan(r + 1), comm.exscan(r + 1))
        out["maxloc"] = comm.allreduce((r % 3, r), MPI.MAXLOC)
        return out

    res = run_ranks(n, prog)
    for r, out in enumerate(res):
        assert out["bcast"] == [{"root": root} for root in range(n)]
        assert out["reduce"] == [n * (n + 1) // 2 if r == root else None for root in range(n)]
        assert out["allreduce"] == (n - 1, list(range(n)), n > 1)
        assert out["gather"] == ([i * i for i in range(n)] if r == n - 1 else None)
        assert out["scatter"] == f"x{r}"
        assert out["allgather"] == list(range(n))
        assert out["alltoall"] == [(i, r) for i in range(n)]
        assert out["scan"] == (sum(range(1, r + 2)), None if r == 0 else sum(range(1, r + 1)))
        best = max(i % 3 for i in range(n))
        assert out["maxloc"] == (best, min(i for i in range(n) if i % 3 == best))


@pytest.mark.parametrize("n", SIZES)
def test_buffer_collectives(n):
    def prog(comm):
        r, out = comm.rank, {}
        b = np.arange(4, dtype="d") if r == 1 % n else np.zeros(4)
        comm.Bcast([b, MPI.DOUBLE], root=1 % n)
        out["Bcast"] = b.tolist()
        s, t = np.full(3, r + 1, dtype="i4"), np.zeros(3, dtype="i4")
        comm.Reduce([s, MPI.INT], [t, MPI.INT], op=MPI.PROD, root=n - 1)
        out["Reduce"] = t.tolist()
        a = np.array([float(r)])
        comm.Allreduce(MPI.IN_PLACE, a, op=MPI.SUM)
        out["Allreduce"] = a[0]
        g = np.zeros((n, 2), dtype="i8")
        comm.Gather(np.array([r, -r], dtype="i8"), g, root=0)
        out["Gather"] = g.tolist()
        sc = np.zeros(2)
        comm.Scatter(np.arange(2 * n, dtype="d") if r == 0 else None, sc, root=0)
        out["Scatter"] = sc.tolist()
        ag = np.zeros(n, dtype="i4")
        comm.Allgather(np.array([r * 10], dtype="i4"), ag)
        out["Allgather"] = ag.tolist()
        at = np.zeros(n, dtype="i4")
        comm.Alltoall(np.arange(n, dtype="i4") + 100 * r, at)
        out["Alltoall"] = at.tolist()
        sc2 = np.zeros(1, dtype="i4")
        comm.Scan(np.array([r], dtype="i4"), sc2, op=MPI.SUM)
        out["Scan"] = int(sc2[0])
        return out

    for r, out in enumerate(run_ranks(n, prog)):
        assert out["Bcast"] == [0.0, 1.0, 2.0, 3.0]
        assert out["Reduce"] == ([math.factorial(n)] * 3 if r == n - 1 else [0, 0, 0])
        assert out["Allreduce"] == n * (n - 1) / 2
        assert out["Gather"] == ([[i, -i] for i in range(n)] if r == 0 else [[0, 0]] * n)
        assert out["Scatter"] == [2.0 * r, 2.0 * r + 1]
        assert out["Allgather"] == [10 * i for i in range(n)]
        assert out["Alltoall"] == [r + 100 * i for i in range(n)]
        assert out["Scan"] == r * (r + 1) // 2


@pytest.mark.parametrize("n", [1, 3, 4])
def test_vector_collectives(n):
    counts = [i + 1 for i in range(n)]                 # rank i has i + 1 elements
    displs = [sum(counts[:i]) for i in range(n)]
    total = sum(counts)

    def prog(comm):
        r, out = comm.rank, {}
        mine = np.full(counts[r], r, dtype="d")
        g = np.zeros(total)
        comm.Gatherv(mine, [g, counts, displs, MPI.DOUBLE], root=0)
        out["Gatherv"] = g.tolist()
        recv = np.zeros(counts[r])
        comm.Scatterv([np.arange(total, dtype="d"), (counts, displs), MPI.DOUBLE] if r == 0 else None, recv, root=0)
        out["Scatterv"] = recv.tolist()
        ag = np.zeros(total)
        comm.Allgatherv([mine, MPI.DOUBLE], [ag, counts, MPI.DOUBLE])
        out["Allgatherv"] = ag.tolist()
        # Alltoallv: rank r sends j + 1 copies of r to rank j; receives r + 1 from each
        send = np.concatenate([np.full(j + 1, r, dtype="i4") for j in range(n)])
        rc = [r + 1] * n
        rv = np.zeros(sum(rc), dtype="i4")
        comm.Alltoallv([send, counts, displs, MPI.INT], [rv, rc, [i * (r + 1) for i in range(n)], MPI.INT])
        out["Alltoallv"] = rv.tolist()
        return out

    layout = [float(i) for i in range(n) for _ in range(i + 1)]
    for r, out in enumerate(run_ranks(n, prog)):
        assert out["Gatherv"] == (layout if r == 0 else [0.0] * total)
        assert out["Scatterv"] == [float(x) for x in range(displs[r], displs[r] + counts[r])]
        assert out["Allgatherv"] == layout
        assert out["Alltoallv"] == [i for i in range(n) for _ in range(r + 1)]


@pytest.mark.parametrize("n, expected", [
    (1, lambda n: 0), (2, lambda n: 2), (5, lambda n: 5 * 3), (8, lambda n: 8 * 3)])
def test_barrier_is_a_dissemination(n, expected):
    hub = Hub(n)
    run_ranks(n, lambda c: c.Barrier(), hub)
    assert len(hub.sent) == expected(n) and all(nb == 0 for _, _, nb in hub.sent)


@pytest.mark.parametrize("n", [2, 5, 8])
def test_tree_and_ring_traffic(n):
    hub = Hub(n)
    run_ranks(n, lambda c: c.bcast(b"x" * 100 if c.rank == 2 % n else None, root=2 % n), hub)
    assert len(hub.sent) == n - 1                          # a tree: every rank receives once
    assert max(sum(1 for s, _, _ in hub.sent if s == src) for src in range(n)) <= math.ceil(math.log2(n))
    hub = Hub(n)
    run_ranks(n, lambda c: c.allgather(c.rank), hub)
    assert {(s, d) for s, d, _ in hub.sent} == {(r, (r + 1) % n) for r in range(n)}   # a ring
    assert len(hub.sent) == n * (n - 1)
    hub = Hub(n)
    run_ranks(n, lambda c: c.allreduce(c.rank), hub)
    p2 = 1 << (n.bit_length() - 1)
    assert len(hub.sent) == 2 * (n - p2) + p2 * int(math.log2(p2))


@pytest.mark.parametrize("block, scattered", [(8, True), (32768, True), (32769, False)])
def test_alltoall_is_scattered_up_to_mpich_s_medium_size_and_pairwise_above(monkeypatch, block, scattered):
    """Up to 32 KiB a block every rank sends all its blocks before it reads anything; above,
    its second block leaves only after it has read (the pairwise exchange's first step)."""
    n, log, lock = 5, [[] for _ in range(5)], threading.Lock()
    send, wait = QueueTransport.send, QueueTransport.wait

    def logged_send(self, dest, payload, nbytes):
        with lock:
            log[self.rank].append("send")
        send(self, dest, payload, nbytes)

    def logged_wait(self, block_, what):
        got = wait(self, block_, what)
        if got:
            with lock:
                log[self.rank].append("read")
        return got

    monkeypatch.setattr(QueueTransport, "send", logged_send)
    monkeypatch.setattr(QueueTransport, "wait", logged_wait)
    def prog(c):
        got = np.zeros(n * block, dtype="u1")
        c.Alltoall([np.repeat(np.arange(n, dtype="u1") + 10 * c.rank, block), MPI.BYTE], [got, MPI.BYTE])
        return got

    for r, got in enumerate(run_ranks(n, prog)):
        assert (got == np.repeat(np.arange(n, dtype="u1") * 10 + r, block)).all()
    for r in range(n):
        assert log[r].count("send") == n - 1
        last_send = len(log[r]) - 1 - log[r][::-1].index("send")
        assert ("read" not in log[r][:last_send]) is scattered, log[r]


def test_user_any_tag_never_matches_collective_traffic():
    def prog(comm):
        pending = comm.irecv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG)
        comm.bcast("data", root=0)
        comm.Barrier()
        still = not pending.Test()
        comm.Barrier()                                # nobody sends before everyone has looked
        comm.send(f"p2p from {comm.rank}", (comm.rank + 1) % comm.size, 0)
        return still, pending.wait()

    assert run_ranks(3, prog) == [(True, "p2p from 2"), (True, "p2p from 0"), (True, "p2p from 1")]


def test_split_dup_and_messages_in_new_contexts():
    def prog(comm):
        r = comm.rank
        sub = comm.Split(color=r % 2, key=-r)        # ranks reversed inside each half
        none = comm.Split(color=MPI.UNDEFINED if r else 0)
        dup = comm.Dup()
        sub.send(("sub", r), (sub.rank + 1) % sub.size, 0)
        dup.send(("dup", r), (r + 1) % comm.size, 0)
        comm.send(("world", r), (r + 1) % comm.size, 0)
        got = (comm.recv(tag=0), dup.recv(tag=0), sub.recv(tag=0))
        return sub.rank, sub.size, sub.allgather(r), none == MPI.COMM_NULL, got

    res = run_ranks(5, prog)
    assert [x[:3] for x in res] == [(2, 3, [4, 2, 0]), (1, 2, [3, 1]), (1, 3, [4, 2, 0]), (0, 2, [3, 1]),
                                    (0, 3, [4, 2, 0])]
    assert [x[3] for x in res] == [False, True, True, True, True]
    assert res[0][4] == (("world", 4), ("dup", 4), ("sub", 2))


def test_cartesian_communicator():
    def prog(comm):
        dims = MPI.Compute_dims(comm.size, 2)
        cart = comm.Create_cart(dims, periods=[True, False])
        if cart == MPI.COMM_NULL:
            return None
        r = cart.rank
        coords = cart.Get_coords(r)
        assert cart.Get_cart_rank(coords) == r
        dup = cart.Dup()
        assert dup.Get_topo() == cart.Get_topo() and dup.allreduce(1) == comm.size
        row = cart.Sub([False, True])
        got = cart.sendrecv(r, dest=cart.Shift(0, 1)[1], source=cart.Shift(0, 1)[0])
        return dims, cart.Get_topo(), cart.Shift(1, 1), row.allgather(r), got

    res = run_ranks(6, prog)
    assert res[0][0] == [3, 2]
    assert res[3][1] == ([3, 2], [1, 0], [1, 1])             # periods as ints, as mpi4py gives them
    assert res[3][2] == (2, MPI.PROC_NULL)            # along the non-periodic dimension
    assert res[3][3] == [2, 3]
    assert res[0][4] == 4                               # periodic: from the last row
    res = run_ranks(5, lambda c: c.Create_cart([2, 2]) == MPI.COMM_NULL)
    assert res == [False] * 4 + [True]


@pytest.mark.parametrize("nnodes, dims, expected", [
    (16, 2, [4, 4]), (12, 2, [4, 3]), (6, 3, [3, 2, 1]), (7, 2, [7, 1]), (24, [0, 2, 0], [4, 2, 3]),
    (64, 3, [4, 4, 4]), (1, 2, [1, 1])])
def test_compute_dims(nnodes, dims, expected):
    assert MPI.Compute_dims(nnodes, dims) == expected


def test_compute_dims_impossible():
    with pytest.raises(MPI.Exception) as e:
        MPI.Compute_dims(10, [3, 0])
    assert e.value.Get_error_class() == MPI.ERR_DIMS


_OPS = {"SUM": (MPI.SUM, np.add), "PROD": (MPI.PROD, np.multiply), "MAX": (MPI.MAX, np.maximum),
        "MIN": (MPI.MIN, np.minimum), "BAND": (MPI.BAND, np.bitwise_and), "BOR": (MPI.BOR, np.bitwise_or),
        "LAND": (MPI.LAND, np.logical_and), "LOR": (MPI.LOR, np.logical_or)}
_ARRAY_OBJECT_OPS = {"SUM", "PROD", "BAND", "BOR"}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 7), length=st.integers(1, 6), op=st.sampled_from(sorted(_OPS)), root=st.integers(0, 6),
       seed=st.integers(0, 2**32 - 1))
def test_reductions_equal_numpys(n, length, op, root, seed):
    rng = np.random.default_rng(seed)
    data = [rng.integers(-5, 6, size=length).astype("i8") for _ in range(n)]
    mpi_op, np_op = _OPS[op]
    want = functools.reduce(np_op, data).astype("i8")
    root %= n

    def prog(comm):
        mine = data[comm.rank]
        out, red = np.zeros(length, dtype="i8"), np.zeros(length, dtype="i8")
        comm.Allreduce([mine, MPI.INT64_T], [out, MPI.INT64_T], op=mpi_op)
        comm.Reduce(mine, red, op=mpi_op, root=root)
        # the object API applies mpi4py's Python function to the arrays: element-wise only for
        # the operators (+, *, &, |); MAX's `b > a` on arrays has no truth value there
        return out, red, comm.allreduce(mine, op=mpi_op) if op in _ARRAY_OBJECT_OPS else None

    for r, (out, red, obj) in enumerate(run_ranks(n, prog)):
        assert out.tolist() == want.tolist()
        if op in _ARRAY_OBJECT_OPS:
            assert obj.astype("i8").tolist() == want.tolist()
        if r == root:
            assert red.tolist() == want.tolist()


def test_float_reductions_are_in_rank_order_whatever_the_root():
    values = [0.1 * (i + 1) ** 3 for i in range(7)]

    def prog(comm):
        return [comm.reduce(values[comm.rank], root=root) for root in range(comm.size)] + [
            comm.allreduce(values[comm.rank])]

    res = run_ranks(7, prog)
    results = {res[root][root] for root in range(7)}
    assert len(results) == 1 and {x[-1] for x in res} == {res[0][-1]}
