"""The warm task process (nodes/agent.py): every idle node holds one pre-started child; a run
hands it out with the job's environment, output file and exit status as a cold spawn gives;
it dies with its node."""
from __future__ import annotations

import os
import signal
import stat
import time
from pathlib import Path

import psutil
import pytest

from conftest import ALLOCATOR, SCHEDULER, wait_for
from emulator.cli.cluster import cluster_processes

pytestmark = pytest.mark.live


def warm_children(cluster) -> dict[int, list[psutil.Process]]:
    """node agent pid -> its children (an idle node's only child is its warm one)."""
    ps = cluster_processes(cluster.home)
    out = {}
    for a in ps["launcher"].children():
        try:
            out[a.pid] = a.children()
        except psutil.Error:
            pass
    return out


def test_warm_child_runs_commands_with_the_job_environment_and_dies_with_its_node(cluster):
    cluster.up("--topology", "hypercube:2", "--allocator", ALLOCATOR, "--scheduler", SCHEDULER,
               "--time-unit", "0.01")
    c = cluster.client
    # each idle node starts its warm child a few seconds after registering
    wait_for(lambda: (w := warm_children(cluster)) and all(len(v) == 1 for v in w.values()) and w, 15,
             "every node to hold a warm child")
    before = [v[0] for v in warm_children(cluster).values()]
    cluster.record(*before)
    cmd = 'echo "$MCEMU_JOB_ID $MCEMU_RANK $MCEMU_NODES $MCEMU_NODE $MCEMU_JOB_NAME"; echo err >&2; exit 3'
    jid = c.submit({"cube": 2}, runtime=1, name="warm one", command=cmd)
    job = wait_for(lambda: (j := c.queue(jobs=[jid])["jobs"][0])["state"] in ("completed", "failed") and j, 20,
                   "the command job to finish")
    assert job["exit"] == [3] * 4, job
    # the warm children were handed out (so they ran the command and exited)
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in before)
    outdir = cluster.home / "output"
    for rank, n in enumerate(job["nodes"]):
        f = outdir / f"job{jid}.{rank}.out"
        assert f.read_text().split("\n")[:2] == [f"{jid} {rank} 0,1,2,3 {n} warm one", "err"]
        assert stat.S_IMODE(f.stat().st_mode) == 0o600
    # a synthetic job (0.3 s): runs its time and exits 0
    wait_for(lambda: (w := warm_children(cluster)) and all(len(v) == 1 for v in w.values()) and w, 15,
             "the warm children to be started again")
    t = time.monotonic()
    jid2 = c.submit({"cube": 2}, runtime=30)
    job2 = wait_for(lambda: (j := c.queue(jobs=[jid2])["jobs"][0])["state"] in ("completed", "failed") and j, 20,
                    "the synthetic job to finish")
    assert job2["state"] == "completed" and job2["exit"] == [0] * 4
    assert time.monotonic() - t >= 0.3
    # a warm child dies with its node, even when the node is SIGKILLed
    wait_for(lambda: (w := warm_children(cluster)) and all(len(v) == 1 for v in w.values()) and w, 15,
             "the warm children to be started again")
    agent, (warm,) = next(iter(warm_children(cluster).items()))
    cluster.record(warm)
    os.kill(agent, signal.SIGKILL)
    wait_for(lambda: not warm.is_running() or warm.status() == psutil.STATUS_ZOMBIE, 5, "the warm child to die")
    res = cluster.down()
    assert not cluster.alive(), "mcemu down left processes running"
    assert res["was_running"]


