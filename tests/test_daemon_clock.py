"""The daemon's timers and liveness on a fake clock (emulator.live.kernel.FakeClock): heartbeat
waves, the purge of a silent node elsewhere, a watched node of this host that is slow but alive
(never down for it) or whose process ends (down at once), the policy's timer ticked at its time.
No sockets are bound and nothing sleeps: minutes of the daemon's time run in milliseconds."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from emulator.live import protocol as P
from emulator.live.daemon import Daemon
from emulator.live.kernel import FakeClock
from emulator.live.nodes import HOST

T0 = 1000.0


def daemon(tmp_path, **cfg) -> tuple[Daemon, FakeClock]:
    clock = FakeClock(T0)
    cfg = {"topology": "hypercube:2", "allocator": "buddy", "time_unit": 1.0, **cfg}
    if "gang" not in cfg:
        cfg["scheduler"] = "fcfs"
    d = Daemon(tmp_path, cfg, grace=0.5, clock=clock)
    d.attach()
    return d, clock


def register(d: Daemon, n: int, host="elsewhere", pid=None) -> bytes:
    ident = b"n%d" % n
    d.handle([ident, P.encode("register", node=n, pid=pid if pid is not None else 100 + n, host=host)])
    d.kernel.run_once(0)
    return ident


def sent(d: Daemon, type_: str) -> list:
    out = [(i, P.decode(f, max_size=P.MAX_REPLY)) for i, f in d.wire if not isinstance(i, bytes) or i[:1] == b"n"]
    return [(i, m) for i, m in out if m["type"] == type_]


def heartbeating(d: Daemon, nodes) -> None:
    """Fake nodes that send a heartbeat every 0.1 s of the fake clock."""
    for n in nodes:
        ident, frame = b"n%d" % n, d.nodes[n].hb
        d.kernel.every(0.1, lambda ident=ident, frame=frame: d.handle([ident, frame]))


def test_waves_reach_every_node_each_interval_and_a_silent_one_is_purged(tmp_path):
    d, clock = daemon(tmp_path)
    try:
        t_start = time.monotonic()
        for n in range(4):
            register(d, n)
        assert not d.down
        heartbeating(d, [0, 1, 2])  # node 3 falls silent
        d.wire.clear()
        d.kernel.run(until=T0 + d.hb)  # one interval: each silent-to-us node was heartbeaten once
        assert sorted(i for i, _ in sent(d, "heartbeat")) == [b"n0", b"n1", b"n2", b"n3"]
        d.kernel.run(until=T0 + d.expiry - 0.01)
        assert 3 not in d.down
        d.kernel.run(until=T0 + d.expiry + d.hb + 0.01)  # the next purge after the expiry
        assert d.down == {3}
        assert d.nodes[3].ident is None and d.nodes[0].ident is not None
        d.kernel.run(until=T0 + 60)
        assert d.down == {3}  # heartbeating nodes stay up for as long as they speak
        assert time.monotonic() - t_start < 1.0  # a minute of the daemon's time
    finally:
        d.journal.close()


@pytest.mark.live  # two sleeping processes play the watched nodes
def test_watched_node_is_never_down_for_being_slow_and_down_at_once_when_it_dies(tmp_path):
    d, clock = daemon(tmp_path)
    procs = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) for _ in range(2)]
    try:
        for n, p in enumerate(procs):
            register(d, n, host=HOST, pid=p.pid)
        if d.nodes[0].pidfd is None:
            pytest.skip("no pidfd_open here: nodes are judged by heartbeats")
        assert d.nodes_view()[0]["watched"]
        # silent for ten expiries and more, alive: slow, not dead
        d.kernel.run(until=T0 + 20 * d.expiry)
        assert not d.down & {0, 1}
        procs[1].kill()
        procs[1].wait(10)
        t = clock.now()
        d.kernel.run_once(0)  # the pidfd is readable: no heartbeat interval needs to pass
        assert 1 in d.down and clock.now() == t
        assert d.nodes[1].pidfd is None
        # a live process silent past HANG is taken for hung
        d.kernel.run(until=T0 + d.registry.hang + d.hb * 2)
        assert d.registry.hang == 30.0  # mcemu up --hang's default
        assert 0 in d.down
    finally:
        for p in procs:
            p.kill()
            p.wait(10)
        d.journal.close()


def test_policy_timer_ticks_at_its_time(tmp_path):
    """A round-robin gang's slot timer: each slot switch happens at a multiple of the slot on
    the fake clock, not earlier, not a heartbeat interval late."""
    d, clock = daemon(tmp_path, gang="round-robin", params={"slot": 2.0})
    try:
        for n in range(4):
            register(d, n)
        heartbeating(d, range(4))
        for _ in range(2):
            d.from_clients.on_submit(b"client", {"id": 1, "request": {"cube": 2}, "runtime": 50.0})
        ticks = []
        orig = d._input

        def spy(kind, *a, **kw):
            t = orig(kind, *a, **kw)
            if kind == "tick":
                ticks.append(clock.now() - d.t0)
            return t

        d._input = spy
        d.kernel.run(until=d.t0 + 9.0)
        # the jobs came at model time 0; every slot of 2 units is ticked exactly at its end
        assert ticks == pytest.approx([0.0, 2.0, 4.0, 6.0, 8.0], abs=1e-9)
    finally:
        d.journal.close()



def test_a_node_restarted_under_a_job_keeps_the_job_placed_on_it_again(tmp_path):
    """A node that registers as a new incarnation faults its running job; the requeued job may be
    placed at once on the same nodes (here: the whole machine), and the node must then hold it
    (issue 30, item 4: the placement was erased and the job stayed running for ever)."""
    d, clock = daemon(tmp_path, max_requeue=3)
    try:
        for n in range(4):
            register(d, n)
        d.from_clients.on_submit(b"client", {"id": 1, "request": {"cube": 2}, "runtime": 50.0})
        d.kernel.run_once(0)
        (jr,) = d.jobs.values()
        assert jr.state == "running" and jr.attempt == 1
        register(d, 1, pid=999)  # node 1's process was restarted: a new incarnation
        assert jr.state == "running" and jr.attempt == 2, (jr.state, jr.reason)
        assert all(jr.id in d.nodes[n].jobs for n in jr.nodes), [d.nodes[n].jobs for n in range(4)]
        assert d.node_state(1) == "busy"
    finally:
        d.journal.close()


def test_a_failed_task_fails_its_job_after_the_grace_and_a_restarted_daemon_at_once(tmp_path):
    """mpiexec's rule (manager._abort): the first task that exits non-zero fails its job; the
    others get ABORT_GRACE to end by themselves, then are killed. A daemon that died between
    the failure and the abort ends the job when it comes back."""
    from emulator.live.manager import ABORT_GRACE

    d, clock = daemon(tmp_path)
    try:
        for n in range(4):
            register(d, n)
        heartbeating(d, range(4))
        d.from_clients.on_submit(b"client", {"id": 1, "request": {"cube": 1}, "runtime": 50.0})
        d.kernel.run_once(0)
        (jr,) = d.jobs.values()
        node1 = jr.nodes[1]
        d.wire.clear()
        d.handle([b"n%d" % node1, P.encode("task_done", node=node1, job=jr.id, attempt=1, rank=1, status=137,
                                           usage={}, error="Killed")])
        d.kernel.run(until=clock.now() + ABORT_GRACE * 0.9)
        assert jr.state == "running" and not sent(d, "kill")  # rank 0 may still end by itself
        d.kernel.run(until=clock.now() + ABORT_GRACE * 0.2)
        assert jr.state == "failed" and jr.exit == [None, 137], jr.row()
        assert jr.reason == f"rank 1 on node {node1} exited 137: Killed; its other ranks were ended"
        assert sorted(i for i, _ in sent(d, "kill")) == sorted(b"n%d" % n for n in jr.nodes)
        # the next job's rank 0 failed (journaled), and the daemon died before the grace ended
        d.from_clients.on_submit(b"client", {"id": 2, "request": {"cube": 1}, "runtime": 50.0})
        d.kernel.run_once(0)
        jr2 = d.jobs[jr.id + 1]
        d.handle([b"n%d" % jr2.nodes[0], P.encode("task_done", node=jr2.nodes[0], job=jr2.id, attempt=1, rank=0,
                                                  status=3, usage={})])
        d.kernel.run_once(0)
        assert jr2.state == "running"
    finally:
        d.journal.close()
    d2 = Daemon(tmp_path, {}, grace=0.5, clock=FakeClock(T0 + 5))
    try:
        assert d2.jobs[jr2.id].state == "failed"
        assert d2.jobs[jr2.id].reason.startswith(f"rank 0 on node {jr2.nodes[0]} exited 3")
    finally:
        d2.journal.close()
