"""Cartesian communicators (``Create_cart``) and ``MPI.Compute_dims``.

Ranks are laid out in row-major order (the last dimension varies fastest), as MPI does;
``reorder`` is accepted and ignored (rank r of the new communicator is rank r of the old:
where the ranks sit on the machine is the allocator's business, not the program's). The
ranks beyond the grid get MPI.COMM_NULL.
"""
from __future__ import annotations

from math import prod

from nodes.mpi.constants import CART, PROC_NULL, UNDEFINED
from nodes.mpi.errors import ERR_ARG, ERR_DIMS, ERR_RANK, MPIException
from nodes.mpi.intracomm import Intracomm


class Cartcomm(Intracomm):
    _dims: list
    _periods: list

    def _topo(self, dims: list, periods: list) -> "Cartcomm":
        self._dims, self._periods = list(dims), list(periods)
        self._coords = self.Get_coords(self._rank)
        return self

    def Get_topology(self) -> int:
        return CART

    def Get_dim(self) -> int:
        return len(self._dims)

    ndim = dim = property(Get_dim)

    def Get_topo(self):
        return list(self._dims), list(self._periods), list(self._coords)

    topo = property(Get_topo)
    dims = property(lambda self: list(self._dims))
    periods = property(lambda self: list(self._periods))
    coords = property(lambda self: list(self._coords))

    def Get_coords(self, rank: int) -> list:
        if not 0 <= rank < self._size:
            raise MPIException(ERR_RANK, f"rank {rank} is outside {self._name} (size {self._size})")
        coords = []
        for d in reversed(self._dims):
            coords.append(rank % d)
            rank //= d
        return coords[::-1]

    def Get_cart_rank(self, coords) -> int:
        if len(coords) != len(self._dims):
            raise MPIException(ERR_ARG, f"{len(coords)} coordinates for a {len(self._dims)}-D grid")
        rank = 0
        for c, d, p in zip(coords, self._dims, self._periods):
            if p:
                c %= d
            elif not 0 <= c < d:
                raise MPIException(ERR_RANK, f"coordinates {list(coords)} are outside the grid {self._dims}")
            rank = rank * d + c
        return rank

    def _neighbour(self, direction: int, disp: int) -> int:
        coords = list(self._coords)
        c = coords[direction] + disp
        d = self._dims[direction]
        if not self._periods[direction] and not 0 <= c < d:
            return PROC_NULL
        coords[direction] = c % d
        return self.Get_cart_rank(coords)

    def Shift(self, direction: int, disp: int):
        """(source, dest): the ranks ``disp`` steps back and forward along ``direction``."""
        if not 0 <= direction < len(self._dims):
            raise MPIException(ERR_DIMS, f"direction {direction} of a {len(self._dims)}-D grid")
        return self._neighbour(direction, -disp), self._neighbour(direction, disp)

    def Sub(self, remain_dims) -> "Cartcomm":
        """The sub-grid through this rank keeping the dimensions where remain_dims is true."""
        keep = [i for i, k in enumerate(remain_dims) if k]
        color = sum(self._coords[i] * prod(self._dims[i + 1:]) for i in range(len(self._dims)) if i not in keep)
        sub = self._make(Cartcomm, self._derive(color, self._rank), f"{self._name}.Sub")
        return sub._topo([self._dims[i] for i in keep], [self._periods[i] for i in keep])

    def Dup(self, info=None) -> "Cartcomm":
        return self._dup(Cartcomm)._topo(self._dims, self._periods)

    Clone = Dup


def create_cart(comm: Intracomm, dims, periods=None):
    dims = [int(d) for d in dims]
    if periods is None or isinstance(periods, bool):
        periods = [bool(periods)] * len(dims)
    periods = [bool(p) for p in periods]
    if len(periods) != len(dims) or any(d <= 0 for d in dims):
        raise MPIException(ERR_DIMS, f"dims {dims} with periods {periods}")
    cells = prod(dims)
    if cells > comm._size:
        raise MPIException(ERR_DIMS, f"a grid of {cells} ranks ({dims}) on a communicator of {comm._size}")
    r = comm._rank
    derived = comm._derive(0 if r < cells else UNDEFINED, r)
    cart = comm._make(Cartcomm, derived, f"{comm._name}.Create_cart")
    return cart._topo(dims, periods) if derived is not None else cart


def _factors(n: int) -> list:
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


def Compute_dims(nnodes: int, dims) -> list:
    """MPI_Dims_create: a balanced grid of ``nnodes`` (non-increasing sizes in the free
    entries; the non-zero entries of ``dims`` are kept). Each prime factor, largest first,
    multiplies the free dimension that is smallest so far."""
    dims = [0] * dims if isinstance(dims, int) else [int(d) for d in dims]
    fixed = prod(d for d in dims if d > 0)
    free = [i for i, d in enumerate(dims) if d == 0]
    if any(d < 0 for d in dims) or nnodes % fixed or (not free and fixed != nnodes):
        raise MPIException(ERR_DIMS, f"cannot make a grid of {nnodes} with dims {dims}")
    sizes = [1] * len(free)
    for f in sorted(_factors(nnodes // fixed), reverse=True):
        if sizes:
            sizes[sizes.index(min(sizes))] *= f
    for i, s in zip(free, sorted(sizes, reverse=True)):
        dims[i] = s
    return dims

