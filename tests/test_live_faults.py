"""Faults with real processes: a node SIGKILLed mid-job (with ``--no-restart``: it stays
dead until it joins again by hand), the daemon SIGKILLed with jobs queued and running.
Nodes that come back by themselves, recovery and failed starts: tests/test_live_recovery.py."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from conftest import ALLOCATOR, SCHEDULER, free_port, node_states, wait_for

pytestmark = pytest.mark.live


def test_node_killed_mid_job_is_down_within_a_second_and_the_job_completes_elsewhere(cluster):
    port = free_port()
    out = cluster.home / "seen"
    out.mkdir()
    cluster.mcemu("keys", "init")
    cluster.up("--topology", "hypercube:3", "--allocator", ALLOCATOR, "--scheduler", SCHEDULER,
               "--time-unit", "0.05", "--listen", f"127.0.0.1:{port}", "--no-restart")  # the victim stays dead
    cmd = f"echo $MCEMU_ATTEMPT > {out}/$MCEMU_JOB_ID.$MCEMU_NODE; sleep 1.5"
    jid = cluster.client.submit({"cube": 2}, runtime=30, command=cmd)
    c = cluster.client
    job = wait_for(lambda: (j := c.queue(jobs=[jid])["jobs"][0])["state"] == "running" and j, 10, "job running")
    victim = job["nodes"][1]
    node = node_states(cluster)[victim]
    proc = psutil.Process(node["pid"])
    wait_for(lambda: proc.children(), 5, "the task to start on the victim")
    task = proc.children()[0]
    cluster.record()
    t_kill = time.monotonic()
    os.kill(node["pid"], signal.SIGKILL)
    wait_for(lambda: node_states(cluster)[victim]["state"] == "down", 2, "victim down")
    assert time.monotonic() - t_kill < 1.0
    wait_for(lambda: not task.is_running() or task.status() == psutil.STATUS_ZOMBIE, 5, "its task to die")

    def finished():
        j = c.queue(jobs=[jid])["jobs"][0]
        return j if j["state"] in ("completed", "failed") else None

    j = wait_for(finished, 20, "the job to finish elsewhere")
    assert j["state"] == "completed" and j["attempt"] == 2 and j["faults"] == 1
    assert victim not in j["nodes"]
    assert {p.name.split(".")[1] for p in out.glob(f"{jid}.*") if p.read_text().strip() == "2"} == \
        {str(n) for n in j["nodes"]}

    # the node comes back from "another host" over tcp:// (CURVE, with the node credential)
    joiner = subprocess.Popen([sys.executable, "-m", "emulator", "node", "--connect", f"tcp://127.0.0.1:{port}",
                               "--id", str(victim), "--key", str(cluster.home / "keys/issued/nodes.toml")],
                              env=cluster.env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    cluster.record(joiner)
    wait_for(lambda: node_states(cluster)[victim]["state"] == "idle", 10, "the node to come back idle")
    assert node_states(cluster)[victim]["pid"] == joiner.pid
    j2 = c.submit({"cube": 3}, runtime=2, command=f"echo x > {out}/whole.$MCEMU_NODE")
    wait_for(lambda: c.queue(jobs=[j2])["jobs"][0]["state"] == "completed", 10, "a job on the whole machine")
    assert (out / f"whole.{victim}").exists()
    cluster.down()
    wait_for(lambda: joiner.poll() is not None, 5, "the joined node to stop with the cluster")


N_JOBS = 100


def test_daemon_killed_with_jobs_queued_and_running_every_job_finishes_exactly_once(cluster):
    out = cluster.home / "runs"
    out.mkdir()
    cluster.mcemu("keys", "init")
    cluster.up("--topology", "hypercube:3", "--allocator", ALLOCATOR, "--scheduler", SCHEDULER,
               "--time-unit", "0.02")
    cmd = f"echo $MCEMU_ATTEMPT >> {out}/$MCEMU_JOB_ID.$MCEMU_RANK; sleep 0.08"
    sizes = [(i * 7) % 3 for i in range(N_JOBS)]
    ids = cluster.client.submit_many([{"request": {"cube": k}, "runtime": 4, "command": cmd} for k in sizes])
    assert ids == list(range(1, N_JOBS + 1))
    c = cluster.client
    wait_for(lambda: c.status()["jobs"].get("completed", 0) >= 10, 30, "some jobs to complete")
    st = c.status()["jobs"]
    assert st.get("running") and st.get("queued", 0) >= 20, st
    cluster.record()
    os.kill(cluster.daemon_pid(), signal.SIGKILL)
    cluster.client.close()
    cluster._client = None
    wait_for(lambda: cluster.daemon_pid() is None, 5, "the daemon to be gone")
    cluster.up()  # the journal says which topology and policies; the nodes are still there
    cluster.record()

    def all_done():
        jobs = c2.queue(all=True)["jobs"]
        return jobs if len(jobs) == N_JOBS and all(j["state"] not in ("queued", "running") for j in jobs) else None

    c2 = cluster.client
    jobs = wait_for(all_done, 90, "every job to finish")
    for j, k in zip(jobs, sizes):
        assert j["state"] == "completed" and j["attempt"] == 1 and len(j["nodes"]) == 1 << k, j
        for rank in range(1 << k):
            assert (out / f"{j['id']}.{rank}").read_text() == "1\n", (j, rank)  # ran once
    assert len(list(out.iterdir())) == sum(1 << k for k in sizes)
