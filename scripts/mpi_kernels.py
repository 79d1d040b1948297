"""The message kernels of scripts/bench_mpi.py, an mpi4py program (it runs as a job of a
``--network wormhole`` cluster, under ``python -m nodes.mpi.local`` or a real ``mpiexec``)::

    python scripts/mpi_kernels.py pingpong BYTES ITERATIONS
    python scripts/mpi_kernels.py alltoall BYTES ITERATIONS

``pingpong``: ranks 2k and 2k+1 (neighbours in a row of a mesh job) trade one message of BYTES
each way per iteration with ``Send``/``Recv`` (64 ranks: 32 pairs, 2 x 32 messages an
iteration). ``alltoall``: ``Alltoall`` of BYTES per destination (nodes.mpi.collectives:
scattered up to 32 KiB a block, pairwise above; n - 1 messages from every rank an iteration).
Between a ``Barrier`` before the loop and one after it, each rank times the loop with ``time.perf_counter`` (wall), ``time.process_time``
(its CPU) and ``MPI.Wtime`` (virtual time on a ``--net-time virtual`` cluster); rank 0 prints
one JSON line: the loop's messages (those the kernel sends, the barriers' not counted), the
slowest rank's wall and virtual seconds and the ranks' summed CPU seconds.
"""
import json
import os
import resource
import sys
import time


def _switches() -> int:
    """This process's context switches so far (voluntary: its waits; involuntary: preempted)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_nvcsw + r.ru_nivcsw


def kernel(name: str, nbytes: int, iterations: int) -> None:
    import numpy as np
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank, n = comm.Get_rank(), comm.Get_size()
    if name == "pingpong":
        if n % 2:
            raise SystemExit("pingpong needs an even number of ranks")
        buf = np.zeros(nbytes, dtype=np.uint8)
        peer = rank ^ 1
        messages = n * iterations
    elif name == "alltoall":
        send, got = np.zeros(nbytes * n, dtype=np.uint8), np.zeros(nbytes * n, dtype=np.uint8)
        messages = n * (n - 1) * iterations
    else:
        raise SystemExit(f"unknown kernel {name!r}: pingpong or alltoall")
    comm.Barrier()
    t0, s0 = os.times(), _switches()
    w0, c0, v0 = time.perf_counter(), time.process_time(), MPI.Wtime()
    for _ in range(iterations):
        if name == "alltoall":
            comm.Alltoall([send, MPI.BYTE], [got, MPI.BYTE])
        elif rank % 2 == 0:
            comm.Send([buf, MPI.BYTE], dest=peer, tag=1)
            comm.Recv([buf, MPI.BYTE], source=peer, tag=1)
        else:
            comm.Recv([buf, MPI.BYTE], source=peer, tag=1)
            comm.Send([buf, MPI.BYTE], dest=peer, tag=1)
    comm.Barrier()
    mine = (time.perf_counter() - w0, time.process_time() - c0, MPI.Wtime() - v0)
    t1 = os.times()
    mine += (t1.system - t0.system, _switches() - s0)
    every = comm.gather(mine, root=0)
    if rank == 0:
        print(json.dumps({"kernel": name, "bytes": nbytes, "iterations": iterations, "ranks": n,
                          "messages": messages, "wall_s": max(e[0] for e in every),
                          "cpu_s": sum(e[1] for e in every), "vtime_s": max(e[2] for e in every),
                          "sys_s": sum(e[3] for e in every), "switches": sum(e[4] for e in every)}), flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 4:
        kernel(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
    else:
        raise SystemExit(__doc__)