def test_nodes_run_at_sched_batch_and_their_tasks_at_normal(cluster):
    """A woken node must not preempt the daemon or another node (nodes.agent.set_batch), but
    the tasks it starts, warm or cold, get the normal policy back."""
    from nodes.agent import may_leave_idle

    def policies(pid):
        return {os.sched_getscheduler(t.id) for t in psutil.Process(pid).threads()}

    cluster.up("--topology", "hypercube:1", "--allocator", ALLOCATOR, "--scheduler", SCHEDULER,
               "--time-unit", "0.01")
    c = cluster.client
    w = wait_for(lambda: (w := warm_children(cluster)) and all(len(v) == 1 for v in w.values()) and w, 15,
                 "every node to hold a warm child")
    idle = os.SCHED_IDLE if may_leave_idle() else os.SCHED_BATCH
    for agent, (warm,) in w.items():
        assert policies(agent) == {os.SCHED_BATCH}  # the main thread and ZeroMQ's I/O thread
        # the warm child is spawned at its agent's policy and lowered right after
        # (nodes.warm.WarmChild): wait for that rather than look in between
        wait_for(lambda: os.sched_getscheduler(warm.pid) == idle, 10, "the warm child to lower its policy")
    # the daemon's loop keeps the normal policy; its ZeroMQ threads (I/O, reaper) do not
    # preempt it once per message of a job's fan-out (emulator.live.daemon.Daemon.bind)
    daemon = cluster_processes(cluster.home)["daemon"]
    policy = {t.id: os.sched_getscheduler(t.id) for t in daemon.threads()}
    zmq_threads = [tid for tid in policy
                   if Path(f"/proc/{daemon.pid}/task/{tid}/comm").read_text().startswith("ZMQbg")]
    assert policy[daemon.pid] == os.SCHED_OTHER
    assert zmq_threads and {policy[tid] for tid in zmq_threads} == {os.SCHED_BATCH}
    # a command task reports its own policy (field 41 of /proc/self/stat: 0 is SCHED_OTHER)
    jid = c.submit({"cube": 1}, runtime=1, command="cut -d' ' -f41 /proc/self/stat")
    job = wait_for(lambda: (j := c.queue(jobs=[jid])["jobs"][0])["state"] in ("completed", "failed") and j, 20,
                   "the command job to finish")
    for rank in range(2):
        assert (cluster.home / "output" / f"job{jid}.{rank}.out").read_text().strip() == str(os.SCHED_OTHER)
    # a synthetic task: the handed-out warm child, set back to SCHED_OTHER while it runs
    w = wait_for(lambda: (w := warm_children(cluster)) and all(len(v) == 1 for v in w.values()) and w, 15,
                 "the warm children to be started again")
    tasks = [v[0] for v in w.values()]  # handed out: the same processes become the tasks
    jid = c.submit({"cube": 1}, runtime=500)
    wait_for(lambda: {os.sched_getscheduler(p.pid) for p in tasks} == {os.SCHED_OTHER}, 10,
             "the tasks to run at SCHED_OTHER")
    assert c.queue(jobs=[jid])["jobs"][0]["state"] == "running"
    c.cancel(jid)
    cluster.down()
    cluster.up("--topology", "hypercube:1", "--allocator", ALLOCATOR, "--scheduler", SCHEDULER, "--node-sched", "normal")
    for agent in warm_children(cluster):
        assert policies(agent) == {os.SCHED_OTHER}
    cluster.down()
    assert not cluster.alive(), "mcemu down left processes running"


def test_an_idle_node_wakes_once_per_heartbeat(cluster):
    """An idle node wakes for the daemon's heartbeat and nothing else (nodes.agent.run answers
    it in the same wake-up and keeps its own heartbeat and liveness timers in step with the
    messages; the launcher check is every PARENT_CHECK): 256 idle nodes share two cores with
    the job that starts next. Its main thread blocks once per wake-up, so its voluntary
    context switches count them."""
    from nodes.agent import PARENT_CHECK

    def sleeps(pid):
        with open(f"/proc/{pid}/task/{pid}/status") as f:
            return int(next(x for x in f if x.startswith("voluntary_ctxt_switches:")).split()[1])

    cluster.up("--topology", "hypercube:2", "--allocator", ALLOCATOR, "--scheduler", SCHEDULER,
               "--heartbeat", "0.1")
    w = wait_for(lambda: (w := warm_children(cluster)) and all(len(v) == 1 for v in w.values()) and w, 15,
                 "every node to hold a warm child")
    window = 3.0
    assert window < PARENT_CHECK
    before = {a: sleeps(a) for a in w}
    t = time.monotonic()
    time.sleep(window)  # a window of measurement, not a wait for a condition
    beats = (time.monotonic() - t) / 0.1
    for a, n in before.items():
        woke = sleeps(a) - n
        # one per heartbeat of the daemon (fewer when a wave is held back); a loop that
        # looks at its timers on its own wakes 1.5 to 2 times per heartbeat
        assert beats * 0.5 <= woke <= beats * 1.2 + 3, (a, woke, beats)
    cluster.down()
    assert not cluster.alive(), "mcemu down left processes running"
