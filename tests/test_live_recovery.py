"""Recovery with real processes (issue 19): a killed node comes back by itself (the launcher
restarts it) or, with ``--no-restart``, stays dead until it joins by hand over ipc://; ``mcemu
up`` on the journal of a killed daemon says what it recovered and exits 0 with a node down;
``mcemu wait``'s exit status; a failed ``mcemu up`` leaves no process behind."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import ALLOCATOR, SCHEDULER, wait_for
from emulator.cli.cluster import cluster_processes
from nodes.launcher import Restarts

pytestmark = pytest.mark.live


def nodes(cluster) -> dict:
    return {n["node"]: n for n in cluster.client.nodes()}


def kill_node(cluster, n: int) -> int:
    pid = nodes(cluster)[n]["pid"]
    cluster.record()
    os.kill(pid, signal.SIGKILL)
    return pid


def holds(cond, seconds: float, what: str, interval: float = 0.05) -> None:
    """``cond()`` stays true for ``seconds`` (checked every ``interval``)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        assert cond(), f"no longer true: {what}"
        time.sleep(interval)


def launcher_log(cluster) -> str:
    return (cluster.home / "launcher.log").read_text()


def test_a_killed_node_comes_back_by_itself_and_its_job_runs_again(cluster):
    cluster.up("--topology", "hypercube:2", "--allocator", ALLOCATOR, "--scheduler", SCHEDULER, "--time-unit", "0.05",
               restart=True)
    c = cluster.client
    jid = c.submit({"cube": 2}, runtime=20, command="sleep 0.5")  # every node: it can only run again on all four
    wait_for(lambda: c.queue(jobs=[jid])["jobs"][0]["state"] == "running", 10, "the job running")
    t_kill = time.monotonic()
    old = kill_node(cluster, 1)

    def back():
        n = nodes(cluster)[1]
        return n if n["pid"] != old and n["connected"] and n["state"] != "down" else None

    n = wait_for(back, 10, "node 1 to come back with a new pid")
    took = time.monotonic() - t_kill
    launcher = cluster_processes(cluster.home)["launcher"]
    assert n["pid"] in {p.pid for p in launcher.children()}  # the launcher's own child
    log = launcher_log(cluster)
    assert f"node 1 (pid {old}) killed by signal 9; restarting it in 0.5 s" in log, log
    assert f"node 1 restarted as pid {n['pid']}" in log, log
    cluster.record()
    j = wait_for(lambda: (j := c.queue(jobs=[jid])["jobs"][0])["state"] in ("completed", "failed") and j, 20,
                 "the requeued job to finish on the node that came back")
    assert j["state"] == "completed" and j["attempt"] == 2 and j["faults"] == 1, j
    assert sorted(j["nodes"]) == [0, 1, 2, 3]
    print(f"node back {took:.2f} s after its SIGKILL")
    # killed again, the backoff doubles; `mcemu down` meanwhile drops the pending restart
    again = kill_node(cluster, 1)
    wait_for(lambda: f"node 1 (pid {again}) killed by signal 9; restarting it in 1 s" in launcher_log(cluster), 5,
             "the second restart to be scheduled")
    t = time.monotonic()
    res = cluster.down()
    assert time.monotonic() - t < 5 and not res["terminated"] and not res["killed"], res
    assert not cluster.alive(), "mcemu down left processes running"
    assert launcher_log(cluster).count("node 1 restarted as pid") == 1


def test_a_node_that_keeps_dying_is_left_down_after_max_restarts(cluster):
    cluster.up("--topology", "hypercube:1", "--allocator", ALLOCATOR, "--scheduler", SCHEDULER,
               "--max-restarts", "1", restart=True)
    first = kill_node(cluster, 0)
    wait_for(lambda: (n := nodes(cluster)[0])["pid"] != first and n["connected"], 10, "node 0 restarted once")
    second = kill_node(cluster, 0)
    wait_for(lambda: nodes(cluster)[0]["state"] == "down", 5, "node 0 down")
    wait_for(lambda: "not restarted" in launcher_log(cluster), 5, "the launcher to give up")
    assert f"node 0 (pid {second}) killed by signal 9; not restarted (1 restart within 60 s): it stays down" in \
        launcher_log(cluster)
    launcher = cluster_processes(cluster.home)["launcher"]
    holds(lambda: nodes(cluster)[0]["state"] == "down" and len(launcher.children()) == 1, 1.5, "node 0 dead")


