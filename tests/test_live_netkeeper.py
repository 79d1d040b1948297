"""The interconnect killed under running jobs (issue 30): the daemon restarts it
(emulator.live.netkeeper), the jobs it carried are requeued with the reason and complete, their
tasks' calls end instead of hanging (nodes.comm: ``net-gone``), and new jobs communicate."""
from __future__ import annotations

import time

import psutil
import pytest

from conftest import final_comm, wait_for

pytestmark = pytest.mark.live

UP = ("--topology", "mesh:8x8", "--allocator", "first-fit", "--scheduler", "fcfs", "--network", "wormhole")


def _jobs(cluster, ids) -> dict:
    return {j["id"]: j for j in cluster.mcemu_json("queue", "--all")["jobs"] if j["id"] in ids}


def _interconnect(cluster):
    from emulator.live import home as homemod

    return homemod.read_pidfile(cluster.home / "interconnect.pid")


def test_interconnect_killed_under_three_pattern_jobs(cluster):
    cluster.up(*UP)
    ids = [cluster.mcemu_json("submit", "--shape", "4x4", "--pattern", "transpose", "--mtbs", "25",
                              "--iterations", "150")["job"] for _ in range(3)]
    # every job running, and known to the interconnect (its first hello is reported at once)
    wait_for(lambda: all(j["state"] == "running" and j["comm"] is not None
                         for j in _jobs(cluster, ids).values()), 60, "three communicating jobs")
    old = _interconnect(cluster)
    cluster.record(old)
    old.kill()
    killed = time.monotonic()

    def settled():
        js = _jobs(cluster, ids).values()
        return list(js) if all(j["attempt"] == 2 or j["state"] == "failed" for j in js) else None
    js = wait_for(settled, 10, "every job requeued or failed within 10 s of the kill")
    assert time.monotonic() - killed < 10
    for j in js:  # max_requeue 1: requeued once, with the reason
        assert j["faults"] == 1 and j["attempt"] == 2, j
        assert j["state"] == "completed" or "interconnect" in (j["reason"] or ""), j
    new = wait_for(lambda: (lambda p: p if p is not None and p.pid != old.pid else None)(_interconnect(cluster)),
                   10, "a new interconnect")
    cluster.record(new)
    done = wait_for(lambda: (lambda js: js if all(j["state"] not in ("queued", "running") for j in js.values())
                             else None)(_jobs(cluster, ids)), 90, "the requeued jobs to end")
    # the contract: requeued and completed, or failed with its reason (one CI run saw a
    # job fail on its second attempt, not reproduced since: its reason is what a user reads)
    for j in done.values():
        assert j["state"] == "completed" or (j["state"] == "failed" and j["reason"]), \
            ({i: (j["state"], j["attempt"], j["reason"], j.get("failure")) for i, j in done.items()}, cluster.logs())
    # a new job after the restart communicates through the new interconnect
    jid = cluster.mcemu_json("submit", "--shape", "4x4", "--pattern", "transpose", "--iterations", "5")["job"]
    j = wait_for(lambda: (lambda j: j if j["state"] not in ("queued", "running") else None)(_jobs(cluster, [jid])[jid]),
                 60, "the new job to end")
    assert j["state"] == "completed" and final_comm(cluster, jid)["count"] == 12 * 5
    res = cluster.down()
    assert new.pid in res["stopped"]
    assert not psutil.pid_exists(new.pid) or new.status() == psutil.STATUS_ZOMBIE


# A rank that notes, before anything else, every process of an earlier attempt still alive (it
# would run beside it), then its own pid and a child's, and waits in the network, then sleeps.
RANK = r"""
import os, subprocess, sys, time
pids, att = sys.argv[1], int(os.environ["MCEMU_ATTEMPT"])
try:
    seen = [line.split() for line in open(pids)]
except FileNotFoundError:
    seen = []
for a, kind, pid in seen:
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        continue
    if int(a) < att and state != "Z":
        with open(pids + ".overlap", "a") as f:
            f.write(f"{att} overlaps {a} {kind} {pid}\n")
child = subprocess.Popen(["sleep", "300"])
with open(pids, "a") as f:
    f.write(f"{att} rank {os.getpid()}\n{att} child {child.pid}\n")
from mpi4py import MPI
MPI.COMM_WORLD.Barrier()
time.sleep(300)
"""


