"""``mcemu run`` on a live cluster, as a user runs it: the ranks' output streamed while they run
(rank-labelled on request), a failing rank's exit status passed on, Ctrl-C cancelling the job."""
from __future__ import annotations

import signal
import subprocess
import sys
import threading

import pytest

from conftest import ROOT, wait_for

pytestmark = pytest.mark.live

UP_2x2 = ("--topology", "mesh:2x2", "--allocator", "first-fit", "--scheduler", "fcfs")

# each rank says hello, waits for the test's go (a file), says bye on stderr, exits with FAIL's status
PROG = """\
import os, sys, time
r = int(os.environ["MCEMU_RANK"])
print("hello", r)
deadline = time.monotonic() + 60
while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
    time.sleep(0.02)
print("bye", r, file=sys.stderr)
sys.exit(int(sys.argv[2]) if r == int(sys.argv[3]) else 0)
"""


class Run:
    """``mcemu run ARGS`` as a subprocess of the cluster's environment, its stdout collected
    line by line as it comes."""

    def __init__(self, cluster, *args):
        self.p = subprocess.Popen([sys.executable, "-m", "emulator", "run", *map(str, args)], env=cluster.env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        cluster.record(self.p)
        self.lines: list[str] = []
        self.t = threading.Thread(target=lambda: self.lines.extend(iter(self.p.stdout.readline, "")), daemon=True)
        self.t.start()

    def has(self, lines) -> bool:
        return set(lines) <= {x.rstrip("\n") for x in self.lines}

    def finish(self, timeout: float = 60) -> tuple[int, str]:
        rc = self.p.wait(timeout)
        self.t.join(5)
        return rc, self.p.stderr.read()


def test_output_is_streamed_labelled_and_the_status_is_the_jobs(cluster, tmp_path):
    cluster.up(*UP_2x2)
    prog, go = tmp_path / "prog.py", tmp_path / "go"
    prog.write_text(PROG)
    run = Run(cluster, "-n", 4, "--shape", "2x2", "--label", sys.executable, prog, go, 0, -1)
    # every rank's first line arrives while the ranks still run (they wait for the go)
    wait_for(lambda: run.has(f"{r}: hello {r}" for r in range(4)), 30, "the hello lines, streamed")
    assert run.p.poll() is None
    go.touch()
    rc, err = run.finish()
    assert rc == 0, err
    assert run.has(f"{r}: bye {r}" for r in range(4))  # stderr too, labelled
    for r in range(4):
        mine = [x for x in run.lines if x.startswith(f"{r}: ")]
        assert mine == [f"{r}: hello {r}\n", f"{r}: bye {r}\n"]
    jobs = cluster.client.queue(all=True)["jobs"]
    assert [(j["name"], j["state"], j["request"]) for j in jobs] == [("prog.py", "completed", {"shape": [2, 2]})]


def test_a_failing_rank_gives_its_exit_status(cluster, tmp_path):
    cluster.up(*UP_2x2)
    prog, go = tmp_path / "prog.py", tmp_path / "go"
    prog.write_text(PROG)
    go.touch()
    run = Run(cluster, "-n", 4, sys.executable, prog, go, 3, 2)
    rc, err = run.finish()
    assert rc == 3 and "rank 2 on node 2 exited 3: hello 2 | bye 2" in err, err  # the reason, its output's tail
    assert run.has(f"hello {r}" for r in range(4))  # no labels without --label
    assert cluster.client.queue(all=True)["jobs"][0]["state"] == "failed"


def test_ctrl_c_cancels_the_job(cluster, tmp_path):
    cluster.up(*UP_2x2)
    prog = tmp_path / "prog.py"
    prog.write_text(PROG)
    run = Run(cluster, "-n", 2, "-l", sys.executable, prog, tmp_path / "never", 0, -1)
    wait_for(lambda: run.has(["0: hello 0", "1: hello 1"]), 30, "the ranks to start")
    run.p.send_signal(signal.SIGINT)
    rc, err = run.finish()
    assert rc == 130 and "cancelled (Ctrl-C)" in err
    job = wait_for(lambda: (lambda j: j if j["state"] != "running" else None)(cluster.client.queue(all=True)["jobs"][0]),
                   10, "the job to end")
    assert job["state"] == "cancelled"
    assert not any("bye" in x for x in run.lines)


def test_usage_errors(cluster):
    for args, message in ((["-n", 3, "--shape", "2x2", "true"], "-n 3 but --shape asks for 4 nodes"),
                          (["-n", 2], "no program to run"), (["true"], "give -n N"),
                          (["--shape", "0x2", "true"], "--shape 0x2: each side must be at least 1"),
                          (["-n", 2, "--bogus", "true"], "mcemu run: error: unrecognized arguments: --bogus")):
        r = cluster.mcemu("run", *args, check=False)
        assert r.returncode == 2 and message in r.stderr, r.stderr
    assert "usage: mcemu run" in r.stderr  # the command's usage, not mcemu's


def test_an_mpi_program_runs_and_its_trace_replays_to_the_live_times(cluster):
    """docs/examples/transpose.py (Alltoall: its messages contend) in virtual time; its trace,
    replayed in the simulator on the same nodes, gives the live times and delays again."""
    cluster.up("--topology", "mesh:4x4", "--allocator", "first-fit", "--scheduler", "fcfs",
               "--network", "wormhole", "--net-time", "virtual")
    run = Run(cluster, "-n", 16, "--shape", "4x4", "--label", sys.executable, ROOT / "docs/examples/transpose.py", 64)
    rc, err = run.finish(120)
    assert rc == 0 and run.has(["0: transpose ok"]), (run.lines, err)
    job = wait_for(lambda: (lambda j: j if (j["comm"] or {}).get("count") else None)(
        cluster.client.queue(all=True)["jobs"][0]), 10, "the job's comm report")
    doc = cluster.mcemu_json("net", "replay", cluster.home / "traces" / f"job-{job['id']}")
    # the bound: every message's due and each rank's end (exact but for float rounding since
    # a rank's bound is its own representation of its clock: docs/ARCHITECTURE.md)
    assert doc["recorded"]["max"] < 0.01, doc["recorded"]
    assert doc["messages"]["count"] == job["comm"]["count"] > 0
    assert doc["messages"]["mean_delay_us"] == pytest.approx(job["comm"]["mean_delay_us"], rel=0.01)
    assert doc["messages"]["mean_contention_us"] > 0


# each rank prints its pid and waits (for a go that never comes)
HANG = """\
import os, sys, time
print("pid", os.environ["MCEMU_RANK"], os.getpid(), flush=True)
time.sleep(60)
"""


def test_a_rank_killed_mid_job_ends_its_job_at_once_with_its_status(cluster, tmp_path):
    """mpiexec's rule: the other ranks would wait for the killed one for ever (in a barrier they
    did, until the job was cancelled); they are ended and the job fails, naming the rank."""
    import os
    import time

    import psutil

    cluster.up(*UP_2x2)
    prog = tmp_path / "hang.py"
    prog.write_text(HANG)
    run = Run(cluster, "-n", 4, "--label", sys.executable, prog)
    wait_for(lambda: sum(x.split(": ")[1].startswith("pid") for x in run.lines) == 4, 30, "the ranks to start")
    pids = {int(x.split()[2]): int(x.split()[3]) for x in run.lines if ": pid " in x}
    cluster.record(*(psutil.Process(p) for p in pids.values()))
    t = time.monotonic()
    os.kill(pids[2], 9)
    rc, err = run.finish(30)
    took = time.monotonic() - t
    assert rc == 137 and "rank 2 on node 2 exited" in err and "its other ranks were ended" in err, err
    assert took < 10, took  # the grace (1 s) and the kills, not the program's 60 s
    job = cluster.client.queue(all=True)["jobs"][0]
    assert job["state"] == "failed" and job["failure"]["rank"] == 2, job
    wait_for(lambda: not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
                             for p in pids.values()), 10, "every rank to be gone")


