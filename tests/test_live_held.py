"""Held jobs with real processes (issue 19): the minimal stall case. A 3-cube, buddy, lazy;
nodes 1 and 5 SIGKILLed (and left dead); a 2-cube and four 1-node jobs submitted. No 2-cube
of the buddy system is whole without nodes 1 and 5, so the 2-cube is held with its reason
and the four 1-node jobs run at once; when node 1 comes back the 2-cube runs."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from conftest import node_states, wait_for
from emulator.live import home as homemod

pytestmark = pytest.mark.live


def no_restart(cluster) -> list[str]:
    """``--no-restart``: the test needs the nodes it kills to stay dead until it brings one
    back itself."""
    return ["--no-restart"]


def test_minimal_stall_case_small_jobs_run_and_the_2_cube_is_held_until_a_node_returns(cluster):
    cluster.up("--topology", "hypercube:3", "--allocator", "buddy", "--scheduler", "lazy",
               "--time-unit", "0.05", *no_restart(cluster))
    c = cluster.client
    pids = {n: node_states(cluster)[n]["pid"] for n in (1, 5)}
    for n, pid in pids.items():
        os.kill(pid, signal.SIGKILL)
    wait_for(lambda: all(node_states(cluster)[n]["state"] == "down" for n in (1, 5)), 5, "nodes 1 and 5 down")

    big = c.submit({"cube": 2}, runtime=10, name="big")
    small = [c.submit({"cube": 0}, runtime=60, name=f"small{i}") for i in range(4)]  # 3 s each

    def rows():
        return {j["id"]: j for j in c.queue(jobs=[big, *small])["jobs"]}

    # the four 1-node jobs run at once (together, on four of the six up nodes)
    q = wait_for(lambda: (r := rows()) and all(r[j]["state"] == "running" for j in small) and r,
                 5, "the four 1-node jobs to run")
    assert not {1, 5} & {n for j in small for n in q[j]["nodes"]}
    # the 2-cube is held with its reason, in queue --json and in the human table
    assert q[big]["state"] == "held"
    assert q[big]["reason"] == "ReqNodeNotAvail: no 2-cube without a down node (down: 1, 5)"
    table = cluster.mcemu("queue").stdout
    line = next(ln for ln in table.splitlines() if " big " in f" {ln} ")
    assert "held" in line and "ReqNodeNotAvail" in line
    js = cluster.mcemu_json("queue")
    assert {j["id"]: (j["state"], j["reason"]) for j in js["jobs"]}[big][0] == "held"
    # and in the monitor's discipline snapshot (the queues region)
    st = c.status()
    assert [h["id"] for h in st["discipline"]["held"]] == [big]

    # the small jobs finish; with 6 idle nodes the 2-cube is still held (not stalled: held)
    wait_for(lambda: all(rows()[j]["state"] == "completed" for j in small), 15, "the 1-node jobs to complete")
    assert rows()[big]["state"] == "held"

    # node 1 comes back (brought back by hand): 0** is whole again, the 2-cube runs there
    joiner = subprocess.Popen([sys.executable, "-m", "emulator", "node", "--connect",
                               homemod.control_endpoint(cluster.home),
                               "--id", "1"], env=cluster.env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    cluster.record(joiner)
    j = wait_for(lambda: (r := rows()[big])["state"] in ("running", "completed") and r, 10,
                 "the 2-cube to start once node 1 is back")
    assert j["nodes"] == [0, 1, 2, 3] and j["reason"] is None
    wait_for(lambda: rows()[big]["state"] == "completed", 10, "the 2-cube to complete")
    cluster.down()
    wait_for(lambda: joiner.poll() is not None, 5, "the joined node to stop with the cluster")