def test_up_refuses_a_negative_max_restarts_and_starts_nothing(tmp_path, capsys, monkeypatch):
    from emulator.cli import main

    monkeypatch.setenv("MCEMU_HOME", str(tmp_path / "home"))
    assert main(["up", "--max-restarts", "-1"]) == 2
    err = capsys.readouterr().err
    assert "--max-restarts must be within 0-1000" in err and err.count("\n") == 1
    assert not (tmp_path / "home" / "daemon.pid").exists()


def test_no_restart_keeps_a_dead_node_dead_until_it_joins_by_hand_over_ipc(cluster):
    cluster.up("--topology", "hypercube:2", "--allocator", ALLOCATOR, "--scheduler", SCHEDULER,
               "--time-unit", "0.05", "--no-restart")
    old = kill_node(cluster, 2)
    wait_for(lambda: nodes(cluster)[2]["state"] == "down", 5, "node 2 down")
    wait_for(lambda: "not restarted (--no-restart)" in launcher_log(cluster), 5, "the launcher to say so")
    assert f"node 2 (pid {old}) killed by signal 9; not restarted (--no-restart): it stays down" in \
        launcher_log(cluster)
    launcher = cluster_processes(cluster.home)["launcher"]
    # four times the first backoff: a restart would have come
    holds(lambda: nodes(cluster)[2]["state"] == "down" and len(launcher.children()) == 3, 2.0, "node 2 dead")
    # the documented way back: `mcemu node --connect ipc://$MCEMU_HOME/daemon.sock --id N`
    joiner = subprocess.Popen([sys.executable, "-m", "emulator", "node", "--connect",
                               f"ipc://{cluster.home}/daemon.sock", "--id", "2"], env=cluster.env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    cluster.record(joiner)
    try:
        wait_for(lambda: nodes(cluster)[2]["state"] == "idle" and nodes(cluster)[2]["pid"] == joiner.pid, 10,
                 "node 2 to join again")
        j = cluster.client.submit({"cube": 2}, runtime=2)
        wait_for(lambda: cluster.client.queue(jobs=[j])["jobs"][0]["state"] == "completed", 10, "a whole-machine job")
        cluster.down()
        wait_for(lambda: joiner.poll() is not None, 5, "the joined node to stop with the cluster")
    finally:
        if joiner.poll() is None:
            joiner.kill()
            joiner.wait(5)


def test_up_on_the_journal_of_a_killed_daemon_reports_and_exits_0_with_a_node_down(cluster):
    cluster.up("--topology", "hypercube:3", "--allocator", ALLOCATOR, "--scheduler", SCHEDULER,
               "--time-unit", "0.02", "--no-restart")
    c = cluster.client
    ids = c.submit_many([{"request": {"cube": 0}, "runtime": 25, "command": "sleep 0.3"} for _ in range(12)])
    wait_for(lambda: c.status()["jobs"].get("running", 0) >= 6, 10, "jobs running")
    kill_node(cluster, 5)
    wait_for(lambda: nodes(cluster)[5]["state"] == "down", 5, "node 5 down")
    os.kill(cluster.daemon_pid(), signal.SIGKILL)
    c.close()
    cluster._client = None
    wait_for(lambda: cluster.daemon_pid() is None, 5, "the daemon to be gone")
    t = time.monotonic()
    r = cluster.mcemu("up", "--detach")  # text: what it recovered
    took = time.monotonic() - t
    cluster.record()
    assert r.returncode == 0 and took < 10, (took, r.stdout, r.stderr)
    assert "recovered the journal" in r.stdout and "1 down (5)" in r.stdout, r.stdout
    assert "jobs queued" in r.stdout and "running" in r.stdout
    st = cluster.client.status()
    assert st["nodes"].get("down") == 1 and st["connected"] == 7
    # `mcemu wait` on them: 0, every one completed
    w = cluster.mcemu("wait", *ids, "--timeout", "60", check=False, timeout=90)
    assert w.returncode == 0, (w.stdout, w.stderr)
    assert f"{len(ids)} jobs: {len(ids)} completed" in w.stdout
    print(f"recovering up took {took:.2f} s")


def test_up_json_on_an_unclosed_journal_lists_what_it_recovered(cluster):
    cluster.up("--topology", "hypercube:2", "--allocator", ALLOCATOR, "--scheduler", SCHEDULER,
               "--time-unit", "0.05", "--no-restart")
    c = cluster.client
    c.submit({"cube": 2}, runtime=400)  # runs (20 s)
    c.submit({"cube": 1}, runtime=2)  # waits behind it
    wait_for(lambda: c.status()["jobs"].get("running") == 1, 10, "the first job running")
    os.kill(cluster.daemon_pid(), signal.SIGKILL)
    c.close()
    cluster._client = None
    wait_for(lambda: cluster.daemon_pid() is None, 5, "the daemon to be gone")
    doc = cluster.up()
    rec = doc["recovered"]
    assert rec["queued"] == 1 and rec["running"] == 1 and rec["finished"] == 0, rec
    assert rec["nodes_down"] == [] and rec["nodes_not_back"] == [], rec


def test_wait_exit_status_says_how_the_jobs_ended(cluster):
    cluster.up("--topology", "hypercube:2", "--allocator", ALLOCATOR, "--scheduler", SCHEDULER, "--time-unit", "0.05")
    c = cluster.client
    ok = c.submit({"cube": 0}, runtime=2, command="true")
    bad = c.submit({"cube": 0}, runtime=2, command="exit 3")
    long = c.submit({"cube": 0}, runtime=2, command="sleep 30")
    r = cluster.mcemu("wait", ok, check=False)
    assert r.returncode == 0, (r.stdout, r.stderr)
    r = cluster.mcemu("wait", ok, bad, "--json", check=False)
    assert r.returncode == 1 and json.loads(r.stdout)["states"] == {"completed": 1, "failed": 1}, r.stdout
    t = time.monotonic()
    r = cluster.mcemu("wait", long, "--timeout", "0.5", check=False)
    assert r.returncode == 3 and "still active at the timeout" in r.stdout and time.monotonic() - t < 10
    c.cancel(long)
    r = cluster.mcemu("wait", long, check=False)
    assert r.returncode == 1 and "cancelled" in r.stdout
    r = cluster.mcemu("wait", 999, check=False)
    assert r.returncode == 2 and "no such job: 999" in r.stderr
    r = cluster.mcemu("wait", check=False)  # nothing active: nothing to wait for
    assert r.returncode == 0 and "nothing to wait for" in r.stdout


def test_restart_backoff_doubles_to_its_cap_and_a_node_is_given_up_after_the_limit():
    r = Restarts(limit=5, first=0.5, cap=8.0, window=60.0, stable=60.0)
    r.born(3, 0.0)
    delays, t = [], 1.0
    for _ in range(5):
        d = r.died(3, t)
        delays.append(d)
        r.born(3, t + d)
        t += d + 1.0  # dies 1 s after each restart
    assert delays == [0.5, 1.0, 2.0, 4.0, 8.0]
    assert r.died(3, t) is None  # a sixth restart within 60 s: left dead
    assert r.died(4, t) == 0.5  # per node
    # a minute later the window has room again, and a node that stayed up 60 s starts from 0.5 s
    r.born(3, t)
    assert r.died(3, t + 120.0) == 0.5
    assert Restarts(limit=0).died(1, 0.0) is None  # --no-restart


# ---------------------------------------------------------------------- a failed `up`

# Runs `mcemu up` as its child and is the child subreaper: whatever `up` started and left
# behind is re-parented here, listed, and killed by pid. Prints one JSON document.
SUBREAPER = r"""
import ctypes, json, signal, subprocess, sys, time
import psutil
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
argv, interrupt_when, home = json.loads(sys.argv[1])
signal.signal(signal.SIGINT, signal.SIG_DFL)  # the child must not inherit an ignored SIGINT
out_f, err_f = open(home + "/up.out", "w+"), open(home + "/up.err", "w+")  # files: a leaked process
p = subprocess.Popen(argv, stdout=out_f, stderr=err_f)  # holding a pipe would block the wait
interrupted = False
if interrupt_when:
    deadline = time.monotonic() + 60
    while p.poll() is None and time.monotonic() < deadline:
        try:
            open(home + "/" + interrupt_when).close()
        except OSError:
            time.sleep(0.002)
            continue
        p.send_signal(signal.SIGINT)
        interrupted = True
        break
try:
    p.wait(timeout=120)
except subprocess.TimeoutExpired:
    p.kill()
    p.wait()
out_f.seek(0)
err_f.seek(0)
out, err = out_f.read(), err_f.read()
left = psutil.Process().children(recursive=True)
survivors = []
for c in left:
    try:
        if c.status() != psutil.STATUS_ZOMBIE:
            survivors.append([c.pid, " ".join(c.cmdline())[:200]])
    except psutil.Error:
        pass
for c in left:
    try:
        c.kill()
    except psutil.Error:
        pass
psutil.wait_procs(left, timeout=5)
print(json.dumps({"rc": p.returncode, "stdout": out, "stderr": err, "survivors": survivors,
                  "interrupted": interrupted}))
"""


@pytest.fixture
def bare_home():
    home = Path(tempfile.mkdtemp(prefix="mcemu-"))
    yield home
    shutil.rmtree(home, ignore_errors=True)


def failed_up(home: Path, *args, interrupt_when=None) -> dict:
    argv = [sys.executable, "-m", "emulator", "up", "--detach", *args]
    r = subprocess.run([sys.executable, "-c", SUBREAPER, json.dumps([argv, interrupt_when, str(home)])],
                       env=dict(os.environ, MCEMU_HOME=str(home)), capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_up_that_misses_its_deadline_stops_everything_it_started(bare_home):
    t = time.monotonic()
    res = failed_up(bare_home, "--topology", "hypercube:8", "--timeout-up", "0.3")
    assert res["rc"] == 2, res
    assert "not ready before the deadline" in res["stderr"] and res["stderr"].count("\n") == 1, res["stderr"]
    assert res["survivors"] == [], res["survivors"]
    assert cluster_processes(bare_home) == {"daemon": None, "launcher": None, "interconnect": None, "tree": []}
    print(f"failed up and its clean-up took {time.monotonic() - t:.2f} s")


def test_up_interrupted_while_the_nodes_register_stops_everything_it_started(bare_home):
    res = failed_up(bare_home, "--topology", "hypercube:8", "--timeout-up", "120",
                    interrupt_when="launcher.pid")  # while it forks the nodes or they register
    assert res["interrupted"] and res["rc"] == 130, res
    assert res["survivors"] == [], res["survivors"]
    assert cluster_processes(bare_home) == {"daemon": None, "launcher": None, "interconnect": None, "tree": []}


def test_a_foreground_cluster_outlives_its_daemon_s_death_and_a_plain_up_recovers_it(cluster, tmp_path):
    """``mcemu up`` in the foreground took its daemon's death for the end of the cluster and
    stopped every node and task (the README's "the nodes keep their tasks running" held only
    for --detach); and the recovering ``mcemu up`` (no options, as the README has it) held the
    terminal instead of exiting 0, so that its Ctrl-C stopped the recovered cluster."""
    import psutil

    err = tmp_path / "up.err"
    with open(err, "w") as f:
        fg = subprocess.Popen([sys.executable, "-m", "emulator", "up", "--topology", "mesh:2x2", "--no-restart"],
                              env=cluster.env, stdout=subprocess.DEVNULL, stderr=f, text=True)
    cluster.record(fg)
    try:
        # in its foreground loop (a daemon killed before `up` saw every node register is another
        # case: a start that failed)
        wait_for(lambda: "running in the foreground" in err.read_text(), 30, "the foreground cluster up")
        cluster.record()
        jid = cluster.client.submit({"nodes": 2}, 100, command="sleep 60")
        wait_for(lambda: cluster.client.queue(jobs=[jid])["jobs"][0]["state"] == "running", 10, "the job running")
        agents = [n["pid"] for n in cluster.client.nodes()]
        os.kill(cluster.daemon_pid(), signal.SIGKILL)
        fg.wait(10)
        said = err.read_text()
        assert fg.returncode == 1 and "died" in said and "mcemu up" in said, (fg.returncode, said)
        assert all(psutil.pid_exists(p) for p in agents), "the nodes were stopped with the daemon"
    finally:
        if fg.poll() is None:
            fg.kill()
            fg.wait(5)
    cluster._client = None
    r = cluster.mcemu("up", timeout=30)
    cluster.record()
    assert r.returncode == 0 and "recovered the journal" in r.stdout, (r.stdout, r.stderr)
    job = cluster.client.queue(jobs=[jid])["jobs"][0]
    assert (job["state"], job["attempt"]) == ("running", 1), job  # its task went on all along
