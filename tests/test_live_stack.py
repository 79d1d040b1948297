"""The live daemon's policy stack (scheduler.stack) with real processes: a gang cluster keeps
down nodes out of every placement, and ``--param`` reaches a discipline."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from conftest import wait_for
from emulator.cli.cluster import cluster_processes
from emulator.live import home as homemod

pytestmark = pytest.mark.live

UNIT = 0.1
VICTIM = 5
FINAL = ("completed", "failed", "cancelled")


def _nodes(cluster) -> dict:
    return {n["node"]: n for n in cluster.mcemu_json("nodes")["nodes"]}


def _jobs(cluster, ids) -> dict:
    q = cluster.mcemu_json("queue", "--all")["jobs"]
    return {j["id"]: j for j in q if j["id"] in ids}


def _placed_away_from_the_victim(cluster, ids):
    """Every job of ``ids`` running (or done), none with a task on VICTIM; the jobs."""
    jobs = _jobs(cluster, ids)
    for j in jobs.values():
        assert VICTIM not in (j["nodes"] or []), f"job {j['id']} placed on down node {VICTIM}: {j}"
    return jobs if len(jobs) == len(ids) and all(j["state"] != "queued" for j in jobs.values()) else None


def test_gang_cluster_never_places_a_task_on_a_down_node(cluster):
    cluster.up("--topology", "hypercube:3", "--gang", "multilevel", "--time-unit", UNIT)
    pid = _nodes(cluster)[VICTIM]["pid"]
    cluster.record()
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: _nodes(cluster)[VICTIM]["state"] == "down", 5, f"node {VICTIM} down", interval=0.05)
    c = cluster.client

    # parallel jobs that fit beside the down node (a buddy allocator would put the second
    # 2-cube on 4-7 of row 0), and 7 long and 3 short sequential jobs (a node with the
    # fewest would be node 5 for the 6th of them)
    parallel = c.submit_many([{"request": {"cube": k}, "runtime": 3} for k in (2, 2, 1, 1)])
    long_seq = c.submit_many([{"request": {"cube": 0}, "runtime": 400} for _ in range(7)])
    short_seq = c.submit_many([{"request": {"cube": 0}, "runtime": 2} for _ in range(3)])
    whole = c.submit({"cube": 3}, runtime=2)  # needs node 5: waits while it is down
    cluster.record()
    placed = parallel + long_seq + short_seq
    wait_for(lambda: _placed_away_from_the_victim(cluster, placed), 10, "every job placed", interval=0.05)
    w = _jobs(cluster, [whole])[whole]  # waits with the reason, as a discipline's held job does
    assert w["state"] == "held" and w["reason"].startswith("ReqNodeNotAvail: no 3-cube without a down node"), w
    n = _nodes(cluster)[VICTIM]
    assert n["state"] == "down" and n["jobs"] == [] and n["tasks"] == [], n
    by_node = {}
    for j in _jobs(cluster, long_seq).values():
        by_node.setdefault(j["nodes"][0], []).append(j["id"])
    assert sorted(by_node) == [0, 1, 2, 3, 4, 6, 7], by_node  # one long sequential job per node in service

    # they run: every job that can finish does, and none ever touched node 5
    def finished():
        jobs = _jobs(cluster, parallel + short_seq)
        return jobs if all(j["state"] in FINAL for j in jobs.values()) else None

    done = wait_for(finished, 30, "the parallel and short sequential jobs to finish", interval=0.1)
    for j in done.values():
        assert j["state"] == "completed" and VICTIM not in j["nodes"], j
    assert _jobs(cluster, [whole])[whole]["state"] == "held"

    # node 5 comes back (a new process): the waiting whole-machine job and a new sequential
    # job (node 5 is the only node without one) use it
    joiner = subprocess.Popen([sys.executable, "-m", "emulator", "node", "--connect",
                               homemod.control_endpoint(cluster.home), "--id", str(VICTIM)],
                              env=cluster.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    cluster.record(joiner)
    wait_for(lambda: _nodes(cluster)[VICTIM]["state"] != "down", 10, f"node {VICTIM} back", interval=0.05)
    late = c.submit({"cube": 0}, runtime=2)
    cluster.record()
    jobs = wait_for(lambda: (js := _jobs(cluster, [whole, late])) and all(j["state"] in FINAL for j in js.values())
                    and js, 30, "the waiting job and the new one to finish", interval=0.1)
    assert jobs[whole]["state"] == "completed" and jobs[whole]["nodes"] == list(range(8)), jobs[whole]
    assert jobs[late]["state"] == "completed" and jobs[late]["nodes"] == [VICTIM], jobs[late]
    for jid in long_seq:
        c.cancel(jid)
    cluster.down()
    wait_for(lambda: joiner.poll() is not None, 5, "the joined node to stop with the cluster")


def test_param_reaches_a_discipline(cluster):
    st = cluster.up("--topology", "hypercube:2", "--scheduler", "lazy", "--param", "threshold=20")
    assert st["config"]["scheduler"] == "lazy" and st["config"]["params"] == {"threshold": 20}
    s = cluster.client.status()
    assert s["discipline"]["discipline"] == "lazy"
    assert s["discipline"]["threshold"] == 20 and s["discipline"]["threshold_mode"] == "fixed"
    assert s["config"]["params"] == {"threshold": 20} and s["gang"] is None
    jid = cluster.client.submit({"cube": 1}, runtime=0.2)
    wait_for(lambda: cluster.client.queue(jobs=[jid])["jobs"][0]["state"] == "completed", 10, "a job to run")


@pytest.mark.parametrize("args, words", [
    (("--param", "nosuch=1"), "nosuch"),
    (("--param", "threshold=-3"), "threshold"),
    (("--param", "threshold"), "KEY=VALUE"),
    (("--gang", "multilevel", "--param", "levels=[[1,1],[3"), "not a valid list"),
    (("--gang", "multilevel", "--param", "insert_arrivals=maybe"), "insert_arrivals"),
])
def test_a_bad_param_is_one_line_and_starts_nothing(cluster, args, words):
    r = cluster.mcemu("up", "--detach", "--topology", "hypercube:2", *args, check=False)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mcemu up: error:") and words in lines[0], r.stderr
    procs = cluster_processes(cluster.home)
    assert procs["daemon"] is None and procs["launcher"] is None and not procs["tree"], procs
    assert not (cluster.home / "daemon.log").exists()  # no daemon was started
