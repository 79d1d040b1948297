"""The interconnect across hosts (issue 30) with real processes over 127.0.0.1: a cluster that
listens on tcp (``--listen``, CURVE) runs some of its nodes itself and gets the others from a
second home (``mcemu node --connect tcp://... --key``, as another host would); a job spanning
both exchanges its messages through the interconnect's tcp port, in dilated and in virtual
time; a client key is refused at that port's handshake, a node's and the admin's are let in."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import zmq
from zmq.utils.monitor import parse_monitor_message

from conftest import ALLOCATOR, ROOT, SCHEDULER, final_comm, free_port, node_states, wait_for
from emulator.live import auth
from emulator.live import home as homemod
from emulator.live import nettcp
from emulator.live import protocol as P
from nodes.comm import Comm, CommError

pytestmark = pytest.mark.live

RING = f"{sys.executable} {ROOT / 'tests' / 'net_ring_prog.py'}"
LOCAL, REMOTE = (0, 1), (2, 3)  # a 2-cube: nodes 0-1 on the cluster's host, 2-3 on the "other" one


def two_homes(cluster, tmp_path, *up) -> tuple[str, Path, list]:
    """The cluster (keys, ``--listen``, nodes 0-1) and a second home running nodes 2-3 with a
    copy of the node credential; returns (the daemon's tcp endpoint, the second home, the
    joined nodes' processes)."""
    port = free_port(3)  # the daemon's, its events' (+1) and the interconnect's (+2)
    cluster.mcemu("keys", "init", "--admin", "boss")
    cluster.mcemu("keys", "issue", "alice", "--role", "client")
    tcp = f"tcp://127.0.0.1:{port}"
    cluster.up("--topology", "hypercube:2", "--allocator", ALLOCATOR, "--scheduler", SCHEDULER, "--network",
               "wormhole", "--listen", tcp, "--local-nodes", str(len(LOCAL)), *up)
    other = tmp_path / "other-host"
    other.mkdir(mode=0o700)
    key = other / "node.toml"
    shutil.copy(cluster.home / "keys" / "issued" / "nodes.toml", key)
    env = {k: v for k, v in cluster.env.items() if k not in ("MCEMU_NET", "MCEMU_NET_KEY", "MCEMU_KEY")}
    env["MCEMU_HOME"] = str(other)
    joined = []
    for n in REMOTE:
        p = subprocess.Popen([sys.executable, "-m", "emulator", "node", "--connect", tcp, "--id", str(n), "--key",
                              str(key), "--output-dir", str(other)], env=env,
                             stdout=subprocess.DEVNULL, stderr=open(other / f"node{n}.log", "wb"),
                             start_new_session=True)
        cluster.record(p)
        joined.append(p)
    wait_for(lambda: all(node_states(cluster)[n]["state"] == "idle" for n in REMOTE), 20,
             "the other host's nodes to register")
    return tcp, other, joined


def ended(cluster, jid: int, timeout: float) -> dict:
    def done():
        j = cluster.client.queue(jobs=[jid])["jobs"][0]
        return j if j["state"] not in ("queued", "running", "held") else None
    return wait_for(done, timeout, f"job {jid} to end", interval=0.1)


def stop(cluster, joined) -> None:
    cluster.down()
    for p in joined:  # told to stop by the daemon's shutdown, as a node of this host is
        wait_for(lambda: p.poll() is not None, 10, f"the joined node {p.pid} to stop with the cluster")


def handshake(endpoint: str, key: Path) -> int:
    """The CURVE handshake's outcome with this credential: the monitor's event."""
    ctx = zmq.Context()
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    auth.curve_client(s, key)
    mon = s.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_HANDSHAKE_FAILED_AUTH)
    try:
        s.connect(endpoint)
        assert mon.poll(10_000), f"no handshake with {endpoint} in 10 s"
        return parse_monitor_message(mon.recv_multipart())["event"]
    finally:
        s.disable_monitor()
        mon.close(linger=0)
        s.close()
        ctx.term()


def test_a_job_spanning_two_hosts_exchanges_messages_and_only_node_and_admin_keys_reach_the_network(
        cluster, tmp_path, monkeypatch):
    tcp, other, joined = two_homes(cluster, tmp_path)
    net = homemod.net_for(tcp)
    k = 20
    jid = cluster.client.submit({"cube": 2}, 60, name="ring", command=f"{RING} ring {k}")
    j = ended(cluster, jid, 90)
    assert j["state"] == "completed", (j, cluster.logs())
    assert sorted(j["nodes"]) == [*LOCAL, *REMOTE]
    for rank, node in enumerate(j["nodes"]):
        where = other if node in REMOTE else cluster.home / "output"
        out = (where / f"job{jid}.{rank}.out").read_text()
        assert f"{k} messages from {(rank - 1) % 4} in order and intact" in out, (rank, node, out)
    # every message through the model, local and remote alike: 4 ranks x k, each timed (> 0)
    comm = wait_for(lambda: (lambda c: c if c and c["count"] == 4 * k else None)(
        cluster.client.queue(jobs=[jid])["jobs"][0]["comm"]), 10, "the job's last report")
    assert comm["mean_delay_us"] >= comm["baseline_us"] > 0, comm

    issued = cluster.home / "keys" / "issued"
    assert handshake(net, issued / "alice.toml") == zmq.EVENT_HANDSHAKE_FAILED_AUTH
    assert handshake(net, issued / "nodes.toml") == zmq.EVENT_HANDSHAKE_SUCCEEDED
    assert handshake(net, issued / "boss.toml") == zmq.EVENT_HANDSHAKE_SUCCEEDED
    # a task handed a client's key says so at once, in one error
    for name, value in dict(MCEMU_NET=net, MCEMU_NET_KEY=str(issued / "alice.toml"), MCEMU_JOB_ID="999",
                            MCEMU_ATTEMPT="1", MCEMU_RANK="0", MCEMU_NODES="2").items():
        monkeypatch.setenv(name, value)
    t = time.monotonic()
    with pytest.raises(CommError) as e:
        Comm(timeout=20)
    assert e.value.code == "refused" and "alice.toml" in str(e.value) and time.monotonic() - t < 10
    # a node's key is let in and the interconnect's checks answer it as they answer a local task;
    # once revoked, its open connection is refused too
    cluster.mcemu("keys", "issue", "rack", "--role", "node")
    ctx = zmq.Context()
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    auth.curve_client(s, issued / "rack.toml")
    s.connect(net)

    def answer(i: int) -> dict:
        s.send(P.encode("net_send", id=i, to=0, data=b"x"))
        assert s.poll(10_000), "no answer from the interconnect to a node key"
        return P.decode(s.recv())
    try:
        assert answer(1)["code"] == "no-hello"
        cluster.mcemu("keys", "revoke", "rack")
        wait_for(lambda: answer(2)["code"] == "revoked", 10, "the revoked key's connection to be refused")
    finally:
        s.close()
        ctx.term()
    stop(cluster, joined)


