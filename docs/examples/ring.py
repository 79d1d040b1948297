"""A token goes round a ring of ranks: each rank adds its rank number and passes it on.

Run it (any number of ranks; LAPS, 3 by default)::

    mcemu run -n 16 --shape 4x4 python docs/examples/ring.py [LAPS]
    python -m nodes.mpi.local -n 4 python docs/examples/ring.py [LAPS]

Rank 0 starts the token at 0 and receives it back after each lap: after k laps it is
k * (0 + 1 + ... + n-1). The same is done with a numpy array (the buffer API: Send/Recv),
every rank adding its rank to every element. The last line is "ring ok" when both agree.
"""
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
laps = int(sys.argv[1]) if len(sys.argv) > 1 else 3
right, left = (rank + 1) % size, (rank - 1) % size

token = 0
vector = np.zeros(4, dtype="d")
t0 = MPI.Wtime()
for lap in range(laps):
    if rank == 0:
        comm.send(token, dest=right, tag=lap)
        comm.Send([vector, MPI.DOUBLE], dest=right, tag=lap)
        token = comm.recv(source=left, tag=lap)
        comm.Recv([vector, MPI.DOUBLE], source=left, tag=lap)
        print(f"lap {lap + 1}: token {token}", flush=True)
    else:
        token = comm.recv(source=left, tag=lap) + rank
        comm.Recv([vector, MPI.DOUBLE], source=left, tag=lap)
        vector += rank
        comm.send(token, dest=right, tag=lap)
        comm.Send([vector, MPI.DOUBLE], dest=right, tag=lap)

if rank == 0:
    expected = laps * size * (size - 1) // 2
    good = token == expected and bool(np.all(vector == expected))
    print(f"ring: {size} ranks, {laps} laps, token {token}, expected {expected}, "
          f"{MPI.Wtime() - t0:.6f} s")
    print("ring ok" if good else "ring WRONG")
