"""Transpose an N x N matrix distributed by blocks of rows, with one ``Alltoall``: rank r
holds rows r*b .. r*b+b-1 (b = N / size); block j of its columns goes to rank j, and the
blocks it receives, each transposed, are its rows of the transpose.

Run it (N: 8 x size by default; a multiple of the number of ranks)::

    mcemu run -n 16 --shape 4x4 python docs/examples/transpose.py [N]
    python -m nodes.mpi.local -n 4 python docs/examples/transpose.py [N]

A[i, j] = i * N + j, so every rank checks its rows of the transpose against the formula;
the checks are combined by ``allreduce`` (MPI.LAND) and rank 0 prints "transpose ok".
"""
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
N = int(sys.argv[1]) if len(sys.argv) > 1 else 8 * size
if N % size:
    raise SystemExit(f"N={N} is not a multiple of {size} ranks")
b = N // size

rows = np.arange(rank * b, (rank + 1) * b, dtype="d")[:, None] * N + np.arange(N, dtype="d")[None, :]
# send block j (columns j*b ..) to rank j: lay the blocks out one after another
send = np.ascontiguousarray(rows.reshape(b, size, b).transpose(1, 0, 2))
recv = np.empty_like(send)
t0 = MPI.Wtime()
comm.Alltoall([send, MPI.DOUBLE], [recv, MPI.DOUBLE])
mine = np.hstack([recv[i].T for i in range(size)])   # rows rank*b .. of the transpose

expected = np.arange(N, dtype="d")[None, :] * N + np.arange(rank * b, (rank + 1) * b, dtype="d")[:, None]
good = comm.allreduce(bool(np.array_equal(mine, expected)), op=MPI.LAND)
if rank == 0:
    print(f"transpose of {N}x{N} on {size} ranks in {MPI.Wtime() - t0:.6f} s")
    print("transpose ok" if good else "transpose WRONG")
