"""Contained tasks (issue 30, item 3): every process a task starts, a ``setsid`` background child
and a double-forked grandchild included, ends with the task, a ``cancel``, its node SIGKILLed and
``mcemu down``; a requeued attempt never runs beside its predecessor; a task run as another
account is contained the same way; a task that exits non-zero shows its exit and the tail of its
output in ``queue --json`` and the journal. Real processes; the pids come from the tasks' own
output (each process of a task appends ``ATTEMPT KIND PID`` to a file)."""
from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import sqlite3
import tempfile
from pathlib import Path
import psutil
import pytest

from conftest import ALLOCATOR, SCHEDULER, node_states, wait_for
from emulator.live import home as homemod
from nodes import contain

pytestmark = pytest.mark.live

# $1: the pid file; $2: how long the task's own process lives. Before anything else an attempt
# notes every process of an earlier attempt that is still alive (it would run beside it).
TASK = r"""
out="$1"
while read att kind pid; do
    if [ "$att" -lt "$MCEMU_ATTEMPT" ] && grep -qs '^State:[[:space:]]*[A-Y]' "/proc/$pid/status"; then
        echo "$MCEMU_ATTEMPT overlap $pid" >> "$out.overlap"
    fi
done < "$out" 2>/dev/null
echo "$MCEMU_ATTEMPT main $$" >> "$out"
setsid sh -c 'trap "" HUP TERM INT; echo "$MCEMU_ATTEMPT setsid $$" >> "$0"; exec sleep 300' "$out" &
sh -c 'sh -c '\''trap "" HUP TERM INT; echo "$MCEMU_ATTEMPT double $$" >> "$0"; exec sleep 300'\'' "$0" & exit 0' "$out"
sleep "$2"
"""


def script(tmp_path):
    p = tmp_path / "task.sh"
    p.write_text(TASK)
    return p


def pids_of(path) -> dict[int, str]:
    try:
        lines = path.read_text().split("\n")
    except FileNotFoundError:
        return {}
    return {int(w[2]): f"{w[0]} {w[1]}" for w in (x.split() for x in lines) if len(w) == 3}


def live(pids) -> list[int]:
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            pass
    return out


def started(path, n_tasks: int, attempt: int = 1):
    """Every task of the attempt has written its three pids."""
    return sum(1 for k in pids_of(path).values() if k.startswith(f"{attempt} ")) >= 3 * n_tasks


def job(c, jid):
    return c.queue(jobs=[jid])["jobs"][0]


def up(cluster, contain_by=None):
    if contain_by:  # the agents' way (nodes.contain), through the environment `mcemu up` passes on
        cluster.env["MCEMU_CONTAIN"] = contain_by
    cluster.up("--topology", "hypercube:2", "--allocator", ALLOCATOR, "--scheduler", SCHEDULER, "--time-unit", "0.05")


@pytest.mark.parametrize("contain_by", ["auto", "session"])
def test_what_a_task_starts_ends_with_the_task_a_cancel_and_mcemu_down(cluster, tmp_path, contain_by):
    up(cluster, contain_by)
    c, sh = cluster.client, script(tmp_path)
    ends, cancels, downs = (tmp_path / x for x in ("ends", "cancel", "down"))
    j1 = c.submit({"cube": 1}, runtime=100, command=f"sh {sh} {ends} 0.2")    # its task ends by itself
    j2 = c.submit({"cube": 0}, runtime=100, command=f"sh {sh} {cancels} 300")  # cancelled
    c.submit({"cube": 0}, runtime=100, command=f"sh {sh} {downs} 300")    # running at `mcemu down`
    wait_for(lambda: job(c, j1)["state"] == "completed", 20, "the job whose tasks end to complete")
    wait_for(lambda: started(cancels, 1) and started(downs, 1), 20, "the other tasks and their children")
    seen = {"ends": pids_of(ends), "cancel": pids_of(cancels), "down": pids_of(downs)}
    assert len(seen["ends"]) == 6 and len(seen["cancel"]) == 3, seen
    wait_for(lambda: not live(seen["ends"]), 5, "the ended tasks' children to die")
    assert live(seen["cancel"]) and live(seen["down"])  # those still run
    c.cancel(j2)
    wait_for(lambda: not live(seen["cancel"]), 5, "the cancelled task's children to die")
    assert len(live(seen["down"])) == 3
    cluster.down()
    left = live([p for s in seen.values() for p in s])
    print(f"contain={contain_by} ({contain.mode()} here): {sum(map(len, seen.values()))} task processes seen, "
          f"{len(left)} alive after end/cancel/down")
    assert not left, {p: k for s in seen.values() for p, k in s.items() if p in left}