def test_a_job_requeued_by_the_interconnect_s_death_never_overlaps_its_predecessor(cluster, tmp_path):
    """The soak saw it once: the interconnect died, the job was requeued and its next attempt
    started on one node while a node whose agent had not read its ``kill`` yet still ran the
    first. Here that agent is stopped across the death; the daemon ends its tasks itself."""
    from conftest import node_states
    import os
    import signal
    import sys

    cluster.up("--topology", "mesh:2x2", "--allocator", "first-fit", "--scheduler", "fcfs", "--network", "wormhole")
    prog, pids = tmp_path / "rank.py", tmp_path / "pids"
    prog.write_text(RANK)
    jid = cluster.client.submit({"shape": [2, 1]}, 600, command=f"{sys.executable} {prog} {pids}")
    j = wait_for(lambda: (j := _jobs(cluster, [jid])[jid])["comm"] is not None and j, 30, "the job communicating")
    wait_for(lambda: pids.exists() and len(pids.read_text().split("\n")) > 4, 10, "both ranks and their children")
    first = [int(line.split()[2]) for line in pids.read_text().split("\n") if line.startswith("1 ")]
    agent = node_states(cluster)[j["nodes"][1]]["pid"]
    ic = _interconnect(cluster)
    cluster.record(ic)
    os.kill(agent, signal.SIGSTOP)  # its node is not down (--hang 30 s): it just has not read a thing
    try:
        ic.kill()
        wait_for(lambda: "2 rank" in pids.read_text(), 20, "the next attempt's rank on the other node")
    finally:
        os.kill(agent, signal.SIGCONT)
    overlap = pids.with_name("pids.overlap")
    assert not overlap.exists(), overlap.read_text()
    assert _jobs(cluster, [jid])[jid]["attempt"] == 2
    assert not [p for p in first if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    cluster.client.cancel(jid)
    cluster.down()


def test_a_stopping_daemon_stops_the_interconnect_it_restarted():
    """``mcemu down`` reads the cluster's pids before the daemon's shutdown: an interconnect the
    daemon restarted in between outlived a CI run (its home removed, its parent PID 1). The
    daemon's stop now ends its own child by pid, and reaps it."""
    import subprocess
    import sys

    from emulator.live.netkeeper import NetKeeper

    keeper = NetKeeper.__new__(NetKeeper)  # only its child matters here
    child = keeper.child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        keeper.stop()
        assert keeper.child is None and child.returncode == -15  # terminated by pid, and reaped
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


# Attempt 1 says hello and sleeps; a later attempt's ranks wait for a go (a file) before they
# import MPI: until then they have not said hello to any interconnect.
LATE = r"""
import os, sys, time
go, att = sys.argv[1], int(os.environ["MCEMU_ATTEMPT"])
if att > 1:
    open(f"{go}.{att}.{os.environ['MCEMU_RANK']}", "w").close()
    deadline = time.monotonic() + 60
    while not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(0.02)
from mpi4py import MPI
MPI.COMM_WORLD.Barrier()
if att == 1:
    time.sleep(300)
"""


def test_a_requeued_attempt_is_judged_by_its_own_messages(cluster, tmp_path):
    """A requeued job's record kept its first attempt's ``comm`` into the next attempt, so the
    keeper took that attempt for one the dead interconnect carried: a second interconnect death
    before its tasks had said hello failed it ("2 node faults"), though it had lost nothing."""
    import sys

    cluster.up("--topology", "mesh:2x2", "--allocator", "first-fit", "--scheduler", "fcfs", "--network", "wormhole")
    prog, go = tmp_path / "late.py", tmp_path / "go"
    prog.write_text(LATE)
    jid = cluster.client.submit({"shape": [2, 1]}, 600, command=f"{sys.executable} {prog} {go}")
    wait_for(lambda: _jobs(cluster, [jid])[jid]["comm"] is not None, 30, "attempt 1 communicating")
    first = _interconnect(cluster)
    cluster.record(first)
    first.kill()
    wait_for(lambda: all(go.with_name(f"go.2.{r}").exists() for r in (0, 1)), 30, "attempt 2's ranks, not in MPI yet")
    j = _jobs(cluster, [jid])[jid]
    assert j["attempt"] == 2 and j["comm"] is None, j  # nothing of this attempt reported yet
    second = wait_for(lambda: (lambda p: p if p is not None and p.pid != first.pid else None)(_interconnect(cluster)),
                      10, "a new interconnect")
    cluster.record(second)
    second.kill()
    third = wait_for(lambda: (lambda p: p if p is not None and p.pid != second.pid else None)(_interconnect(cluster)),
                     10, "another interconnect")
    cluster.record(third)
    go.touch()
    j = wait_for(lambda: (lambda j: j if j["state"] not in ("queued", "running") else None)(_jobs(cluster, [jid])[jid]),
                 30, "the job to end")
    assert (j["state"], j["attempt"], j["faults"]) == ("completed", 2, 1), j
    assert final_comm(cluster, jid)["count"] > 0


def test_a_job_failed_by_the_interconnect_s_death_has_its_last_statistics_final(cluster, tmp_path):
    """The dead interconnect sends no last report: the daemon's record of the job it failed was
    never ``final`` (a script waiting for it waited for ever); its last statistics are."""
    import sys

    cluster.up("--topology", "mesh:2x2", "--allocator", "first-fit", "--scheduler", "fcfs", "--network", "wormhole",
               "--max-requeue", "0")
    prog = tmp_path / "late.py"
    prog.write_text(LATE)
    jid = cluster.client.submit({"shape": [2, 1]}, 600, command=f"{sys.executable} {prog} {tmp_path / 'go'}")
    wait_for(lambda: _jobs(cluster, [jid])[jid]["comm"] is not None, 30, "the job communicating")
    ic = _interconnect(cluster)
    cluster.record(ic)
    ic.kill()
    j = wait_for(lambda: (lambda j: j if j["state"] != "running" else None)(_jobs(cluster, [jid])[jid]),
                 10, "the job to fail")
    assert j["state"] == "failed" and "interconnect" in j["reason"], j
    assert final_comm(cluster, jid, timeout=5)["count"] >= 0
