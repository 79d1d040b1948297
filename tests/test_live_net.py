"""The live cluster's interconnect (issue 16): real processes, real messages.

* a user's program sends its rank around a ring of 16 tasks: every message arrives, in order
  per sender, payload intact; the job's statistics reach ``mcemu queue`` and the journal;
* hostile and malformed frames on net.sock get an error reply and change nothing;
* the interconnect's lifecycle: started by ``mcemu up --network wormhole``, left alone by a
  daemon recovery, stopped by pid with the rest (the fixture fails on any survivor);
* agreement: the chapter-6 layout (transpose inside, diagonal split around it) live against
  ``mcemu net simulate`` for the same placement, MTBS and message count.
"""
from __future__ import annotations

import json
import os
import signal
import struct
import sys
from pathlib import Path

import msgpack
import psutil
import pytest

from emulator.live import netlocal
from emulator.live import protocol as P
from emulator.live.secret import cluster_key, task_secret
from conftest import wait_for

RING = f"{sys.executable} {Path(__file__).with_name('net_ring_prog.py')}"
UP_4x4 = ("--topology", "mesh:4x4", "--allocator", "first-fit", "--scheduler", "fcfs", "--network", "wormhole")

pytestmark = pytest.mark.live


def job(cluster, jid: int) -> dict:
    return cluster.client.queue(jobs=[jid])["jobs"][0]


def finished(cluster, jid: int, timeout: float) -> dict:
    return wait_for(lambda: (lambda j: j if j["state"] not in ("queued", "running") else None)(job(cluster, jid)),
                    timeout, f"job {jid} to finish")


def test_ring_of_16_in_order_and_intact(cluster):
    st = cluster.up(*UP_4x4)
    assert st["config"]["network"] == "wormhole" and st["config"]["net_dilation"] == 1000.0
    k = 12
    jid = cluster.client.submit({"shape": [4, 4]}, 30, name="ring", command=f"{RING} ring {k}")
    j = finished(cluster, jid, 60)
    assert j["state"] == "completed", (j, cluster.logs())
    assert j["exit"] == [0] * 16
    for rank in range(16):
        out = (cluster.home / "output" / f"job{jid}.{rank}.out").read_text()
        assert f"{k} messages from {(rank - 1) % 16} in order and intact" in out
    # the interconnect's report: every message, delays of at least the contention-free time
    j = wait_for(lambda: (lambda j: j if (j["comm"] or {}).get("count") == 16 * k else None)(job(cluster, jid)),
                 10, "the comm report")
    c = j["comm"]
    assert c["messages"] == 16 * k and c["mean_delay_us"] >= c["baseline_us"] > 0
    assert c["p95_delay_us"] >= c["mean_delay_us"] and c["slowdown"] >= 1.0
    links = cluster.mcemu_json("net", "links")
    assert links["topology"] == "mesh:4x4" and links["messages"] >= 16 * k
    assert links["channels"] and all(0.0 <= ch["utilization"] <= 1.0 for ch in links["channels"])
    cluster.down()
    from emulator.live.journal import Journal

    row = next(r for r in Journal(cluster.home / "journal.db").jobs() if r["id"] == jid)
    assert row["comm"]["count"] == 16 * k  # the journal's comm column


def _peer(home: Path) -> netlocal.Link:
    """A connection to the interconnect's local socket, as a task's (emulator.live.netlocal)."""
    return netlocal.Link(str(home / "net.sock"))


def _ask(sock, frame: bytes, timeout: float = 5.0) -> dict:
    sock.send(frame)
    got = sock.recv(timeout)
    assert got is not None, "no reply from the interconnect"
    return msgpack.unpackb(got)