def test_a_remote_rank_in_virtual_time_moves_by_its_frames(cluster, tmp_path):
    """A rank on the other host shares no memory with the interconnect (no published clock, a pid
    of another host): its clock is its frames'. An unmodified mpi4py program across both hosts
    gives its result, and a pattern job's messages are all counted."""
    _tcp, other, joined = two_homes(cluster, tmp_path, "--net-time", "virtual")
    jid = cluster.client.submit({"cube": 2}, 600, name="ring",
                                command=f"{sys.executable} {ROOT / 'docs' / 'examples' / 'ring.py'} 3")
    j = ended(cluster, jid, 120)
    rank0 = j["nodes"][0]
    out = ((other if rank0 in REMOTE else cluster.home / "output") / f"job{jid}.0.out").read_text()
    assert j["state"] == "completed" and "ring ok" in out, (j, out, cluster.logs())
    assert final_comm(cluster, jid)["messages"] > 0
    r = cluster.mcemu_json("submit", "--cube", "2", "--pattern", "ring", "--iterations", "5")
    j = ended(cluster, r["job"], 120)
    assert j["state"] == "completed", j
    wait_for(lambda: (cluster.client.queue(jobs=[r["job"]])["jobs"][0]["comm"] or {}).get("count") == 4 * 5, 10,
             "the pattern job's last report")
    stop(cluster, joined)


def test_an_interconnect_that_cannot_take_its_tcp_port_says_so_at_up(cluster):
    port = free_port(3)
    cluster.mcemu("keys", "init")
    with __import__("socket").socket() as taken:
        taken.bind(("127.0.0.1", port + 2))
        taken.listen()
        r = cluster.mcemu("up", "--detach", "--topology", "hypercube:1", "--network", "wormhole", "--listen",
                          f"tcp://127.0.0.1:{port}", "--no-restart", check=False)
    assert r.returncode != 0 and f"cannot listen on tcp://127.0.0.1:{port + 2}" in r.stderr, r.stderr
    assert not os.path.exists(cluster.home / "daemon.pid")


class Behind:
    """A host's monotonic clock 1,000 s behind this one's (emulator.live.kernel's clock shape)."""

    fake = False

    def now(self) -> float:
        return time.monotonic() - 1000.0


@pytest.mark.skipif(not nettcp.WELCOME_NOW, reason="the protocol's net_welcome has no 'now' field yet")
def test_due_times_are_moved_onto_a_remote_hosts_clock(monkeypatch):
    """Another host's monotonic clock is not the interconnect's: a task whose clock is 1,000 s
    behind still gets a message 50 ms after its welcome, not 1,000 s later (a stub network on a
    plain tcp port, as an --insecure cluster's)."""
    import threading

    ctx = zmq.Context()
    r = ctx.socket(zmq.ROUTER)
    r.setsockopt(zmq.LINGER, 0)
    port = r.bind_to_random_port("tcp://127.0.0.1")

    def stub():
        ident, hello = r.recv_multipart()
        m = P.decode(hello)
        assert "pid" not in m and "clock" not in m  # another host's
        now = time.monotonic()
        r.send_multipart([ident, P.encode("net_welcome", job=1, rank=0, size=2, dilation=1000.0,
                                          flit_time_us=0.05, length_flits=500, now=now)])
        r.send_multipart([ident, P.encode("net_msg", source=1, data=b"hi", due=now + 0.05)])

    t = threading.Thread(target=stub, daemon=True)
    t.start()
    for name, value in dict(MCEMU_NET_KEY="", MCEMU_JOB_ID="1", MCEMU_ATTEMPT="1", MCEMU_RANK="0",
                            MCEMU_NODES="0,1").items():
        monkeypatch.setenv(name, value)
    try:
        with Comm(f"tcp://127.0.0.1:{port}", timeout=10, pid=os.getpid(), clock=Behind()) as c:
            t0 = time.monotonic()
            assert c.recv(timeout=5) == (1, b"hi")
            assert time.monotonic() - t0 < 1.0
    finally:
        t.join(5)
        r.close()
        ctx.term()
