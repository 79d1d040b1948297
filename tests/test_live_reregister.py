"""A node that comes back as a new process, twice, under a running job (issue 30, "Must hold":
the re-registration case). With ``--liveness 25`` a node's silence takes 5 s to be noticed, so
its new process registers long before it: the job it carried is requeued, placed again on the
same nodes (it needs all four), and must keep that placement: the old daemon cleared the node's
jobs after the requeue had placed it there, so the node showed idle under a job ``running`` for
ever, and the node's next death faulted nothing (emulator/live/node_handlers.py ``_lost``).
Two ways back: a node of this host restarted by the launcher (its death is seen at once through
its pidfd, so it is down before it registers again), and a node joined over tcp, which the daemon
knows only by its heartbeats: its new process registers while the old one still counts as alive
(``on_register``'s new incarnation, the path of the bug).
The job must end: completed after its requeues, or failed with the reason once it has used up
``--max-requeue``; and ``mcemu nodes`` and ``mcemu queue`` agree about it all along."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from conftest import ALLOCATOR, SCHEDULER, free_port, wait_for

pytestmark = pytest.mark.live

VICTIM = 1


def job(c, jid) -> dict:
    return c.queue(jobs=[jid])["jobs"][0]


def nodes(c) -> dict:
    return {n["node"]: n for n in c.nodes()}


def agree(c, jid) -> dict:
    """The job's row, after checking that every node the queue says it runs on says so too
    (the two listings are two requests: only a job unchanged across both is compared)."""
    before = job(c, jid)
    ns = nodes(c)
    after = job(c, jid)
    same = (before["state"], before["attempt"], before["nodes"]) == (after["state"], after["attempt"], after["nodes"])
    if same and after["state"] == "running":
        for n in after["nodes"]:
            assert jid in ns[n]["jobs"] and ns[n]["state"] != "idle", (
                f"job {jid} is running (attempt {after['attempt']}) on node {n}, which shows "
                f"{ns[n]['state']} with jobs {ns[n]['jobs']}: {after}")
    if before["state"] in ("completed", "failed", "cancelled"):  # ended before the nodes were listed
        assert not any(jid in n["jobs"] for n in ns.values()), (after, ns)
    return after


def kill_and_wait_back(cluster, c, jid) -> int:
    """SIGKILL the victim node's process (by its pid) and wait for its next incarnation."""
    old = nodes(c)[VICTIM]["pid"]
    cluster.record()
    os.kill(old, signal.SIGKILL)

    def back():
        agree(c, jid)
        n = nodes(c)[VICTIM]
        return n if n["pid"] != old and n["connected"] and n["state"] != "down" else None
    wait_for(back, 30, f"node {VICTIM} back as a new process", interval=0.1)
    cluster.record()
    return old


@pytest.mark.parametrize("max_requeue", [3, 1])
def test_a_node_killed_twice_under_its_job_ends_the_job_correctly(cluster, max_requeue):
    cluster.up("--topology", "hypercube:2", "--allocator", ALLOCATOR, "--scheduler", SCHEDULER,
               "--time-unit", "0.05", "--liveness", "25", "--max-requeue", str(max_requeue), restart=True)
    c = cluster.client
    # every node: the requeued job can only be placed again on the same four, the victim included
    jid = c.submit({"cube": 2}, runtime=60, command="sleep 3")

    def running_on_victim(attempt):
        def cond():
            j = agree(c, jid)
            return j if j["state"] == "running" and j["attempt"] == attempt and VICTIM in j["nodes"] else None
        return cond
    wait_for(running_on_victim(1), 20, "the job running", interval=0.1)
    kill_and_wait_back(cluster, c, jid)
    j = wait_for(running_on_victim(2), 20, "the requeued job running on the node that came back", interval=0.1)
    assert j["faults"] == 1, j
    assert jid in nodes(c)[VICTIM]["jobs"], (j, nodes(c)[VICTIM])
    kill_and_wait_back(cluster, c, jid)  # its second death must fault the job again

    def ended():
        j = agree(c, jid)
        return j if j["state"] not in ("queued", "running") else None
    j = wait_for(ended, 60, "the job to end after the second kill", interval=0.1)
    assert j["faults"] == 2, j
    if max_requeue >= 2:
        assert j["state"] == "completed" and j["attempt"] == 3, j
        assert sorted(j["nodes"]) == [0, 1, 2, 3]
    else:
        assert j["state"] == "failed" and f"node {VICTIM}" in (j["reason"] or ""), j
    assert all(n["state"] == "idle" and not n["jobs"] for n in nodes(c).values()), nodes(c)


def joiner(cluster, port: int, node: int) -> subprocess.Popen:
    """``mcemu node`` joining over tcp with the nodes' key: a node of "another host", which the
    daemon does not watch (emulator.live.nodes ``watch``)."""
    p = subprocess.Popen([sys.executable, "-m", "emulator", "node", "--connect", f"tcp://127.0.0.1:{port}",
                          "--id", str(node), "--key", str(cluster.home / "keys/issued/nodes.toml")],
                         env=cluster.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    cluster.record(p)
    return p


@pytest.mark.parametrize("max_requeue", [3, 1])
def test_a_remote_node_registering_again_twice_under_its_job_ends_the_job_correctly(cluster, max_requeue):
    port = free_port()
    cluster.mcemu("keys", "init")
    cluster.up("--topology", "hypercube:2", "--allocator", ALLOCATOR, "--scheduler", SCHEDULER,
               "--time-unit", "0.05", "--liveness", "25", "--max-requeue", str(max_requeue),
               "--listen", f"127.0.0.1:{port}", "--local-nodes", "3", restart=True)
    c, remote = cluster.client, 3
    procs = [joiner(cluster, port, remote)]
    try:
        wait_for(lambda: nodes(c)[remote]["pid"] == procs[-1].pid and nodes(c)[remote]["state"] == "idle", 20,
                 "the remote node to join")
        assert not nodes(c)[remote]["watched"]  # known by its heartbeats alone
        jid = c.submit({"cube": 2}, runtime=60, command="sleep 3")
        for attempt in (1, 2):
            def running(attempt=attempt):
                j = agree(c, jid)
                return j if j["state"] == "running" and j["attempt"] == attempt else None
            j = wait_for(running, 20, f"attempt {attempt} running on all four nodes", interval=0.1)
            assert j["faults"] == attempt - 1 and remote in j["nodes"], j
            procs[-1].kill()  # SIGKILL, by its pid
            procs[-1].wait(5)
            procs.append(joiner(cluster, port, remote))  # back well within the 5 s of silence
            wait_for(lambda: agree(c, jid) and nodes(c)[remote]["pid"] == procs[-1].pid, 20,
                     "the node registered again as its new process", interval=0.1)

        def ended():
            j = agree(c, jid)
            return j if j["state"] not in ("queued", "running") else None
        j = wait_for(ended, 60, "the job to end after the second re-registration", interval=0.1)
        assert j["faults"] == 2, j
        if max_requeue >= 2:
            assert j["state"] == "completed" and j["attempt"] == 3, j
        else:
            assert j["state"] == "failed" and f"node {remote}" in (j["reason"] or ""), j
        assert all(n["state"] == "idle" and not n["jobs"] for n in nodes(c).values()), nodes(c)
        assert not any(n["state"] == "down" for n in nodes(c).values())  # never declared down: it came back
        cluster.down()
        wait_for(lambda: procs[-1].poll() is not None, 10, "the joined node to stop with the cluster")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(5)