def test_n_ranks_run_however_many_nodes_the_allocation_holds(cluster, tmp_path):
    """``-n 3`` on a 2x2 mesh: the allocator gives the 2x2 submesh (a processor count becomes a
    submesh), 3 ranks run as under mpiexec, and the fourth node stays allocated and idle."""
    cluster.up(*UP_2x2)
    prog = tmp_path / "size.py"
    prog.write_text('import os\nprint("rank", os.environ["MCEMU_RANK"], "of", len(os.environ["MCEMU_NODES"].split(",")))\n')
    run = Run(cluster, "-n", 3, sys.executable, prog)
    rc, err = run.finish()
    assert rc == 0, err
    assert sorted(x.strip() for x in run.lines) == [f"rank {r} of 3" for r in range(3)]
    job = cluster.client.queue(all=True)["jobs"][0]
    assert len(job["nodes"]) == 3 and job["exit"] == [0, 0, 0] and "2x2" in job["allocation"], job


def test_a_request_of_the_other_topologys_kind_is_refused_and_changes_nothing(cluster):
    """``--cube`` on a mesh (it ran as a 2^D-node submesh without a word) and ``--shape`` on a
    hypercube (as a cube of w*h nodes): refused by the daemon for ``run``, ``submit`` (also with
    ``--pattern``, which rewrites the request before it is sent) and a client of the protocol."""
    from emulator.live.client import DaemonError

    cluster.up(*UP_2x2)
    wrong = "--cube 1 asks for a 1-cube, but this cluster is mesh:2x2: give --shape WxH (a submesh) or -n N"
    for args in (("run", "--cube", 1, "true"), ("submit", "--cube", 1, "--runtime", 1),
                 ("submit", "--cube", 1, "--pattern", "ring")):
        r = cluster.mcemu(*args, check=False)
        assert r.returncode == 2 and wrong in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)
    with pytest.raises(DaemonError, match="asks for a 2-cube, but this cluster is mesh:2x2") as e:
        cluster.client.submit({"cube": 2}, 10, command="true")
    assert e.value.code == "bad-request"
    assert cluster.client.queue(all=True)["jobs"] == []
    # the daemon serves on: a request of the mesh's kind runs
    assert cluster.mcemu("run", "--shape", "2x1", "true").returncode == 0
    cluster.down()
    cluster.up("--topology", "hypercube:2", "--allocator", "buddy", "--scheduler", "fcfs")
    r = cluster.mcemu("run", "--shape", "2x2", "true", check=False)
    assert r.returncode == 2 and ("--shape 2x2 asks for a submesh, but this cluster is hypercube:2: give --cube D "
                                  "(a subcube) or -n N") in r.stderr, r.stderr
    with pytest.raises(DaemonError, match="asks for a submesh, but this cluster is hypercube:2"):
        cluster.client.submit({"shape": [2, 1]}, 10)
    assert cluster.client.queue(all=True)["jobs"] == []
    assert cluster.mcemu("run", "--cube", 2, "true").returncode == 0
    assert cluster.mcemu("run", "-n", 3, "true").returncode == 0  # a node count fits either kind


