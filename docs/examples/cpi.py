"""Compute pi by the midpoint rule on 4 / (1 + x^2) over [0, 1]: rank 0 broadcasts the
number of intervals (``Bcast``), each rank sums every size-th interval, and ``Reduce``
adds the parts at rank 0 (the classic MPICH cpi, in mpi4py's buffer API).

Run it (INTERVALS: 1,000,000 by default)::

    mcemu run -n 16 --shape 4x4 python docs/examples/cpi.py [INTERVALS]
    python -m nodes.mpi.local -n 4 python docs/examples/cpi.py [INTERVALS]
"""
import math
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()

n = np.zeros(1, dtype="i8")
if rank == 0:
    n[0] = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
t0 = MPI.Wtime()
comm.Bcast([n, MPI.INT64_T], root=0)

h = 1.0 / n[0]
x = h * (np.arange(rank + 1, n[0] + 1, size, dtype="d") - 0.5)
mypi = np.array([h * np.sum(4.0 / (1.0 + x * x))])
pi = np.zeros(1)
comm.Reduce([mypi, MPI.DOUBLE], [pi, MPI.DOUBLE], op=MPI.SUM, root=0)
# the object API too: every rank learns the count of intervals summed
counted = comm.allreduce(len(x), op=MPI.SUM)

if rank == 0:
    print(f"pi is approximately {pi[0]:.16f}, error is {abs(pi[0] - math.pi):.16f}")
    print(f"intervals {counted} of {n[0]}, {size} ranks, {MPI.Wtime() - t0:.6f} s")
