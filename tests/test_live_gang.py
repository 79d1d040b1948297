"""Gang scheduling on the live cluster (issue 7, "Live" and "Acceptance").

Real processes: a daemon driving a gang policy and one agent per node; tasks are suspended
and resumed with SIGSTOP/SIGCONT, which the OS must confirm (psutil status ``stopped``).
Turnarounds are compared with emulator.sim.gang run on the same jobs (same submit times).

Tolerance of that comparison (in time units; U = the time unit in seconds): the live
schedule can only be later than the simulated one, never earlier, because a task's run time
is accounted by its node from its SIGCONT while the daemon's slot clock starts at the tick
(so each switch costs the incoming job the switch latency) and a job ends when its last task
has reported. So live >= sim - 0.05 (rounding of model time), and live <= sim + (START_S +
k x SWITCH_S) / U for a job that sim shows finishing after k slot switches: 60 ms a switch
(the latency measured by scripts/bench_gang_live.py on 16 nodes is a few ms; the machine is
shared, so a 10x margin) plus 0.3 s for creating the 96 task processes at once (the first
switch waited ~130 ms for them here) and the final report. The job lists are chosen so that
every simulated completion lies at least 0.5 unit (250 ms) before the end of its slot, more
than the latency at the point it matters, so live and sim make the same choices; a job that
missed its slot end by a hair would wait a whole round, and the test would say so.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import psutil
import pytest

from conftest import wait_for
from emulator.live import protocol as P
from emulator.live.daemon import Daemon
from emulator.sim.gang import run_gang
from scheduler.jobs import Job
from scheduler.topology import Request

pytestmark = pytest.mark.live

UNIT = 0.5
START_S = 0.3  # creating 16 x 6 task processes at once, and the last task's report
SWITCH_S = 0.06  # the latency of one slot switch, with a 10x margin


def _finished(cluster, ids, timeout):
    def done():
        q = cluster.client.queue(jobs=ids)["jobs"]
        return q if all(j["state"] in ("completed", "failed", "cancelled") for j in q) and len(q) == len(ids) else None

    return wait_for(done, timeout, f"jobs {ids} to finish", interval=0.05)


def _simulate(policy, params, rows, runtimes):
    """gang_sim of the same jobs at their live submit times; returns {job id: (turnaround,
    slot switches up to its finish)}."""
    jobs = [Job(r["id"], r["submit"], Request.cube(4), rt) for r, rt in zip(rows, runtimes)]
    run = run_gang(policy, "hypercube:4", jobs, allocator="buddy", policy_params=params, trace=True)
    out = {}
    for j in run.jobs:
        k = sum(1 for sw in run.trace if sw.time <= j["finish"])
        out[j["id"]] = (j["turnaround"], k, j["finish"])
    return out


def _check_against_sim(rows, sim):
    live = {r["id"]: r["end"] - r["submit"] for r in rows}
    for jid, (tat, k, _) in sim.items():
        hi = tat + (START_S + k * SWITCH_S) / UNIT
        assert tat - 0.05 <= live[jid] <= hi, (
            f"job {jid}: live turnaround {live[jid]:.2f} not in [{tat - 0.05:.2f}, {hi:.2f}] "
            f"(simulated {tat:.2f}); live {live}, sim {sim}")
    # completion order follows the policy: the simulated order
    assert sorted(live, key=lambda j: rows_by_id(rows)[j]["end"]) == sorted(sim, key=lambda j: sim[j][2])


def rows_by_id(rows):
    return {r["id"]: r for r in rows}


def _consistent_sample(cluster):
    """One race-free look at the nodes: the daemon's view, the OS's process states, and the
    daemon's view again with every node still at the same reported switch. Returns the
    process states or None when a switch happened in between."""
    before = cluster.client.nodes()
    states = {}
    for n in before:
        for t in n["tasks"]:
            if t["pid"] is None:
                return None
            try:
                states[(n["node"], t["job"])] = psutil.Process(t["pid"]).status()
            except psutil.NoSuchProcess:
                return None
    after = cluster.client.nodes()
    for a, b in zip(before, after):
        ra, rb = a.get("reported"), b.get("reported")
        if ra is None or ra != rb or a["jobs"] != b["jobs"] or a["running"] != b["running"] or len(a["jobs"]) < 3:
            return None
        if sorted(ra["running"]) != sorted(a["running"]) or sorted(ra["stopped"]) != sorted(a["suspended"]):
            return None  # the node has not applied the latest switch yet
    return before, states


def test_acceptance_multilevel_six_whole_machine_jobs(cluster):
    st = cluster.up("--topology", "hypercube:4", "--gang", "multilevel", "--mpl", "6", "--time-unit", UNIT)
    assert st["config"]["gang"] == "multilevel"
    runtimes = [0.3, 1.5, 2.5, 4.5, 6.5, 9.5]
    ids = cluster.client.submit_many([{"request": {"cube": 4}, "runtime": r, "name": f"g{i}"}
                                      for i, r in enumerate(runtimes)])
    assert all(isinstance(i, int) for i in ids), ids
    cluster.record()

    # sampled `mcemu nodes --json`: on each node one task runs and the others are kept in
    def sampled():
        nodes = cluster.mcemu_json("nodes")["nodes"]
        placed = [n for n in nodes if len(n["jobs"]) >= 3]
        if len(placed) != 16:
            return None
        for n in nodes:
            assert len(n["running"]) <= 1, n
            assert sorted(n["running"] + n["suspended"]) == sorted(n["jobs"]), n
        return nodes if all(len(n["running"]) == 1 for n in nodes) else None

    nodes = wait_for(sampled, 10, "a sample with a running task and suspended tasks on every node", interval=0.05)
    running = {n["running"][0] for n in nodes}
    assert len(running) == 1, f"the nodes disagree on the dispatched job: {running}"  # one gang at a time

    # the OS agrees: the kept-in tasks are in state T, the dispatched one is not
    snap = wait_for(lambda: _consistent_sample(cluster), 10, "a race-free sample")
    view, states = snap
    n_stopped = 0
    for n in view:
        for t in n["tasks"]:
            s = states[(n["node"], t["job"])]
            if t["state"] == "suspended":
                assert s == psutil.STATUS_STOPPED, (n["node"], t, s)
                n_stopped += 1
            else:
                assert s != psutil.STATUS_STOPPED, (n["node"], t, s)
    assert n_stopped >= 16 * 2

    # `mcemu queue` shows each job's level and attained slots
    q = cluster.mcemu_json("queue")
    gang_rows = [j["gang"] for j in q["jobs"] if j.get("gang")]
    assert gang_rows and all({"level", "slots", "attained", "state"} <= set(g) for g in gang_rows)
    st = cluster.client.status()
    assert st["gang"]["policy"] == "multilevel" and st["gang"]["office"]["order"]

    rows = _finished(cluster, ids, 60)
    assert [r["state"] for r in rows] == ["completed"] * 6, rows
    for r in rows:  # each task was dispatched for the job's run time, not for its wall time
        assert r["usage"]["dispatched"] == pytest.approx(16 * r["runtime"] * UNIT, rel=0.05, abs=0.1)
    assert rows_by_id(rows)[ids[-1]]["usage"]["wall"] > 2 * 16 * runtimes[-1] * UNIT  # it was kept in a lot
    sim = _simulate("multilevel", {"mpl": 6}, rows, runtimes)
    _check_against_sim(rows, sim)
    # after the last job nothing is left stopped on any node
    assert all(n["state"] == "idle" and not n["tasks"] for n in cluster.client.nodes())


def test_round_robin_two_whole_machine_jobs(cluster):
    cluster.up("--topology", "hypercube:4", "--gang", "round-robin", "--param", "slot=1.0", "--time-unit", UNIT)
    runtimes = [2.5, 3.5]
    ids = cluster.client.submit_many([{"request": {"cube": 4}, "runtime": r} for r in runtimes])
    cluster.record()
    seen = set()

    def alternated():  # both jobs are seen dispatched, one at a time
        for n in cluster.client.nodes():
            assert len(n["running"]) <= 1, n
        r = cluster.client.nodes()[0]["running"]
        seen.update(r)
        return seen >= set(ids)

    wait_for(alternated, 10, "both jobs to be dispatched in turn", interval=0.02)
    rows = _finished(cluster, ids, 30)
    assert [r["state"] for r in rows] == ["completed"] * 2
    sim = _simulate("round-robin", {"slot": 1.0}, rows, runtimes)
    _check_against_sim(rows, sim)
    st = cluster.client.status()
    sw = st["gang_switches"]
    assert sw and all(s["nodes"] == 16 for s in sw if s["cont_skew"] is not None)


def test_refused_request_changes_nothing(tmp_path):
    """static refuses a whole-machine cube (its partitions are 0..n-1-cubes), a gang policy a
    cube larger than the machine: a clear error, no job, no journal event, no id used."""
    for cfg, req in (({"topology": "hypercube:4", "scheduler": "static"}, {"cube": 4}),
                     ({"topology": "hypercube:4", "gang": "multilevel"}, {"cube": 5})):
        home = Path(tempfile.mkdtemp(dir=tmp_path))
        d = Daemon(home, cfg)
        try:
            d.from_clients.on_submit(b"c", {"id": 1, "request": req, "runtime": 1.0})
            (_, frame), = d.outbox
            m = P.decode(frame, max_size=P.MAX_REPLY)
            assert m["type"] == "error" and m["code"] == "bad-request" and "cube" in m["message"], m
            assert not d.jobs and d.next_id == 1 and not d.journal.dirty
            d.outbox.clear()
            d.from_clients.on_submit(b"c", {"id": 2, "request": {"cube": 1}, "runtime": 1.0})
            (_, frame), = d.outbox
            assert P.decode(frame, max_size=P.MAX_REPLY)["data"]["job"] == 1
        finally:
            d.journal.close()


def test_daemon_killed_under_gang_recovers_the_slots_and_every_job_finishes_once(cluster):
    """The journal's inputs (ticks included) rebuild the gang state; the nodes keep their
    tasks (and their dispatched-time accounts) and get the current slot on re-registration."""
    import os
    import signal

    cluster.up("--topology", "hypercube:3", "--gang", "round-robin", "--param", "slot=1.0", "--time-unit", UNIT)
    runtimes = [2.5, 3.5, 4.5]
    ids = cluster.client.submit_many([{"request": {"cube": 3}, "runtime": r} for r in runtimes])
    wait_for(lambda: cluster.client.status()["gang"]["slot"]["number"] >= 3, 20, "three slots")
    cluster.record()
    os.kill(cluster.daemon_pid(), signal.SIGKILL)
    cluster.client.close()
    cluster._client = None
    wait_for(lambda: cluster.daemon_pid() is None, 5, "the daemon to be gone")
    cluster.up()  # the journal knows the gang policy; the nodes are still there
    cluster.record()
    st = cluster.client.status()
    assert st["config"]["gang"] == "round-robin" and st["gang"]["office"]["order"]

    def one_at_a_time():  # after the new daemon's first switch reached every node
        nodes = cluster.client.nodes()
        for n in nodes:
            r = n["reported"]
            if r is not None:
                assert len(r["running"]) <= 1, n
        return all(n["reported"] is not None for n in nodes) or None

    wait_for(one_at_a_time, 20, "every node to report a slot of the new daemon")
    rows = _finished(cluster, ids, 60)
    for r, rt in zip(rows, runtimes):
        assert r["state"] == "completed" and r["attempt"] == 1, r
        assert r["usage"]["dispatched"] == pytest.approx(8 * rt * UNIT, rel=0.05, abs=0.1), r
