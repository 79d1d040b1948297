"""mpi4py programs on the live cluster in virtual time (issue 28), as a user runs them: unchanged
programs give their results, a deadlock fails its job naming the ranks, bad calls are MPI errors
in the rank that made them, pattern jobs agree with ``mcemu net simulate``, and a program's
network times do not depend on how busy the host is."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, final_comm, wait_for

pytestmark = pytest.mark.live

UP_8x8 = ("--topology", "mesh:8x8", "--allocator", "first-fit", "--scheduler", "fcfs", "--network", "wormhole",
          "--net-time", "virtual")
EXAMPLES = ROOT / "docs" / "examples"
DEMO = ROOT / "tests" / "fixtures" / "mpi4py_demo"


def run_job(cluster, request: dict, command: str, timeout: float = 120) -> tuple[dict, str]:
    """Submit ``command`` and wait for its end and its last statistics: (job, rank 0's output)."""
    jid = cluster.client.submit(request, 600, name="prog", command=command)

    def ended():
        j = cluster.client.queue(jobs=[jid])["jobs"][0]
        return j if j["state"] not in ("queued", "running") else None
    j = wait_for(ended, timeout, f"job {jid} to end", interval=0.1)
    out = (cluster.home / "output" / f"job{jid}.0.out").read_text()
    return j, out


def comm_of(cluster, jid: int) -> dict:
    """The job's statistics, once the last report is in (it may follow the job's end)."""
    return final_comm(cluster, jid)


def test_unmodified_programs_give_their_results_in_virtual_time(cluster):
    cluster.up(*UP_8x8)
    cases = [
        ({"shape": [4, 4]}, EXAMPLES / "ring.py", "3", "ring ok"),
        ({"shape": [4, 4]}, EXAMPLES / "cpi.py", "", "error is 0.0000000000000"),
        ({"shape": [4, 4]}, EXAMPLES / "transpose.py", "", "transpose ok"),
        ({"shape": [2, 2]}, EXAMPLES / "mandelbrot.py", "", "checksum"),
        ({"shape": [2, 2]}, DEMO / "helloworld.py", "", "Hello, World! I am process 0 of 4"),
        ({"shape": [2, 2]}, DEMO / "ex_2_08.py", "", ""),
    ]
    for request, prog, args, want in cases:
        j, out = run_job(cluster, request, f"{sys.executable} {prog} {args}")
        assert j["state"] == "completed", (prog.name, j["reason"], out)
        assert want in out, (prog.name, out)
        # every rank says hello, so every job is reported; hello world sends nothing
        comm = comm_of(cluster, j["id"])
        assert (comm["messages"] > 0) == (prog.name != "helloworld.py"), comm
        assert (comm["bytes"] > 0) == (comm["messages"] > 0)
    # the trace of the last job: one file per rank, each ending at its clock
    traces = sorted((cluster.home / "traces").glob(f"job-{j['id']}/rank-*.json"))
    assert len(traces) == 4
    doc = json.loads(traces[0].read_text())
    assert doc["time"] == "virtual" and doc["events"][-1][0] == "e" and doc["topology"] == "mesh:8x8"


def test_a_deadlock_fails_its_job_within_seconds_naming_both_ranks(cluster, tmp_path):
    cluster.up(*UP_8x8)
    prog = tmp_path / "deadlock.py"
    prog.write_text("from mpi4py import MPI\nc = MPI.COMM_WORLD\nc.recv(source=1 - c.rank, tag=7)\n")
    j, _ = run_job(cluster, {"nodes": 2}, f"{sys.executable} {prog}", timeout=15)
    assert j["state"] == "failed"
    why = j["reason"]
    assert why.startswith("deadlock") and "rank 0" in why and "rank 1" in why and "tag=7" in why, why


BAD = textwrap.dedent("""\
    import numpy as np
    from mpi4py import MPI
    c = MPI.COMM_WORLD
    def err(f):
        try:
            f()
        except MPI.Exception as e:
            return MPI.Get_error_string(e.Get_error_class()) if hasattr(MPI, "Get_error_string") else e.Get_error_class()
        return None
    if c.rank == 0:
        got = [err(lambda: c.send(1, dest=c.size)), err(lambda: c.send(1, dest=1, tag=-5)),
               err(lambda: c.Send(np.zeros((1 << 23) + 1), dest=1))]  # 64 MiB + 8 B
        c.Send(np.arange(10.0), dest=1, tag=3)
        print("rank 0 errors", [g is not None for g in got], flush=True)
    else:
        small = np.zeros(5)
        got = err(lambda: c.Recv(small, source=0, tag=3))
        print("rank 1 truncate", got is not None, flush=True)
    c.Barrier()
    print("after", c.allreduce(c.rank), flush=True)
""")


def test_bad_calls_are_mpi_errors_in_that_rank_and_change_nothing_else(cluster, tmp_path):
    cluster.up(*UP_8x8)
    prog = tmp_path / "bad.py"
    prog.write_text(BAD)
    j, out = run_job(cluster, {"nodes": 2}, f"{sys.executable} {prog}")
    assert j["state"] == "completed", (j["reason"], out)
    assert "rank 0 errors [True, True, True]" in out and "after 1" in out, out
    out1 = (cluster.home / "output" / f"job{j['id']}.1.out").read_text()
    assert "rank 1 truncate True" in out1, out1
    # the interconnect is unharmed: the next program runs
    j, out = run_job(cluster, {"shape": [2, 2]}, f"{sys.executable} {EXAMPLES / 'ring.py'}")
    assert j["state"] == "completed" and "ring ok" in out


@pytest.mark.slow
def test_pattern_jobs_in_virtual_time_agree_with_net_simulate(cluster, tmp_path):
    from tests.fixtures import ch6

    # the two jobs start together in virtual time (--group-jobs 2), whenever each reached its nodes
    for name, live, sim in ch6.agreement(cluster, tmp_path, 25.0, 100, 20, "--net-time", "virtual", group_jobs=2):
        assert abs(live / sim - 1) < 0.02, (name, live, sim)


def _jacobi(cluster) -> tuple[float, dict]:
    j, out = run_job(cluster, {"shape": [4, 4]}, f"{sys.executable} {EXAMPLES / 'jacobi.py'} 64 40", timeout=240)
    assert j["state"] == "completed", (j["reason"], out)
    elapsed = float(re.search(r"elapsed ([0-9.]+)", out).group(1))
    return elapsed, comm_of(cluster, j["id"])


@pytest.mark.slow
def test_a_program_s_network_times_do_not_depend_on_the_host_s_load(cluster):
    """Jacobi on 16 ranks with --cpu-scale 0 (computation takes no virtual time): the clocks move
    by the messages alone, so an idle host and one with two CPU-bound hogs beside the cluster
    give the same MPI.Wtime() elapsed time and mean delay (the CPU-time part varies with the
    host as CPU time itself does: docs/ARCHITECTURE.md, virtual time)."""
    cluster.up(*UP_8x8, "--cpu-scale", "0")
    idle = _jacobi(cluster)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    cluster.record(*hogs)
    try:
        busy = _jacobi(cluster)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    assert idle[0] > 0 and abs(busy[0] / idle[0] - 1) < 0.02, (idle, busy)
    assert abs(busy[1]["mean_delay_us"] / idle[1]["mean_delay_us"] - 1) < 0.02, (idle, busy)
