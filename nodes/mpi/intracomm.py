"""``MPI.Intracomm``: the collectives in both APIs (algorithms: nodes.mpi.collectives) and
the communicators made from one (``Dup``, ``Split``, ``Create_cart``).

Object API: ``barrier``, ``bcast``, ``scatter``, ``gather``, ``allgather``, ``alltoall``,
``reduce``, ``allreduce``, ``scan``, ``exscan``. Buffer API: the same capitalised, the
vector forms ``Scatterv``, ``Gatherv``, ``Allgatherv``, ``Alltoallv``, and
``Reduce_scatter_block``; ``MPI.IN_PLACE`` as the send buffer of ``Reduce`` (at the root),
``Allreduce``, ``Scan``, ``Exscan``, ``Gather``/``Gatherv`` (at the root), ``Allgather``/
``Allgatherv``, ``Alltoall``/``Alltoallv`` and ``Reduce_scatter_block`` (as MPI defines it:
the receive buffer holds the data to send, and the result replaces it), and as the receive
buffer of ``Scatter``/``Scatterv`` at the root.

A new communicator needs context ids that every member agrees on and none of them uses:
each process counts up its next free id (``Engine.next_ctx``); the members agree on the
largest of theirs (Split: with the colors, by one allgather; Dup: an allreduce) and all
move past it. Groups of different colors may share an id: they have no member in common.
"""
from __future__ import annotations

import pickle

import numpy as np

from nodes.mpi import collectives as C
from nodes.mpi.buffers import message, vector
from nodes.mpi.comm import Comm
from nodes.mpi.constants import IN_PLACE, MAX, SUM, UNDEFINED
from nodes.mpi.errors import ERR_COUNT, ERR_ROOT, MPIException
from nodes.mpi.envelope import BUF, HEAD, OBJ

_U8 = np.dtype(np.uint8)


def _pickle(obj) -> bytes:
    return pickle.dumps(obj, 5)


def _unpickle(payload) -> object:
    return pickle.loads(memoryview(payload)[HEAD:])


def _bytes_of(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1).view(_U8)


