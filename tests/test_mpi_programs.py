"""Whole mpi4py programs, unchanged, as real processes: every docs/examples program and the
demo-style fixtures (tests/fixtures/mpi4py_demo) through ``python -m nodes.mpi.local -n N``
(which puts nodes/mpi/shim first on PYTHONPATH, so ``from mpi4py import MPI`` is mcemu's),
checking what they print against known or serially computed results; and how the launcher
ends a job whose rank fails or that deadlocks. Every process is stopped by pid."""
from __future__ import annotations

import math
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import psutil
import pytest

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples"
DEMO = ROOT / "tests" / "fixtures" / "mpi4py_demo"


def run_local(n: int, prog: Path, *args, timeout: float = 120, launcher_timeout: float | None = None,
              prefix: tuple = ()):
    """(exit status, stdout, stderr) of ``python -m nodes.mpi.local -n n prog args``; past
    ``timeout`` the launcher and its ranks are killed by pid and the test fails."""
    cmd = [sys.executable, "-m", "nodes.mpi.local", "-n", str(n)]
    if launcher_timeout is not None:
        cmd += ["--timeout", str(launcher_timeout)]
    proc = subprocess.Popen(cmd + [*prefix, str(prog), *map(str, args)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        for child in psutil.Process(proc.pid).children(recursive=True):
            child.kill()
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"{prog.name} -n {n} ran past {timeout} s:\n{out}\n{err}")
    return proc.returncode, out, err


def ok(n: int, prog: Path, *args, timeout: float = 120) -> str:
    code, out, err = run_local(n, prog, *args, timeout=timeout)
    assert code == 0, f"{prog.name} -n {n}: status {code}\n{out}\n{err}"
    return out


@pytest.mark.parametrize("n", [4, 16])
def test_ring(n):
    out = ok(n, EXAMPLES / "ring.py", 3)
    assert f"token {3 * n * (n - 1) // 2}, expected {3 * n * (n - 1) // 2}" in out
    assert out.strip().endswith("ring ok")


@pytest.mark.parametrize("n", [4, 16])
def test_cpi(n):
    out = ok(n, EXAMPLES / "cpi.py", 200_000)
    pi = float(re.search(r"pi is approximately (\S+),", out).group(1))
    assert abs(pi - math.pi) < 1e-10
    assert "intervals 200000 of 200000" in out


def serial_jacobi(N: int, iterations: int) -> float:
    u = np.zeros((N + 2, N + 2))
    u[0, :] = 1.0
    for _ in range(iterations):
        u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return float(np.sum(u[1:-1, 1:-1]))


@pytest.mark.parametrize("n, grid", [(4, "2x2"), (16, "4x4")])
def test_jacobi(n, grid):
    out = ok(n, EXAMPLES / "jacobi.py", 32, 40)
    residuals = [float(x) for x in re.findall(r"residual (\S+)", out)]
    assert len(residuals) == 10 and all(a > b for a, b in zip(residuals, residuals[1:]))
    assert f"on {grid} ranks" in out
    checksum = float(re.search(r"checksum (\S+)", out).group(1))
    assert checksum == pytest.approx(serial_jacobi(32, 40), rel=1e-10)
    assert float(re.search(r"elapsed (\S+) s \(MPI.Wtime\)", out).group(1)) > 0


@pytest.mark.parametrize("n", [4, 16])
def test_transpose(n):
    code, out, err = run_local(n, EXAMPLES / "transpose.py", prefix=("python",))   # as the docstring says
    assert code == 0, err
    assert f"transpose of {8 * n}x{8 * n} on {n} ranks" in out and "transpose ok" in out


def serial_mandelbrot(width: int, height: int, maxit: int):
    img = np.zeros((height, width), dtype="i8")
    for y in range(height):
        c = (-2.0 + 3.0 * np.arange(width) / width) + 1j * (-1.0 + 2.0 * y / height)
        z = np.zeros(width, dtype=complex)
        for _ in range(maxit):
            inside = np.abs(z) <= 2.0
            z[inside] = z[inside] ** 2 + c[inside]
            img[y] += inside
    weights = np.arange(1, height + 1)[:, None] * np.arange(1, width + 1)[None, :]
    return int(img.sum()), int((img * weights).sum())


@pytest.mark.parametrize("n", [1, 4, 16])
def test_mandelbrot(n):
    out = ok(n, EXAMPLES / "mandelbrot.py", 40, 30, 100)
    got = tuple(int(x) for x in re.search(r"checksum (\d+) (\d+)", out).groups())
    assert got == serial_mandelbrot(40, 30, 100)


@pytest.mark.parametrize("n", [4, 16])
def test_demo_helloworld(n):
    out = ok(n, DEMO / "helloworld.py")
    lines = sorted(out.strip().splitlines(), key=lambda x: int(x.split()[5]))
    assert [re.sub(r" on .*", "", x) for x in lines] == [f"Hello, World! I am process {r} of {n}" for r in range(n)]


def test_demo_cpi_cco():
    out = ok(4, DEMO / "cpi_cco.py", 100, 10000)
    errors = [float(x) for x in re.findall(r"error is (\S+)", out)]
    assert len(errors) == 2 and errors[0] < 1e-4 and errors[1] < 1e-8


@pytest.mark.parametrize("prog, line", [("ex_2_01.py", "ex-2.01 ok"), ("ex_2_08.py", "ex-2.08 ok on 1"),
                                        ("ex_2_16.py", "ex-2.16 converged after"), ("ex_2_29.py", "ex-2.29 ok"),
                                        ("ex_2_34.py", "ex-2.34 ok")])
def test_demo_mpi_ref(prog, line):
    out = ok(4, DEMO / prog)
    assert line in out, out


def _program(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "prog.py"
    p.write_text(textwrap.dedent(text))
    return p


def test_a_failing_rank_ends_the_job_with_its_status(tmp_path):
    prog = _program(tmp_path, """
        import sys
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        if comm.rank == 1:
            sys.exit(3)
        comm.recv(source=1)          # never comes: the launcher ends this rank
    """)
    code, _, _ = run_local(3, prog, timeout=60)
    assert code == 3


def test_waiting_on_ranks_that_ended_is_an_mpi_error(tmp_path):
    prog = _program(tmp_path, """
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        if comm.rank == 0:
            try:
                comm.recv(source=1, tag=5)
            except MPI.Exception as e:
                print(f"deadlock: {e}", flush=True)
                raise SystemExit(7)
    """)
    code, out, _ = run_local(2, prog, timeout=60)
    assert code == 7 and "every other rank has ended" in out


def test_a_deadlock_is_ended_by_the_launchers_timeout(tmp_path):
    prog = _program(tmp_path, """
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        comm.recv(source=1 - comm.rank)     # both ranks receive first
    """)
    code, _, err = run_local(2, prog, timeout=60, launcher_timeout=2)
    assert code == 124 and "timed out" in err


def test_bad_input_is_an_error_in_that_rank_only(tmp_path):
    prog = _program(tmp_path, """
        import numpy as np
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        r = comm.rank
        if r == 0:
            for call in (lambda: comm.send(1, dest=comm.size), lambda: comm.send(1, dest=1, tag=-2),
                         lambda: comm.send(b"x" * ((1 << 26) + 1), dest=1)):
                try:
                    call()
                except MPI.Exception as e:
                    print(f"error class {e.Get_error_class()}", flush=True)
            comm.Send(np.arange(8.0), dest=1)
        elif r == 1:
            try:
                comm.Recv(np.zeros(4), source=0)
            except MPI.Exception as e:
                print(f"truncated {e.Get_error_class() == MPI.ERR_TRUNCATE}", flush=True)
        print(f"total {comm.allreduce(1)}", flush=True)  # one write: ranks share stdout
    """)
    out = ok(3, prog)
    assert sorted(re.findall(r"error class (\d+)", out)) == ["2", "4", "6"]
    assert "truncated True" in out and out.count("total 3") == 3