def test_hostile_network_messages_change_nothing(cluster):
    cluster.up(*UP_4x4)
    net_pid = cluster_pid(cluster, "interconnect")
    # a job whose rank 1 never connects (the test plays it); the others wait for one message
    jid = cluster.client.submit({"shape": [4, 4]}, 60, command=f"{RING} hold --skip 1")
    j = wait_for(lambda: (lambda j: j if j["state"] == "running" else None)(job(cluster, jid)), 20, "the job")
    att = j["attempt"]
    s = _peer(cluster.home)
    try:
        assert _ask(s, b"\xc1garbage")["code"] == "not-msgpack"
        assert _ask(s, P.encode("submit", id=1, request={"nodes": 1}, runtime=1.0))["code"] == "unknown-type"
        assert _ask(s, P.encode("net_send", id=2, to=0, data=b"x"))["code"] == "no-hello"
        assert _ask(s, msgpack.packb({"v": 1, "type": "net_hello", "job": jid, "attempt": att,
                                      "rank": 1}))["code"] == "missing-field"  # no node list
        # the job is known from its own tasks' hellos (ordered membership): once rank 0's is in,
        # a claim that contradicts them is refused
        out0 = cluster.home / "output" / f"job{jid}.0.out"
        wait_for(lambda: out0.exists() and "ready" in out0.read_text(), 30, "rank 0's task to connect")
        nodes = j["nodes"]

        key = cluster_key(cluster.home)  # the test plays rank 1 as its task would: with its secret

        def hello(rank, claimed=nodes):
            return _ask(s, P.encode("net_hello", job=jid, attempt=att, rank=rank, nodes=claimed,
                                    secret=task_secret(key, jid, att, rank)))
        assert hello(1, [*nodes[:-1], 16])["code"] == "bad-nodes"  # a node the 4x4 machine has not
        assert hello(1, nodes[::-1])["code"] == "bad-nodes"  # not the list its ranks gave
        assert hello(16)["code"] == "bad-rank"
        assert hello(0)["code"] == "rank-claimed"
        welcome = hello(1)
        assert welcome["type"] == "net_welcome" and welcome["size"] == 16
        assert hello(2)["code"] == "already-bound"
        assert _ask(s, P.encode("net_send", id=3, to=16, data=b"x"))["code"] == "bad-rank"
        big = msgpack.packb({"v": 1, "type": "net_send", "id": 4, "to": 0, "data": b"x" * (P.MAX_PAYLOAD + 1)})
        r = _ask(s, big)
        assert r["code"] in ("bad-field", "too-large") and r["id"] == 4
        _longer_than_the_wire_allows(cluster.home)
        # nothing changed: a good message still goes through, and rank 0's task gets it
        d = _ask(s, P.encode("net_send", id=5, to=0, data=b"still here"), timeout=10)
        assert d["type"] == "net_delivered" and d["id"] == 5 and d["delay_us"] >= 25.0
        wait_for(lambda: "still here" in out0.read_text(), 10, "rank 0 to get the message")
        assert cluster_pid(cluster, "interconnect") == net_pid
    finally:
        s.close()
    cluster.client.cancel(jid)


def _longer_than_the_wire_allows(home: Path) -> None:
    """A frame whose length is above protocol.MAX_WIRE, and one cut off by the end of its
    connection: each costs only its own connection (as libzmq's MAXMSGSIZE did)."""
    with _peer(home) as s:
        s.sock.sendall(struct.pack(">I", P.MAX_WIRE + 1) + b"x" * 100)
        s.sock.settimeout(10)
        assert s.sock.recv(100) == b""  # closed by the interconnect, no reply
    with _peer(home) as s:
        s.sock.sendall(struct.pack(">I", 1000) + b"half a frame")


def cluster_pid(cluster, what: str) -> int | None:
    from emulator.cli.lifecycle import cluster_processes

    p = cluster_processes(cluster.home)[what]
    return p.pid if p else None


def test_interconnect_lifecycle_and_recovery(cluster):
    r = cluster.mcemu("up", "--detach", "--network", "bogus", check=False)
    assert r.returncode == 2 and "invalid choice" in r.stderr
    r = cluster.mcemu("up", "--detach", "--network", "wormhole", "--net-dilation", "0", check=False)
    assert r.returncode == 2 and "--net-dilation" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (cluster.home / "daemon.pid").exists()
    cluster.up(*UP_4x4, "--net-dilation", "2000")
    net_pid = cluster_pid(cluster, "interconnect")
    assert net_pid and (cluster.home / "net.sock").stat().st_mode & 0o777 == 0o600
    # the ready-made pattern task, as a user submits it; its run time comes from its messages
    jid = cluster.mcemu_json("submit", "--shape", "4x4", "--pattern", "transpose", "--mtbs", 25,
                             "--iterations", 10)["job"]
    assert finished(cluster, jid, 60)["state"] == "completed"

    def comm():
        j = next(j for j in cluster.mcemu_json("queue", "--all")["jobs"] if j["id"] == jid)
        return j["comm"] if (j["comm"] or {}).get("count") == 12 * 10 else None
    stats = wait_for(comm, 10, "the comm report")
    assert stats["messages"] >= 12 * 11 and stats["slowdown"] >= 1.0  # with its warm-up
    # a daemon recovery leaves the live interconnect alone, and the statistics stay
    os.kill(cluster.daemon_pid(), signal.SIGKILL)
    wait_for(lambda: cluster.daemon_pid() is None, 10, "the daemon to die")
    st = cluster.up()
    assert "recovered" in st and st["config"]["net_dilation"] == 2000.0
    assert cluster_pid(cluster, "interconnect") == net_pid
    assert comm() == stats
    # a recovery without an interconnect starts one, which carries messages
    os.kill(cluster.daemon_pid(), signal.SIGKILL)
    psutil.Process(net_pid).kill()
    wait_for(lambda: cluster.daemon_pid() is None and cluster_pid(cluster, "interconnect") is None, 10, "both dead")
    cluster.up()
    new = cluster_pid(cluster, "interconnect")
    assert new and new != net_pid
    jid = cluster.client.submit({"shape": [4, 4]}, 30, command=f"{RING} ring 2")
    assert finished(cluster, jid, 60)["state"] == "completed"
    res = cluster.down()
    assert new in res["stopped"] and not (cluster.home / "interconnect.pid").exists()