class Intracomm(Comm):

    def _root(self, root: int) -> int:
        if not 0 <= root < self._size:
            raise MPIException(ERR_ROOT, f"root {root} is outside {self._name} (size {self._size})")
        return root

    def _is_root(self, root: int) -> bool:
        return self._rank == self._root(root)

    # -- object API -------------------------------------------------------------------------

    def barrier(self) -> None:
        C.barrier(self)

    Barrier = barrier

    def bcast(self, obj=None, root: int = 0):
        if self._is_root(root):
            C.bcast(self, root, OBJ, _pickle(obj))
            return obj
        return pickle.loads(C.bcast(self, root, OBJ, None))

    def reduce(self, sendobj, op=SUM, root: int = 0):
        self._root(root)
        return C.reduce(self, root, sendobj, op, _pickle, _unpickle, OBJ)

    def allreduce(self, sendobj, op=SUM):
        return C.allreduce(self, sendobj, op, _pickle, _unpickle, OBJ)

    def scan(self, sendobj, op=SUM):
        return C.scan(self, sendobj, op, _pickle, _unpickle, OBJ, False)

    def exscan(self, sendobj, op=SUM):
        return C.scan(self, sendobj, op, _pickle, _unpickle, OBJ, True)

    def gather(self, sendobj, root: int = 0):
        got = C.gather(self, self._root(root), OBJ, _pickle(sendobj))
        return None if got is None else [pickle.loads(b) for b in got]

    def scatter(self, sendobj, root: int = 0):
        blocks = None
        if self._is_root(root):
            blocks = [_pickle(x) for x in sendobj]
            if len(blocks) != self._size:
                raise MPIException(ERR_COUNT, f"scatter needs {self._size} items at the root, got {len(blocks)}")
        return pickle.loads(C.scatter(self, root, OBJ, blocks))

    def allgather(self, sendobj) -> list:
        return [pickle.loads(b) for b in C.allgather(self, OBJ, _pickle(sendobj))]

    def alltoall(self, sendobj) -> list:
        blocks = [_pickle(x) for x in sendobj]
        if len(blocks) != self._size:
            raise MPIException(ERR_COUNT, f"alltoall needs {self._size} items, got {len(blocks)}")
        return [pickle.loads(b) for b in C.alltoall(self, OBJ, blocks)]

    # -- buffer API: rooted -----------------------------------------------------------------

    def Bcast(self, buf, root: int = 0) -> None:
        b = message(buf)
        if self._is_root(root):
            C.bcast(self, root, BUF, b.data())
        else:
            b.fill(C.bcast(self, root, BUF, None))

    def _reduction(self, sendbuf, recvbuf, op, fn, *args):
        """Reduce/Allreduce/Scan of buffers: element-wise op on the datatype's numpy dtype."""
        rb = message(recvbuf) if recvbuf is not None else None
        src = rb if sendbuf is IN_PLACE else message(sendbuf)
        value = src.values().copy() if sendbuf is IN_PLACE else src.values()
        dtype = src.dt.dtype
        result = fn(self, *args, value, op.arrays, _bytes_of,
                    lambda p: np.frombuffer(p, dtype, offset=HEAD), BUF)
        return rb, result

    def Reduce(self, sendbuf, recvbuf, op=SUM, root: int = 0) -> None:
        is_root = self._is_root(root)
        rb, result = self._reduction(sendbuf, recvbuf if is_root else None, op, C.reduce, root)
        if is_root:
            rb.fill(_bytes_of(result))

    def Allreduce(self, sendbuf, recvbuf, op=SUM) -> None:
        rb, result = self._reduction(sendbuf, recvbuf, op, C.allreduce)
        rb.fill(_bytes_of(result))

    def Scan(self, sendbuf, recvbuf, op=SUM) -> None:
        rb, result = self._reduction(sendbuf, recvbuf, op, _scan_incl)
        rb.fill(_bytes_of(result))

    def Exscan(self, sendbuf, recvbuf, op=SUM) -> None:
        rb, result = self._reduction(sendbuf, recvbuf, op, _scan_excl)
        if result is not None:
            rb.fill(_bytes_of(result))

    def Reduce_scatter_block(self, sendbuf, recvbuf, op=SUM) -> None:
        """An Allreduce of the whole send buffer, each rank keeping its block (rank order). With
        IN_PLACE the receive buffer is the send buffer and the block goes to its start."""
        rb = message(recvbuf)
        sb = rb if sendbuf is IN_PLACE else message(sendbuf)
        value = sb.values().copy() if sendbuf is IN_PLACE else sb.values()
        full = C.allreduce(self, value, op.arrays, _bytes_of,
                           lambda p: np.frombuffer(p, sb.dt.dtype, offset=HEAD), BUF)
        c = sb.count // self._size
        rb.fill(_bytes_of(full[self._rank * c:(self._rank + 1) * c]))

    def Gather(self, sendbuf, recvbuf, root: int = 0) -> None:
        n, is_root = self._size, self._is_root(root)
        rb = message(recvbuf) if is_root else None
        c = rb.count // n if is_root else 0
        data = rb.data(self._rank * c, c) if sendbuf is IN_PLACE else message(sendbuf).data()
        got = C.gather(self, root, BUF, data)
        if is_root:
            for i, block in enumerate(got):
                if i != self._rank or sendbuf is not IN_PLACE:
                    rb.fill(block, 0, i * c, c)

    def Gatherv(self, sendbuf, recvbuf, root: int = 0) -> None:
        is_root = self._is_root(root)
        if is_root:
            rb, counts, displs = vector(recvbuf, self._size)
        data = (rb.data(displs[self._rank], counts[self._rank]) if sendbuf is IN_PLACE
                else message(sendbuf).data())
        got = C.gather(self, root, BUF, data)
        if is_root:
            for i, block in enumerate(got):
                if i != self._rank or sendbuf is not IN_PLACE:
                    rb.fill(block, 0, displs[i], counts[i])

    def Scatter(self, sendbuf, recvbuf, root: int = 0) -> None:
        n, is_root = self._size, self._is_root(root)
        blocks = None
        if is_root:
            sb = message(sendbuf)
            c = sb.count // n
            blocks = [sb.data(i * c, c) for i in range(n)]
        mine = C.scatter(self, root, BUF, blocks)
        if not (is_root and recvbuf is IN_PLACE):
            message(recvbuf).fill(mine)

    def Scatterv(self, sendbuf, recvbuf, root: int = 0) -> None:
        is_root = self._is_root(root)
        blocks = None
        if is_root:
            sb, counts, displs = vector(sendbuf, self._size)
            blocks = [sb.data(d, c) for c, d in zip(counts, displs)]
        mine = C.scatter(self, root, BUF, blocks)
        if not (is_root and recvbuf is IN_PLACE):
            message(recvbuf).fill(mine)

    # -- buffer API: everyone ---------------------------------------------------------------

    def Allgather(self, sendbuf, recvbuf) -> None:
        rb = message(recvbuf)
        c = rb.count // self._size
        data = rb.data(self._rank * c, c) if sendbuf is IN_PLACE else message(sendbuf).data()
        for i, block in enumerate(C.allgather(self, BUF, data)):
            if i != self._rank or sendbuf is not IN_PLACE:
                rb.fill(block, 0, i * c, c)

    def Allgatherv(self, sendbuf, recvbuf) -> None:
        rb, counts, displs = vector(recvbuf, self._size)
        r = self._rank
        data = rb.data(displs[r], counts[r]) if sendbuf is IN_PLACE else message(sendbuf).data()
        for i, block in enumerate(C.allgather(self, BUF, data)):
            if i != r or sendbuf is not IN_PLACE:
                rb.fill(block, 0, displs[i], counts[i])

    def Alltoall(self, sendbuf, recvbuf) -> None:
        # IN_PLACE: the blocks are copied out (bytes) before any is received over them
        n = self._size
        rb = message(recvbuf)
        sb = rb if sendbuf is IN_PLACE else message(sendbuf)
        sc, rc = sb.count // n, rb.count // n
        got = C.alltoall(self, BUF, [bytes(sb.data(i * sc, sc)) for i in range(n)])
        for i, block in enumerate(got):
            rb.fill(block, 0, i * rc, rc)

    def Alltoallv(self, sendbuf, recvbuf) -> None:
        n = self._size
        rb, rcounts, rdispls = vector(recvbuf, n)
        sb, scounts, sdispls = (rb, rcounts, rdispls) if sendbuf is IN_PLACE else vector(sendbuf, n)
        got = C.alltoall(self, BUF, [bytes(sb.data(d, c)) for c, d in zip(scounts, sdispls)])
        for i, block in enumerate(got):
            rb.fill(block, 0, rdispls[i], rcounts[i])

    # -- new communicators ------------------------------------------------------------------

    def _derive(self, color: int, key: int):
        """(world group, context) of this rank's part of a split; None for UNDEFINED."""
        info = self.allgather((color, key, self._eng.next_ctx))
        base = max(c for _, _, c in info)
        self._eng.next_ctx = base + 2
        if color == UNDEFINED:
            return None
        members = sorted((k, i) for i, (c, k, _) in enumerate(info) if c == color)
        return tuple(self._group[i] for _, i in members), base

    def _make(self, cls, derived, name: str):
        from nodes.mpi.MPI import COMM_NULL
        if derived is None:
            return COMM_NULL
        comm = cls()
        comm._setup(self._eng, derived[0], derived[1], name)
        return comm

    def Split(self, color: int = 0, key: int = 0) -> "Intracomm":
        return self._make(Intracomm, self._derive(color, key), f"{self._name}.Split({color})")

    def _dup(self, cls):
        """A communicator of class ``cls`` on the same group, in a new context."""
        base = self.allreduce(self._eng.next_ctx, MAX)
        self._eng.next_ctx = base + 2
        return self._make(cls, (self._group, base), f"{self._name}.Dup")

    def Dup(self, info=None) -> "Intracomm":
        return self._dup(type(self))  # as mpi4py's: a subclass's (mpi4py.util.pkl5's) stays one

    Clone = Dup

    def Create_cart(self, dims, periods=None, reorder: bool = False):
        from nodes.mpi.topo import create_cart
        return create_cart(self, dims, periods)


def _scan_incl(comm, value, combine, enc, dec, kind):
    return C.scan(comm, value, combine, enc, dec, kind, False)


def _scan_excl(comm, value, combine, enc, dec, kind):
    return C.scan(comm, value, combine, enc, dec, kind, True)
