"""Run the same mpi4py programs under a real MPI and under mcemu's, and compare what they print.

    python -m venv /tmp/realmpi && /tmp/realmpi/bin/pip install mpi4py mpich numpy
    python scripts/compare_mpi.py --real /tmp/realmpi [-n 4]

Each program (docs/examples and the mpi4py-demo-style fixtures) runs with the real
``mpiexec -n N`` of that environment and with ``python -m nodes.mpi.local -n N`` (mcemu's MPI,
no cluster); the lines that report a time are left out (they differ by nature), the rest are
compared as sets of lines (ranks print in any order). Prints one line per program and exits 1
when one differs. Every process is a subprocess with a timeout: nothing is left running.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMING = re.compile(r"Wtime| in [0-9.]+ s|elapsed|[0-9]\.[0-9]+ s\b")


def programs(n: int) -> list[tuple]:
    """What runs on ``n`` ranks: the grids are multiples of ``n`` (the transpose's rows, and each
    side of the Jacobi's Compute_dims grid divides n), so every size compares results, not the
    refusal of a grid that does not divide (whose lines the real mpiexec interleaves)."""
    return [("docs/examples/ring.py", "3"), ("docs/examples/cpi.py",), ("docs/examples/transpose.py", str(16 * n)),
            ("docs/examples/jacobi.py", str(8 * n), "20"), ("docs/examples/mandelbrot.py",)] + [
        (f"tests/fixtures/mpi4py_demo/{name}.py",)
        for name in ("helloworld", "cpi_cco", "ex_2_01", "ex_2_08", "ex_2_16", "ex_2_29", "ex_2_34")]


def lines(argv: list[str], timeout: float) -> tuple[int, list[str]]:
    try:
        # ranks share one pipe: unbuffered (PYTHONUNBUFFERED=1 in the caller's environment), a print
        # is two writes, its text and its newline, and two ranks' lines come out as one
        env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
        p = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return 124, ["(timed out)"]
    return p.returncode, sorted(x for x in (p.stdout + p.stderr).splitlines() if not TIMING.search(x))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--real", required=True, help="a virtual environment with mpi4py and mpich (bin/mpiexec)")
    ap.add_argument("-n", type=int, default=4, help="ranks (4)")
    ap.add_argument("--timeout", type=float, default=120.0)
    a = ap.parse_args(argv)
    real = Path(a.real)
    mpiexec, python = real / "bin" / "mpiexec", real / "bin" / "python"
    if not mpiexec.exists():
        print(f"compare_mpi: no {mpiexec}: pip install mpi4py mpich into {real}", file=sys.stderr)
        return 2
    bad, progs = 0, programs(a.n)
    for prog in progs:
        rc1, theirs = lines([str(mpiexec), "-n", str(a.n), str(python), *prog], a.timeout)
        rc2, ours = lines([sys.executable, "-m", "nodes.mpi.local", "-n", str(a.n), "python", *prog], a.timeout)
        same = rc1 == rc2 == 0 and theirs == ours
        bad += not same
        print(f"{'same' if same else 'DIFFERENT':9} {' '.join(prog)} ({len(ours)} lines; exit {rc1} / {rc2})")
        if not same:
            for x in sorted(set(theirs) ^ set(ours))[:6]:
                print(f"          {'real' if x in theirs else 'ours'}: {x}")
    print(f"{len(progs) - bad} of {len(progs)} programs print the same under {real} and mcemu "
          f"(-n {a.n}; timing lines left out)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
