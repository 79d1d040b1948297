"""Recovery counts each node fault once (issue 30, item 5): a node restarted under a job (a new
incarnation, requeued once) and then a daemon recovery from the journal: the node registers
again as the same process, which the recovered daemon must not take for another restart.
Driven in memory on a fake clock (no sockets, nothing sleeps), as tests/test_daemon_clock.py."""
from __future__ import annotations

from emulator.live import protocol as P
from emulator.live.daemon import Daemon
from emulator.live.kernel import FakeClock

T0 = 1000.0
CFG = {"topology": "hypercube:2", "allocator": "buddy", "scheduler": "fcfs", "time_unit": 1.0, "max_requeue": 1}


def start(home) -> Daemon:
    d = Daemon(home, dict(CFG), grace=0.5, clock=FakeClock(T0))
    d.attach()
    return d


def register(d: Daemon, n: int, pid: int) -> None:
    d.handle([b"n%d" % n, P.encode("register", node=n, pid=pid, host="elsewhere")])
    d.kernel.run_once(0)


def running_job(d: Daemon, cube: int):
    """Every node registered (pids 100..103) and one job of a ``cube``-cube running."""
    for n in range(4):
        register(d, n, 100 + n)
    d.from_clients.on_submit(b"client", {"id": 1, "request": {"cube": cube}, "runtime": 50.0})
    d.kernel.run_once(0)
    (jr,) = d.jobs.values()
    return jr


def crash(d: Daemon) -> None:
    """The daemon killed: what it committed stays, the journal is not closed by a clean stop."""
    d.kernel.run_once(0)
    d.journal.commit()
    d.journal.db.close()


def test_a_recovery_does_not_count_a_node_restart_a_second_time(tmp_path):
    d = start(tmp_path)
    jr = running_job(d, 2)
    register(d, 1, 999)  # node 1 restarted before anyone saw it down: one fault, requeued
    assert (jr.state, jr.attempt, jr.faults) == ("running", 2, 1), jr.reason
    crash(d)

    d2 = start(tmp_path)
    try:
        jr2 = d2.jobs[jr.id]
        assert (jr2.state, jr2.attempt, jr2.faults) == ("running", 2, 1)
        for n, pid in ((0, 100), (1, 999), (2, 102), (3, 103)):  # the same processes come back
            register(d2, n, pid)
        assert (jr2.state, jr2.attempt, jr2.faults) == ("running", 2, 1), jr2.reason
        rows = list(d2.journal.db.execute("SELECT node, data FROM events WHERE kind = 'incarnation'"))
        assert (1, '{"pid": 999, "host": "elsewhere"}') in rows
        # a real restart after the recovery is still one (the second fault fails the job)
        register(d2, 1, 1234)
        assert (jr2.state, jr2.faults) == ("failed", 2), jr2.reason
    finally:
        d2.journal.close()


def test_a_recovery_after_a_restart_seen_down_first_counts_it_once_too(tmp_path):
    d = start(tmp_path)
    jr = running_job(d, 2)
    d.from_nodes.node_down(d.nodes[1], "missed its heartbeats")
    d.kernel.run_once(0)
    assert jr.state == "queued" and jr.faults == 1
    register(d, 1, 999)
    assert (jr.state, jr.attempt) == ("running", 2)
    crash(d)
    d2 = start(tmp_path)
    try:
        for n, pid in ((0, 100), (1, 999), (2, 102), (3, 103)):
            register(d2, n, pid)
        jr2 = d2.jobs[jr.id]
        assert (jr2.state, jr2.attempt, jr2.faults) == ("running", 2, 1), jr2.reason
    finally:
        d2.journal.close()


def test_a_recovered_daemon_gives_a_live_node_of_this_host_the_hang_limit_not_the_grace(tmp_path):
    """A busy host can take longer than the recovery's grace to bring a live node's hello back:
    a node whose process still lives here waits up to ``hang`` (as a watched node would), one
    whose process is gone, or that is elsewhere, only the grace."""
    import os
    import subprocess
    import sys

    from emulator.live.nodes import HOST

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(timeout=30)
    d = start(tmp_path)
    d.handle([b"n0", P.encode("register", node=0, pid=os.getpid(), host=HOST)])
    d.handle([b"n1", P.encode("register", node=1, pid=gone.pid, host=HOST)])
    for n in (2, 3):
        register(d, n, 100 + n)
    crash(d)

    d2 = start(tmp_path)
    try:
        assert d2.down == set()
        d2.kernel.run(until=T0 + 0.5 + 2 * d2.hb * d2.liveness)  # the grace and then some
        assert d2.down == {1, 2, 3}
        hang = d2.registry.hang
        d2.kernel.run(until=T0 + hang - 1.0)
        assert d2.down == {1, 2, 3}  # still waiting for the live one
        d2.kernel.run(until=T0 + hang + 2 * d2.hb * d2.liveness)
        assert d2.down == {0, 1, 2, 3}  # it never came back: down at the hang limit
    finally:
        d2.journal.close()


