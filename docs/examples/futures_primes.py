"""Primes with mpi4py.futures: rank 0 runs this program, every other rank is a worker of its
pool (mpi4py's futures demo, with numbers small enough for a laptop)::

    mcemu run -n 4 python -m mpi4py.futures docs/examples/futures_primes.py [N]
    mpiexec -n 4 python -m mpi4py.futures docs/examples/futures_primes.py [N]   # a real MPI

``map`` sends each call to a free worker and gives the results back in order; with
``chunksize`` a task is several calls, one message each way for all of them.
"""
import math
import sys

from mpi4py.futures import MPIPoolExecutor

NUMBERS = [112272535099, 112582705987, 112272535095, 115280095211, 115797848083, 1099726899301, 1099726899303]


def is_prime(n):
    if n < 2 or n % 2 == 0:
        return n == 2
    return all(n % i for i in range(3, math.isqrt(n) + 1, 2))


def count_primes(lo, hi):
    return sum(map(is_prime, range(lo, hi)))


if __name__ == "__main__":
    N = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    step = max(1, N // 40)
    with MPIPoolExecutor() as executor:
        for number, prime in zip(NUMBERS, executor.map(is_prime, NUMBERS)):
            print(f"{number} is prime: {prime}")
        starts = range(0, N, step)
        counts = executor.map(count_primes, starts, [min(N, lo + step) for lo in starts], chunksize=4)
        print(f"primes below {N}: {sum(counts)} ({executor.num_workers} workers)")