def test_a_sigkilled_node_leaves_nothing_and_the_requeued_attempt_never_overlaps(cluster, tmp_path):
    up(cluster)
    c, sh = cluster.client, script(tmp_path)
    pids = tmp_path / "pids"
    jid = c.submit({"cube": 1}, runtime=100, command=f"sh {sh} {pids} 300")
    j = wait_for(lambda: (j := job(c, jid))["state"] == "running" and j, 10, "the job running")
    wait_for(lambda: started(pids, 2), 10, "both tasks and their children")
    first = pids_of(pids)
    victim = j["nodes"][1]
    cluster.record()
    os.kill(node_states(cluster)[victim]["pid"], signal.SIGKILL)
    # the requeued attempt (on the other two nodes: the victim stays dead) starts at once
    wait_for(lambda: started(pids, 2, attempt=2), 20, "the requeued attempt's tasks")
    j = job(c, jid)
    assert j["attempt"] == 2 and victim not in j["nodes"], j
    overlap = (tmp_path / "pids.overlap")
    assert not overlap.exists(), overlap.read_text()  # no process of attempt 1 was alive then
    left = live(first)
    print(f"contain={contain.mode()}: attempt 1 had {len(first)} processes, {len(left)} alive when attempt 2 "
          f"started")
    assert not left
    c.cancel(jid)
    cluster.down()
    assert not live(pids_of(pids))


def test_a_task_run_as_another_account_is_contained_too(tmp_path):
    """The spawn path of a client's task (setpriv drops to the account) under the same cgroup."""
    from nodes.contain import TaskBox
    from nodes.spawn import SETPRIV, Spawner

    if os.geteuid() != 0 or SETPRIV is None:
        pytest.skip("needs root and setpriv")
    try:
        pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no account 'nobody'")

    class A:  # the parts of an agent the spawner reads
        node, output_dir, reset_policy, warm = 0, None, False, None

    a = A()
    a.box = TaskBox()
    d = Path(tempfile.mkdtemp(prefix="mcemu-contain-"))  # one the account can reach (not under 0700)
    os.chmod(d, 0o777)
    pids = d / "pids"
    pids.touch()
    os.chmod(pids, 0o666)
    sh = script(d)
    os.chmod(sh, 0o644)
    m = {"job": 1, "attempt": 1, "rank": 0, "nodes": [0], "runtime_s": 100, "user": "nobody",
         "command": f"sh {sh} {pids} 300"}
    pid, _fd, cg = Spawner(a).spawn(m)
    try:
        wait_for(lambda: started(pids, 1), 10, "the task and its children")
        seen = pids_of(pids)
        assert {psutil.Process(p).username() for p in seen} == {"nobody"}
        a.box.end(cg, pid)
        wait_for(lambda: not live(seen), 5, "every process of the task to die")
    finally:
        a.box.close()
        os.waitpid(pid, 0)
        shutil.rmtree(d, ignore_errors=True)


def test_a_failed_task_shows_its_exit_and_output_tail(cluster):
    up(cluster)
    c = cluster.client
    cmd = r"for i in 1 2 3 4 5 6 7; do echo line $i; done; printf 'boom \033[31mred\tx\n' >&2; exit 3"
    jid = c.submit({"cube": 1}, runtime=100, command=cmd)
    j = wait_for(lambda: (j := job(c, jid))["state"] in ("completed", "failed") and j, 20, "the job to end")
    q = [x for x in cluster.mcemu_json("queue", "--all")["jobs"] if x["id"] == jid][0]
    f = q["failure"]
    # both ranks fail; the job shows the first that reported
    assert j["state"] == "failed" and f["status"] == 3 and f["node"] == q["nodes"][f["rank"]], q
    assert f["tail"] == "line 4\nline 5\nline 6\nline 7\nboom \\x1b[31mred\\tx", f
    assert q["reason"] == "rank %d on node %d exited 3: line 4 | line 5 | line 6 | line 7 | boom \\x1b[31mred\\tx" \
        % (f["rank"], f["node"]), q["reason"]
    assert "\x1b" not in cluster.mcemu("queue", "--all").stdout
    db = sqlite3.connect(homemod.journal_path(cluster.home))
    row = db.execute("SELECT failure, reason FROM jobs WHERE id = ?", (jid,)).fetchone()
    assert json.loads(row[0]) == f and row[1] == q["reason"]
    db.close()
