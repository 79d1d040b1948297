"""The live flow with real processes: ``mcemu up`` a 4-cube, submit 20 jobs of mixed sizes,
all complete on the nodes their allocations named, ``mcemu down`` leaves nothing running."""
from __future__ import annotations

import random

import psutil
import pytest

from conftest import ALLOCATOR, SCHEDULER, wait_for
from emulator.cli.cluster import cluster_processes

pytestmark = pytest.mark.live


def test_twenty_jobs_run_where_allocated_and_down_leaves_nothing(cluster):
    out = cluster.home / "seen"
    out.mkdir()
    st = cluster.up("--topology", "hypercube:4", "--allocator", ALLOCATOR, "--scheduler", SCHEDULER,
                    "--time-unit", "0.02")
    assert st["nodes"] == {"idle": 16}
    nodes = cluster.mcemu_json("nodes")["nodes"]
    assert [n["node"] for n in nodes] == list(range(16)) and all(n["state"] == "idle" for n in nodes)
    cluster.record()
    launcher = cluster_processes(cluster.home)["launcher"]
    assert len(launcher.children()) == 16  # one agent per node (each may hold a warm task child)
    assert len(cluster.seen) >= 18  # daemon, launcher, 16 nodes, any warm children
    # every task records where it ran and what it was told
    cmd = f'echo "$MCEMU_RANK $MCEMU_NODES" > {out}/$MCEMU_JOB_ID.$MCEMU_NODE; sleep 0.05'
    rng = random.Random(5)
    sizes = [rng.choice([0, 0, 1, 1, 2, 2, 3, 4]) for _ in range(20)]
    ids = [cluster.mcemu_json("submit", "--cube", k, "--runtime", 3, "--command", cmd)["job"] for k in sizes[:3]]
    ids += [cluster.client.submit({"cube": k}, runtime=3, name=f"j{i}", command=cmd)
            for i, k in enumerate(sizes[3:])]
    assert ids == list(range(1, 21))
    cluster.record()

    def all_done():
        jobs = cluster.client.queue(all=True)["jobs"]
        return jobs if all(j["state"] in ("completed", "failed") for j in jobs) else None

    jobs = wait_for(all_done, 60, "20 jobs to complete")
    assert len(jobs) == 20
    for j, k in zip(sorted(jobs, key=lambda j: j["id"]), sizes):
        assert j["state"] == "completed" and j["exit"] == [0] * (1 << k), j
        assert len(j["nodes"]) == 1 << k and j["attempt"] == 1
        seen = {int(p.name.split(".")[1]): p.read_text().split() for p in out.glob(f"{j['id']}.*")}
        assert sorted(seen) == j["nodes"]  # ran exactly on the allocation's nodes
        for node, (rank, nodelist) in seen.items():
            assert j["nodes"][int(rank)] == node and nodelist == ",".join(map(str, j["nodes"]))
    # no node ever held two jobs at once
    for a in jobs:
        for b in jobs:
            if a["id"] < b["id"] and set(a["nodes"]) & set(b["nodes"]):
                assert a["end"] <= b["start"] or b["end"] <= a["start"], (a, b)
    table = cluster.mcemu("queue", "--all").stdout
    assert "completed" in table and "JOBID" in table

    cluster.record()
    res = cluster.down()
    assert res["was_running"] and not res["killed"]
    assert not cluster.alive(), "mcemu down left processes running"
    assert not any(p.name().startswith("python") for p in psutil.Process().children(recursive=True))
    r = cluster.mcemu("nodes", "--timeout", "0.5", check=False)
    assert r.returncode == 2 and "no answer" in r.stderr
