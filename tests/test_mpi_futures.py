"""mpi4py.futures, mpi4py.util.pkl5 and mpi4py.util.pool as jobs of a live cluster in virtual
time: ``mcemu run -n 4 python -m mpi4py.futures prog.py`` (rank 0 runs the program, ranks 1-3
are its pool) and MPICommExecutor under a plain ``python prog.py``. Each program's expected
lines are what mpi4py 4.1.2 over MPICH 4 printed for it (tests/fixtures/futures; the
comparison commands are in the README's mpi4py section). Every job must end with every rank's
status 0; the module's cluster is brought down at the end and no process may be left."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import ROOT, final_comm, live_cluster

pytestmark = pytest.mark.live

PROGS = ROOT / "tests" / "fixtures" / "futures"


@pytest.fixture(scope="module")
def vcluster():
    with live_cluster() as c:
        c.up("--topology", "mesh:2x2", "--allocator", "first-fit", "--scheduler", "fcfs", "--network", "wormhole",
             "--net-time", "virtual")
        yield c


def run(cluster, *cmd, n: int = 4, status: int = 0) -> tuple[list[str], str, dict]:
    """(stdout lines, stderr, the job's record) of ``mcemu run -n n CMD``, which must exit
    with ``status``; with 0, every rank's status must be 0."""
    r = cluster.mcemu("run", "-n", n, *cmd, check=False, timeout=120)
    cluster.record()
    assert r.returncode == status, (r.returncode, r.stdout, r.stderr)
    job = max(cluster.client.queue(all=True)["jobs"], key=lambda j: j["id"])
    if status == 0:
        assert job["state"] == "completed" and job["exit"] == [0] * n, job
    return r.stdout.splitlines(), r.stderr, job


def futures(cluster, prog: Path, *args, **kw):
    return run(cluster, sys.executable, "-m", "mpi4py.futures", prog, *args, **kw)


def test_map_with_chunks_gives_the_primes_in_order(vcluster):
    out, _, _ = futures(vcluster, ROOT / "docs" / "examples" / "futures_primes.py", 20000)
    assert out == ["112272535099 is prime: True", "112582705987 is prime: True", "112272535095 is prime: False",
                   "115280095211 is prime: True", "115797848083 is prime: True", "1099726899301 is prime: True",
                   "1099726899303 is prime: False", "primes below 20000: 2262 (3 workers)"]


def test_julia_rows_by_map(vcluster):
    out, _, _ = futures(vcluster, PROGS / "julia.py")
    assert out[0] == "160x120: sum 4654635, md5 8c80d8455c893ae877a908bec64d11d0"
    assert len(out) == 7


def test_submit_as_completed_wait_and_the_map_forms(vcluster):
    out, _, _ = futures(vcluster, PROGS / "as_completed.py")
    assert out == ["as_completed: " + str([(x, x * x) for x in range(12)]), "FIRST_COMPLETED: True",
                   "ALL_COMPLETED: 5 0 [0, 1, 4, 9, 16]", "starmap: [32, 9, 1000]", "unordered: [1, 2, 3, 4, 5]",
                   "chunks: " + str([divmod(x, 3) for x in range(10, 20)]), "buffered: [6, 5, 4, 3, 2, 1]",
                   "num_workers: 3", "done"]


def test_a_tasks_exception_and_shutdown(vcluster):
    out, _, _ = futures(vcluster, PROGS / "shutdown.py")
    assert out == [
        "result raised: ValueError bad value 3 | cause: RemoteTraceback",
        "exception(): ValueError('bad value 3')",
        "map gave 0", "map gave 10", "map gave 20", "map raised: bad value 3",
        "unpicklable argument: TypeError", "unpicklable result: TypeError",
        "bootup: True workers: 3",
        "after shutdown(wait=True): True [40, 50, 60, 70, 80, 90, 100, 110]",
        "submit after shutdown: RuntimeError cannot submit after shutdown",
        "map after shutdown: RuntimeError cannot submit after shutdown",
        "bootup after shutdown: RuntimeError cannot bootup after shutdown",
        "num_workers after shutdown: 0",
        "cancel_futures: some cancelled True all done or cancelled True results True",
        "a cancelled future raises CancelledError",
        "with-block waited: True 40",
        "max_workers=0: max_workers must be greater than 0",
        "initializer failed: BrokenExecutor initializer failed",
        "then submit: BrokenExecutor initializer failed",
        "num_workers broken: 0"]


def test_comm_executor_on_split_dup_and_self_communicators(vcluster):
    out, _, _ = run(vcluster, sys.executable, PROGS / "comm_executor.py")
    assert sorted(out) == sorted([
        "world rank 0: half 0 root, 1 workers, squares [0, 1, 4, 9, 16]",
        "world rank 1: half 1 root, 1 workers, squares [100, 121, 144, 169, 196]",
        "workers' allreduce: [3, 3, 3]",
        "gather: ['0:token', '1:token', '2:token', '3:token']",
        "self executor: 49 True"])


def test_the_pools_messages_go_through_the_network(vcluster, tmp_path):
    """20 tasks: each a message to a worker and one back, with the workers' import of the main
    module (3 each way) and the stop (3): 49 messages and the Dup/Split collectives."""
    prog = tmp_path / "count.py"
    prog.write_text("from mpi4py.futures import MPIPoolExecutor\n"
                    "if __name__ == '__main__':\n"
                    "    with MPIPoolExecutor() as ex:\n"
                    "        print(sum(ex.map(abs, range(-20, 0))))\n")
    out, _, job = futures(vcluster, prog)
    assert out == ["210"]
    comm = final_comm(vcluster, job["id"])
    assert comm["count"] >= 2 * 20 + 2 * 3 + 3, comm
    assert comm["bytes"] > 0 and comm["mean_delay_us"] > 0, comm


def test_without_the_launcher_the_pool_would_need_spawn(vcluster, tmp_path):
    prog = tmp_path / "spawn.py"
    prog.write_text("from mpi4py import MPI\nfrom mpi4py.futures import MPIPoolExecutor\n"
                    "if MPI.COMM_WORLD.rank == 0:\n    MPIPoolExecutor().submit(abs, -1)\n")
    _, err, job = run(vcluster, sys.executable, "-m", "mpi4py", prog, n=2, status=1)
    assert "MPI.COMM_SELF.Spawn" in err, err  # the tail of the failing rank's stderr
    assert job["state"] == "failed", job


def test_launcher_runs_a_module_and_a_command(vcluster, tmp_path):
    (tmp_path / "twice.py").write_text("import sys\nfrom mpi4py.futures import MPIPoolExecutor\n"
                                       "def twice(x):\n    return 2 * x\n"
                                       "if __name__ == '__main__':\n    with MPIPoolExecutor() as ex:\n"
                                       "        print(sys.argv[1:], list(ex.map(twice, range(4))))\n")
    out, _, _ = run(vcluster, "-D", tmp_path, sys.executable, "-m", "mpi4py.futures", "-m", "twice", "a", n=3)
    assert out == ["['a'] [0, 2, 4, 6]"]
    out, _, _ = run(vcluster, sys.executable, "-m", "mpi4py.futures", "-c",
                    "from mpi4py.futures import MPIPoolExecutor as E\nwith E() as e: print(list(e.map(abs, [-1, -2])))",
                    n=3)
    assert out == ["[1, 2]"]


def test_pkl5_communicators_and_util_pool(vcluster):
    out, _, _ = run(vcluster, sys.executable, PROGS / "pkl5_comm.py", n=3)
    assert "recv 7 44999850000.0 0 3" in out and "recv2 [1, 2, 3]" in out
    assert "bcast 44999850000.0 gather [0, 1, 4] allgather [0, 1, 2]" in out
    for r in range(3):
        assert f"{r} sendrecv {(r - 1) % 3}" in out and f"{r} irecv: unsupported" in out
        assert f"{r} Dup type Intracomm mpi4py.util.pkl5 3" in out and f"{r} got {(r - 1) % 3}" in out
    out, _, _ = futures(vcluster, PROGS / "util_pool.py", n=3)
    assert out == ["apply 49", "map " + str([x * x for x in range(10)]), "starmap [8, 27]", "imap [0, 1, 4, 9, 16]",
                   "imap_unordered [0, 1, 4, 9, 16]", "apply_async 81 True True [81]",
                   "map_async [0, 1, 4, 9, 16, 25]", "failed True False [81, 'KeyError(3)']",
                   "get raised KeyError 3", "done"]