# rank 1 fails (BOOM) or returns (anything else) while the others wait for it
ENDS = """\
import sys
from mpi4py import MPI
c = MPI.COMM_WORLD
if c.rank == 1:
    if sys.argv[1] == "BOOM":
        raise RuntimeError("boom on rank 1")
    sys.exit(0)
c.recv(source=1)
"""


@pytest.mark.parametrize("how", ["BOOM", "return"])
def test_a_failed_rank_is_the_jobs_last_word_and_one_that_returned_is_a_deadlock(cluster, tmp_path, how):
    """A rank that fails: its traceback is all the job prints, its other ranks ended at the
    daemon's grace as mpiexec ends them (each printed the deadlock's error before: 63 of them for
    a 64-rank job). A rank that returned (status 0) while the others wait for it: they stay stuck,
    and get the deadlock's error naming it within seconds."""
    import time

    cluster.up(*UP_2x2, "--network", "wormhole", "--net-time", "virtual")
    prog = tmp_path / "ends.py"
    prog.write_text(ENDS)
    t = time.monotonic()
    run = Run(cluster, "-n", 4, "--label", sys.executable, prog, how)
    rc, err = run.finish(60)
    out = "".join(run.lines)
    assert time.monotonic() - t < 15
    job = cluster.client.queue(all=True)["jobs"][0]
    assert rc != 0 and job["state"] == "failed", (rc, job, out, err)
    if how == "BOOM":
        assert "RuntimeError: boom on rank 1" in out and "deadlock" not in out + err, out + err
        assert job["reason"].startswith("rank 1 on node 1 exited 1"), job["reason"]
    else:
        assert out.count("deadlock: rank 1 of job 1 ended") == 3, out  # each waiting rank's error
        assert "deadlock: rank 1 of job 1 ended" in job["reason"], job["reason"]


