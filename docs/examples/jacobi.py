"""A 2-D Jacobi iteration for Laplace's equation on an N x N grid (the top edge held at
1, the others at 0), split into blocks over a Cartesian communicator (``Create_cart`` on
``Compute_dims``); each sweep trades one-cell halos with the four neighbours by
``Sendrecv`` (PROC_NULL at the grid's edges) and sums the squared change by ``Allreduce``.

Run it (N: 1024, ITERATIONS: 100 by default; N divisible by the grid's dimensions)::

    mcemu run -n 16 --shape 4x4 python docs/examples/jacobi.py [N] [ITERATIONS]
    python -m nodes.mpi.local -n 4 python docs/examples/jacobi.py [N] [ITERATIONS]

It prints the residual (the root of the summed squared change) every tenth of the run,
then the grid's sum (a checksum a serial run reproduces) and the ``MPI.Wtime()`` elapsed:
virtual time on a ``--net-time virtual`` cluster.

The default grid gives each of 16 ranks a 256 x 256 block: a sweep computes for about 0.3 ms
between its messages. A smaller one times mostly how cold a rank's caches are when it wakes up
for its next interval, which depends on what else the host runs (docs/ARCHITECTURE.md, "Host
speed"); a 64 x 64 grid on 16 ranks is 16 x 16 points a node, no multicomputer's problem.
"""
import sys

import numpy as np
from mpi4py import MPI

world = MPI.COMM_WORLD
N = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 100

dims = MPI.Compute_dims(world.Get_size(), 2)
cart = world.Create_cart(dims, periods=[False, False], reorder=False)
(py, px), (cy, cx) = dims, cart.Get_coords(cart.Get_rank())
if N % py or N % px:
    raise SystemExit(f"N={N} is not divisible by the grid {dims}")
ny, nx = N // py, N // px
up, down = cart.Shift(0, 1)      # up: the row of blocks above (smaller y), PROC_NULL at the top
left, right = cart.Shift(1, 1)

u = np.zeros((ny + 2, nx + 2))
if cy == 0:
    u[0, :] = 1.0                # the top edge of the whole grid
send_col, recv_col = np.empty(ny), np.empty(ny)


def exchange(u):
    """Halos: rows are contiguous; columns go through contiguous copies."""
    cart.Sendrecv([u[1, 1:-1], MPI.DOUBLE], up, 0, [u[-1, 1:-1], MPI.DOUBLE], down, 0)
    cart.Sendrecv([u[-2, 1:-1], MPI.DOUBLE], down, 1, [u[0, 1:-1], MPI.DOUBLE], up, 1)
    for dest, source, col_out, col_in, tag in ((left, right, 1, -1, 2), (right, left, -2, 0, 3)):
        send_col[:] = u[1:-1, col_out]
        cart.Sendrecv([send_col, MPI.DOUBLE], dest, tag, [recv_col, MPI.DOUBLE], source, tag)
        if source != MPI.PROC_NULL:
            u[1:-1, col_in] = recv_col


t0 = MPI.Wtime()
local, total = np.zeros(1), np.zeros(1)
for it in range(1, iterations + 1):
    exchange(u)
    new = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    local[0] = np.sum((new - u[1:-1, 1:-1]) ** 2)
    u[1:-1, 1:-1] = new
    cart.Allreduce([local, MPI.DOUBLE], [total, MPI.DOUBLE], op=MPI.SUM)
    if it % max(1, iterations // 10) == 0 and cart.Get_rank() == 0:
        print(f"iteration {it} residual {np.sqrt(total[0]):.6e}", flush=True)
elapsed = MPI.Wtime() - t0
checksum = cart.reduce(float(np.sum(u[1:-1, 1:-1])), op=MPI.SUM, root=0)
if cart.Get_rank() == 0:
    print(f"grid {N}x{N} on {dims[0]}x{dims[1]} ranks, checksum {checksum:.12f}")
    print(f"elapsed {elapsed:.6f} s (MPI.Wtime)")