def test_a_rank_whose_end_was_acknowledged_is_answered_again_after_a_recovery(tmp_path):
    """The journal keeps a job's end, not each rank's: a daemon that acknowledged one rank's end
    and was killed before the job's last rank ended recovers with that rank still running and
    sends its run again. The node must answer with the end it reported (nodes.tasks: acked), not
    ignore a run it has seen (the job waited for ever: a soak lost one job this way)."""
    from types import SimpleNamespace

    from nodes.tasks import TaskTable

    d = start(tmp_path)
    jr = running_job(d, 1)
    first, second = jr.nodes
    sent = []
    agent = SimpleNamespace(node=first, _send=lambda type_, **f: sent.append((type_, f)))
    table = TaskTable(agent)
    rec = {"job": jr.id, "attempt": 1, "rank": 0, "status": 0, "usage": {"wall": 1.0}}
    table._remember((jr.id, 1))  # it ran here and ended
    table.unacked[(jr.id, 1)] = rec
    d.handle([b"n%d" % first, P.encode("task_done", node=first, **rec)])
    d.kernel.run_once(0)
    acks = [P.decode(f, max_size=P.MAX_REPLY) for i, f in d.wire if i == b"n%d" % first]
    assert any(m["type"] == "ack" and m["job"] == jr.id for m in acks)
    table.ack((jr.id, 1))
    crash(d)

    d2 = start(tmp_path)
    try:
        jr2 = d2.jobs[jr.id]
        assert jr2.state == "running" and jr2.done == {}  # rank 0's end was not journaled
        d2.wire.clear()
        register(d2, first, 100 + first)  # the same process, nothing alive, nothing unacknowledged
        runs = [P.decode(f, max_size=P.MAX_REPLY) for i, f in d2.wire if i == b"n%d" % first]
        run = next(m for m in runs if m["type"] == "run")  # the daemon runs rank 0 again
        table.on_run(run)
        assert sent == [("task_done", {"node": first, **rec})]  # answered, not run twice, not ignored
        d2.handle([b"n%d" % first, P.encode(sent[0][0], **sent[0][1])])
        register(d2, second, 100 + second)
        d2.handle([b"n%d" % second, P.encode("task_done", node=second, job=jr.id, attempt=1, rank=1, status=0,
                                             usage={"wall": 1.0})])
        d2.kernel.run_once(0)
        assert jr2.state == "completed", jr2.reason
    finally:
        d2.journal.close()


def test_a_node_holding_a_failed_tasks_tail_registers_again_after_a_recovery(tmp_path):
    """A task that failed while the daemon was down is reported at the node's registration with
    the tail of its output (``error``, as task_done has it). The register message must be
    accepted: it was refused as malformed, so every node holding such an end never registered
    again (a soak saw all 16 nodes declared down 30 s after a recovery)."""
    d = start(tmp_path)
    jr = running_job(d, 1)
    first = jr.nodes[0]
    crash(d)

    d2 = start(tmp_path)
    try:
        d2.wire.clear()
        ended = {"job": jr.id, "attempt": 1, "rank": 0, "status": 1, "usage": {"wall": 1.0},
                 "error": "net-gone: the interconnect went away"}
        d2.handle([b"n%d" % first, P.encode("register", node=first, pid=100 + first, host="elsewhere",
                                             finished=[ended])])
        d2.kernel.run_once(0)
        out = [P.decode(f, max_size=P.MAX_REPLY)["type"] for i, f in d2.wire if i == b"n%d" % first]
        assert "welcome" in out and "error" not in out, out
        jr2 = d2.jobs[jr.id]
        assert 0 in jr2.done and "net-gone" in jr2.reason, (jr2.done, jr2.reason)  # counted, with its tail
    finally:
        d2.journal.close()