def test_mcemu_down_ends_a_run_whose_job_was_running(cluster, tmp_path):
    """``mcemu down`` in another terminal ends the cluster for good (its journal closed): a
    ``mcemu run`` following a job on it says so and exits 1 within seconds, where it went on
    waiting for a daemon restart that never comes (``mcemu wait`` already stopped)."""
    import time

    cluster.up(*UP_2x2)
    prog = tmp_path / "hang.py"
    prog.write_text(HANG)
    run = Run(cluster, "-n", 2, "--label", sys.executable, prog)
    wait_for(lambda: sum(": pid " in x for x in run.lines) == 2, 30, "the ranks to start")
    cluster.down()
    t = time.monotonic()
    rc, err = run.finish(30)
    assert rc == 1 and f"the cluster in {cluster.home} was stopped" in err, (rc, err)
    assert "still waiting" not in err and "could not cancel" not in err, err
    assert time.monotonic() - t < 10


def test_ctrl_c_while_the_daemon_is_down_cancels_the_job_when_it_recovers(cluster, tmp_path):
    """Ctrl-C of a run whose daemon had died said "could not cancel it" and exited 130, and the
    job ran on after the recovery: the cancel is now recorded in the home, and the recovering
    daemon applies it (its tasks, which outlived the daemon, end too)."""
    import os
    import signal

    import psutil

    cluster.up(*UP_2x2)
    prog = tmp_path / "hang.py"
    prog.write_text(HANG)
    run = Run(cluster, "-n", 2, "--label", sys.executable, prog)
    wait_for(lambda: sum(": pid " in x for x in run.lines) == 2, 30, "the ranks to start")
    ranks = [int(x.split()[-1]) for x in run.lines if ": pid " in x]
    os.kill(cluster.daemon_pid(), signal.SIGKILL)
    wait_for(lambda: cluster.daemon_pid() is None, 10, "the daemon gone")
    run.p.send_signal(signal.SIGINT)
    rc, err = run.finish(30)
    assert rc == 130 and "cancelled when it recovers" in err, (rc, err)
    assert (cluster.home / "cancels" / "1").exists() and all(psutil.pid_exists(p) for p in ranks)
    cluster._client = None
    cluster.mcemu("up", "--detach", timeout=60)
    cluster.record()
    job = cluster.client.queue(jobs=[1])["jobs"][0]
    assert job["state"] == "cancelled" and "Ctrl-C" in job["reason"] and "daemon was down" in job["reason"], job
    assert not (cluster.home / "cancels" / "1").exists()
    wait_for(lambda: not any(psutil.pid_exists(p) for p in ranks), 15, "the job's ranks ended")


# each rank says which attempt it is; the first attempt's ranks wait (for a node to be killed)
ATTEMPTS = """\
import os, time
print("attempt", os.environ["MCEMU_ATTEMPT"], "rank", os.environ["MCEMU_RANK"], flush=True)
if os.environ["MCEMU_ATTEMPT"] == "1":
    time.sleep(60)
"""


def test_a_requeued_job_s_run_says_its_ranks_start_over(cluster, tmp_path):
    """A node of the job dies: the job is requeued and its ranks run again from the start. The
    user saw the program's output begin again with no word why; the run now says so."""
    import os

    cluster.up(*UP_2x2)
    prog = tmp_path / "attempts.py"
    prog.write_text(ATTEMPTS)
    run = Run(cluster, "-n", 2, "--label", sys.executable, prog)
    wait_for(lambda: run.has(["0: attempt 1 rank 0", "1: attempt 1 rank 1"]), 30, "attempt 1's ranks")
    job = cluster.client.queue(jobs=[1])["jobs"][0]
    victim = job["nodes"][1]
    os.kill({n["node"]: n["pid"] for n in cluster.client.nodes()}[victim], 9)
    rc, err = run.finish(30)
    assert rc == 0 and run.has(["0: attempt 2 rank 0", "1: attempt 2 rank 1"]), (rc, run.lines, err)
    # the reason, where the run saw the attempt running (a completed job's record has none)
    assert "mcemu run: job 1 requeued" in err and "(attempt 2: its ranks start over)" in err, err
