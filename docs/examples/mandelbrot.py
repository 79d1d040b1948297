"""The Mandelbrot set by master and workers: rank 0 hands out rows; a worker computes a
row's iteration counts and sends them back with the row number as the tag; the master
takes results in whatever order they come (``Probe`` with ANY_SOURCE and ANY_TAG, the
``Status`` saying who sent which row) and gives that worker the next row, until none are
left. With one rank, rank 0 computes every row itself.

Run it (WIDTH 64, HEIGHT 48, MAXIT 200 by default)::

    mcemu run -n 16 --shape 4x4 python docs/examples/mandelbrot.py [WIDTH HEIGHT MAXIT]
    python -m nodes.mpi.local -n 4 python docs/examples/mandelbrot.py [WIDTH HEIGHT MAXIT]

It prints the image's checksum (the sum of the counts, and the sum of count times row
number times column number plus one), which a serial run reproduces.
"""
import sys

import numpy as np
from mpi4py import MPI

WORK, STOP = 1, 2
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
args = [int(a) for a in sys.argv[1:4]]
width, height, maxit = args + [64, 48, 200][len(args):]


def row_counts(y: int) -> np.ndarray:
    c = (-2.0 + 3.0 * np.arange(width) / width) + 1j * (-1.0 + 2.0 * y / height)
    z = np.zeros(width, dtype=complex)
    counts = np.zeros(width, dtype="i4")
    for _ in range(maxit):
        inside = np.abs(z) <= 2.0
        z[inside] = z[inside] ** 2 + c[inside]
        counts += inside
    return counts


def master() -> np.ndarray:
    image = np.zeros((height, width), dtype="i4")
    next_row, busy = 0, 0
    for worker in range(1, size):          # one row to each worker to begin
        if next_row < height:
            comm.send(next_row, dest=worker, tag=WORK)
            next_row, busy = next_row + 1, busy + 1
        else:
            comm.send(None, dest=worker, tag=STOP)
    status = MPI.Status()
    while busy:
        comm.Probe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=status)
        worker, row = status.Get_source(), status.Get_tag()
        comm.Recv([image[row], MPI.INT], source=worker, tag=row)
        if next_row < height:
            comm.send(next_row, dest=worker, tag=WORK)
            next_row += 1
        else:
            comm.send(None, dest=worker, tag=STOP)
            busy -= 1
    for y in range(next_row, height):       # no workers: rank 0 does it all
        image[y] = row_counts(y)
    return image


def worker() -> None:
    status = MPI.Status()
    while True:
        row = comm.recv(source=0, tag=MPI.ANY_TAG, status=status)
        if status.Get_tag() == STOP:
            return
        comm.Send([row_counts(row), MPI.INT], dest=0, tag=row)


t0 = MPI.Wtime()
if rank == 0:
    img = master()
    weights = np.arange(1, height + 1)[:, None] * np.arange(1, width + 1)[None, :]
    print(f"mandelbrot {width}x{height} maxit {maxit} on {size} ranks in {MPI.Wtime() - t0:.6f} s")
    print(f"checksum {int(img.sum())} {int((img.astype('i8') * weights).sum())}")
else:
    worker()