def test_pattern_on_a_hypercube(cluster):
    cluster.up("--topology", "hypercube:4", "--allocator", "buddy", "--scheduler", "fcfs", "--network", "wormhole")
    jid = cluster.mcemu_json("submit", "--cube", "4", "--pattern", "transpose", "--iterations", "5")["job"]
    assert finished(cluster, jid, 60)["state"] == "completed"
    j = wait_for(lambda: (lambda j: j if (j["comm"] or {}).get("count") == 12 * 5 else None)(job(cluster, jid)),
                 10, "the comm report")
    assert j["comm"]["mean_delay_us"] >= j["comm"]["baseline_us"] > 25.0


def test_pattern_submit_needs_a_network(cluster):
    cluster.up("--topology", "mesh:4x4", "--allocator", "first-fit", "--scheduler", "fcfs")
    r = cluster.mcemu("submit", "--shape", "4x4", "--pattern", "transpose", check=False)
    assert r.returncode == 2 and "--network wormhole" in r.stderr
    r = cluster.mcemu("submit", "--shape", "4x2", "--pattern", "transpose", check=False)
    assert r.returncode == 2 and "square" in r.stderr
    assert cluster_pid(cluster, "interconnect") is None


@pytest.mark.parametrize("mtbs", [25.0])
def test_agreement_with_net_simulate_chapter6(cluster, tmp_path, mtbs):
    from tests.fixtures import ch6

    for name, live, sim in ch6.agreement(cluster, tmp_path, mtbs, 200, 20):
        assert abs(live / sim - 1) < 0.10, (name, live, sim)


def test_workload_streams_pattern_jobs_whose_run_time_comes_from_their_messages(cluster):
    cluster.up("--topology", "hypercube:3", "--allocator", "buddy", "--scheduler", "fcfs", "--network", "wormhole")
    # uniform cube sizes draw 1- and 3-cubes (2x1, 4x2): no transpose for them, nothing submitted
    r = cluster.mcemu("workload", "--jobs", "6", "--load", "0.5", "--pattern", "transpose", check=False)
    assert r.returncode == 2 and "transpose needs a square job" in r.stderr and r.stderr.count("\n") == 1
    assert cluster.client.queue(all=True)["jobs"] == []
    ids = cluster.mcemu_json("workload", "--jobs", "4", "--load", "0.5", "--pattern", "ring", "--iterations", "5",
                             "--warmup", "0")["jobs"]
    for jid in ids:
        assert finished(cluster, jid, 60)["state"] == "completed"
    def reported(jid):
        # the interconnect's last report of a job follows its end (the job's depart comes from its
        # tasks' exits, the totals from the interconnect): a first report at hello counts 0
        j = job(cluster, jid)
        n = len(j["nodes"])
        return j if n == 1 or (j["comm"] is not None and j["comm"]["count"] == n * 5) else None

    for jid in ids:  # a ring of n ranks: n paths of 5 messages
        wait_for(lambda: reported(jid), 10, f"job {jid}: a comm report counting every message")


def test_flow_control_keeps_a_flooding_task_from_growing_the_interconnect(cluster):
    """Issue 30: a task sending 240 x 64 KiB without waiting (15 MiB; a message lasts 25 ms at
    the default dilation, so the sender outruns the network 100-fold) is paced by its window
    (nodes.comm.WINDOW: 64 messages, 8 MiB): the interconnect holds 4 MiB of it at most (without
    the window it grew by the whole flood, 15 MiB); every message arrives, in order."""
    cluster.up(*UP_4x4)
    ic = psutil.Process(cluster_pid(cluster, "interconnect"))
    base = peak = ic.memory_info().rss
    jid = cluster.client.submit({"shape": [2, 1]}, 60, command=f"{RING} flood 240 65536")

    def ended():
        nonlocal peak
        peak = max(peak, ic.memory_info().rss)
        j = job(cluster, jid)
        return j if j["state"] not in ("queued", "running") else None
    j = wait_for(ended, 120, "the flood to end", interval=0.01)
    assert j["state"] == "completed", (j, cluster.logs())
    assert "240 messages of 65536 bytes in order" in (cluster.home / "output" / f"job{jid}.1.out").read_text()
    assert peak - base < 9 << 20, f"the interconnect grew by {(peak - base) / 2**20:.1f} MiB"
