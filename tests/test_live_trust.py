"""Authenticated ranks and nodes (issue 30): a task's claim to its rank carries the secret only
that task was given (emulator.live.secret); a node key bound to ids registers only those and
no key takes over a live node of another; a revoked key's open connections are refused from
their next message, and its node is gone. In memory first, then with real processes (tcp and
CURVE as in tests/test_live_auth.py)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import msgpack
import pytest
import zmq

from conftest import ALLOCATOR, SCHEDULER, free_port, node_states, wait_for
from emulator.live import auth
from emulator.live import keys as keysmod
from emulator.live import protocol as P
from emulator.live import secret as secretmod
from emulator.live.auth import Principal
from emulator.live.client import Client, DaemonError
from emulator.live.netjobs import Membership
from test_live_net import _ask, _peer
from tests.fixtures.stub_daemon import Stub

RING = f"{sys.executable} {Path(__file__).with_name('net_ring_prog.py')}"
KEY = b"k" * 32


def _hello(ms, ident, rank, job=7, attempt=1, nodes=(0, 1, 2, 3), secret=None):
    m = {"job": job, "attempt": attempt, "rank": rank, "nodes": list(nodes)}
    if secret is not None:
        m["secret"] = secret
    return ms.hello(ident, m)


# ---------------------------------------------------------------------- in memory


def test_a_hello_without_its_tasks_secret_is_refused_and_changes_nothing():
    ms = Membership(16, key=KEY)
    right = {r: secretmod.task_secret(KEY, 7, 1, r) for r in range(4)}
    assert len(set(right.values())) == 4 and all(len(s) == 64 for s in right.values())
    assert _hello(ms, b"t0", 0, secret=right[0])[2] is None
    for claim in (None, "0" * 64, right[0], secretmod.task_secret(KEY, 7, 2, 1), secretmod.task_secret(KEY, 8, 1, 1),
                  secretmod.task_secret(b"another cluster's key", 7, 1, 1), right[1][:-1], "é" * 10):
        j, replaced, code, why = _hello(ms, b"thief", 1, secret=claim)
        assert (j, replaced, code) == (None, [], "bad-secret") and "rank 1" in why
    # the rank its task holds: refused for want of the secret, before anything is said of the claim
    assert _hello(ms, b"thief", 0)[2] == "bad-secret"
    assert _hello(ms, b"thief", 0, attempt=2, secret=right[0])[2] == "bad-secret"  # no newer attempt either
    assert set(ms.jobs) == {7} and ms.jobs[7].ranks == {0: b"t0"} and ms.jobs[7].attempt == 1
    assert b"thief" not in ms.by_ident
    assert _hello(ms, b"t1", 1, secret=right[1])[2] is None  # the task given it
    assert ms.jobs[7].ranks == {0: b"t0", 1: b"t1"}
    assert _hello(Membership(16), b"x", 0)[2] is None  # no key: claims taken unproven (in memory only)


def test_the_task_key_is_made_once_private_and_read_by_whoever_starts_second(tmp_path):
    key = secretmod.cluster_key(tmp_path)
    path = tmp_path / secretmod.KEY_FILE
    assert len(key) == secretmod.KEY_BYTES and path.stat().st_mode & 0o777 == 0o600
    secretmod._keys.clear()  # another process: reads the same key, makes none
    assert secretmod.cluster_key(tmp_path) == key and [p.name for p in tmp_path.iterdir()] == [secretmod.KEY_FILE]
    (tmp_path / "x").mkdir()
    for bad in ("abcd\n", "not hex at all, but long enough to be a key\n"):
        (tmp_path / "x" / secretmod.KEY_FILE).write_text(bad)
        with pytest.raises(ValueError, match="at least 16 random bytes"):
            secretmod.cluster_key(tmp_path / "x")


def test_each_run_message_carries_its_ranks_secret_and_only_that(tmp_path):
    s = Stub(tmp_path)
    s.register_all()
    key = secretmod.cluster_key(tmp_path)

    def runs(out):
        got = {m["rank"]: m for i, m in out if m["type"] == "run" and i == b"n%d" % m["node"]}
        for m in got.values():
            assert m["secret"] == secretmod.task_secret(key, m["job"], m["attempt"], m["rank"])
        return got
    first = runs(s.send(b"client", "submit", id=1, request={"cube": 2}, runtime=50))
    assert sorted(first) == [0, 1, 2, 3] and len({m["secret"] for m in first.values()}) == 4
    # sent again to a node that registers again without its task: the same claim
    again = runs(s.send(b"n2", "register", node=2, pid=102, host="h", tasks=[]))
    assert [m["secret"] for m in again.values()] == [first[2]["secret"]]
    # a new incarnation of node 2: the job's next attempt, new secrets
    second = runs(s.send(b"n2", "register", node=2, pid=202, host="h"))
    assert {m["attempt"] for m in second.values()} == {2}
    assert not {m["secret"] for m in second.values()} & {m["secret"] for m in first.values()}


def test_a_bound_node_key_registers_only_its_ids_and_no_key_takes_over_a_live_node(tmp_path):
    s = Stub(tmp_path)
    rack = Principal("rack", "node", "2-3", "R" * 40)
    s.d.peers.update({b"rack": rack, b"nodes": Principal("nodes", "node", None, "N" * 40),
                      b"rack-again": rack})
    out = s.send(b"rack", "register", node=1, pid=10, host="far")
    assert out[0][1]["code"] == "forbidden" and "bound to nodes 2-3" in out[0][1]["message"]
    assert s.d.nodes[1].ident is None and 1 in s.d.down and len(out) == 1
    assert s.send(b"rack", "register", node=3, pid=10, host="far")[0][1]["type"] == "welcome"
    # the shared, unbound node key cannot take node 3 while its connection lives
    out = s.send(b"nodes", "register", node=3, pid=11, host="near")
    assert out[0][1]["code"] == "forbidden" and "another principal" in out[0][1]["message"]
    assert s.d.nodes[3].pid == 10 and s.d.nodes[3].ident == b"rack"
    # the same principal's node restarted, on a new connection: its own id, taken back
    assert s.send(b"rack-again", "register", node=3, pid=12, host="far")[0][1]["type"] == "welcome"
    assert s.d.nodes[3].ident == b"rack-again"


def test_revocation_refuses_open_connections_and_a_revoked_node_is_gone(tmp_path):
    keysmod.init(tmp_path, "boss")
    issued = {n: keysmod.credential(keysmod.issue(tmp_path, n, role, nodes=b)) for n, role, b in
              (("alice", "client", None), ("bob", "client", None), ("rack", "node", "0-3"))}
    s = Stub(tmp_path)
    ctx = zmq.Context()
    z = auth.Zap(ctx, tmp_path)
    try:
        who = {n: Principal(n, c["role"], c.get("nodes"), c["public"]) for n, c in issued.items()}
        s.d.peers.update({b"alice": who["alice"], b"bob": who["bob"]})
        racks = [b"rack%d" % n for n in range(4)]  # one connection per node, all with the rack's key
        s.d.peers.update({r: who["rack"] for r in racks})
        assert z.revoked(s.d.peers) == []  # the first look: nothing revoked
        for n, r in enumerate(racks):
            assert s.send(r, "register", node=n, pid=100 + n, host="far")[0][1]["type"] == "welcome"
        jid = _call(s, b"alice", "submit", request={"cube": 1}, runtime=50)["data"]["job"]
        assert s.d.jobs[jid].state == "running"
        keysmod.revoke(tmp_path, "alice")
        keysmod.revoke(tmp_path, "rack")
        gone = z.revoked(s.d.peers)
        assert sorted(gone) == [b"alice", *racks] and z.revoked(s.d.peers) == []
        s.d.from_nodes.revoked(gone)  # as the daemon's look does (auth.Zap.watch)
        told = [(i, P.decode(f)["type"]) for i, f in s.d.outbox if i in racks]
        assert told == [(r, "shutdown") for r in racks]  # told to stop, then nothing: no run, no task secret
        assert all(s.d.nodes[n].ident is None and n in s.d.down for n in range(4))
        assert s.d.jobs[jid].state == "queued" and s.d.jobs[jid].faults == 1  # its job requeued
        s.send(b"bob", "ping", id=98)
        for n, r in enumerate(racks):
            out = s.send(r, "heartbeat", node=n)  # the very frame a registered node's fast path takes
            assert [m["code"] for _, m in out] == ["revoked"]
        assert s.send(racks[0], "register", node=0, pid=100, host="far")[0][1]["code"] == "revoked"
        assert 0 in s.d.down
        r = _call(s, b"alice", "submit", request={"cube": 0}, runtime=1)
        assert r["code"] == "revoked" and len(s.d.jobs) == 1
        assert _call(s, b"bob", "ping")["type"] == "ok"  # not revoked
        # a connection first heard after the revocation (ZAP let it in just before): refused too
        late = Principal("bob", "client", None, issued["bob"]["public"])
        keysmod.revoke(tmp_path, "bob")
        assert z.vet(late).role == "revoked" and z.vet(auth.LOCAL) is auth.LOCAL
    finally:
        z.close()
        ctx.term()


def _call(s, ident, type_, **f):
    return s.call(type_, ident, **f)


def test_the_zap_handler_hands_the_key_and_binding_to_the_daemon(tmp_path):
    keysmod.init(tmp_path, "boss")
    rack = keysmod.credential(keysmod.issue(tmp_path, "rack", "node", nodes="4-7,9"))
    ctx = zmq.Context()
    z = auth.Zap(ctx, tmp_path)
    try:
        ok = z._decide([b"1.0", b"1", b"mcemu", b"127.0.0.1", b"", b"CURVE", zmq.utils.z85.decode(rack["public"])])
        assert ok[2:5] == [b"200", b"OK", b"node:rack"]
        pub = rack["public"].encode()
        assert ok[5] == b"\x05X-Key" + len(pub).to_bytes(4, "big") + pub + b"\x07X-Nodes\x00\x00\x00\x054-7,9"
        assert [keysmod.binds("4-7,9", n) for n in (3, 4, 7, 8, 9)] == [False, True, True, False, True]
    finally:
        z.close()
        ctx.term()


# ---------------------------------------------------------------------- real processes

@pytest.mark.live
def test_a_process_without_the_tasks_secret_cannot_claim_its_rank(cluster):
    cluster.up("--topology", "mesh:2x2", "--allocator", "first-fit", "--scheduler", "fcfs", "--network", "wormhole")
    c = cluster.client
    # the secret is in the task's environment, cold or warm spawned alike
    probe = [c.submit({"nodes": 1}, 5, command="echo $MCEMU_TASK_SECRET") for _ in range(3)]
    for jid in probe:
        wait_for(lambda: c.queue(jobs=[jid])["jobs"][0]["state"] == "completed", 20, f"job {jid}")
    key = secretmod.cluster_key(cluster.home)  # the cluster's user reads what its daemon made
    assert (cluster.home / secretmod.KEY_FILE).stat().st_mode & 0o777 == 0o600
    for jid in probe:
        out = (cluster.home / "output" / f"job{jid}.0.out").read_text().strip()
        assert out == secretmod.task_secret(key, jid, 1, 0)
    # rank 1's task never connects; rank 0's says hello with its secret and waits for one message
    jid = c.submit({"shape": [2, 2]}, 60, command=f"{RING} hold --skip 1")
    j = wait_for(lambda: (lambda j: j if j["state"] == "running" else None)(c.queue(jobs=[jid])["jobs"][0]), 20,
                 "the job")
    att, nodes = j["attempt"], j["nodes"]
    out0 = cluster.home / "output" / f"job{jid}.0.out"
    wait_for(lambda: out0.exists() and "ready" in out0.read_text(), 30, "rank 0's task to connect")
    s = _peer(cluster.home)  # a process of the cluster's user that opens net.sock
    try:
        def hello(rank, **claim):
            return _ask(s, P.encode("net_hello", job=jid, attempt=att, rank=rank, nodes=nodes, **claim))
        mine = {r: secretmod.task_secret(key, jid, att, r) for r in range(4)}
        for rank, claim in ((1, None), (1, "0" * 64), (1, mine[0]), (1, mine[1].upper()),
                            (1, secretmod.task_secret(key, jid, att + 1, 1)), (0, None), (0, mine[1]), (2, mine[1])):
            r = hello(rank, **({} if claim is None else {"secret": claim}))
            assert (r["type"], r["code"]) == ("error", "bad-secret"), (rank, claim, r)
        assert _ask(s, P.encode("net_send", id=1, to=0, data=b"x"))["code"] == "no-hello"  # bound to nothing
        # nothing changed: rank 0's task still plays its rank, and rank 1 is still free for the
        # one given its secret (here the test, which read the key)
        assert hello(1, secret=mine[1])["type"] == "net_welcome"
        d = _ask(s, P.encode("net_send", id=2, to=0, data=b"from rank 1"), timeout=10)
        assert d["type"] == "net_delivered" and d["id"] == 2
        wait_for(lambda: "from rank 1" in out0.read_text(), 10, "rank 0's task to get the message")
    finally:
        s.close()
    c.cancel(jid)


def _node_peer(endpoint: str, credential: Path):
    s = zmq.Context.instance().socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    auth.curve_client(s, credential)
    s.connect(endpoint)
    return s


def _register(sock, node: int) -> dict:
    sock.send(P.encode("register", node=node, pid=os.getpid(), host="elsewhere"))
    assert sock.poll(10_000), "no answer to a register"
    return msgpack.unpackb(sock.recv())


@pytest.mark.live
def test_node_keys_hold_their_ids_and_a_revoked_key_loses_its_open_connections(cluster):
    cluster.mcemu("keys", "init", "--admin", "boss")
    cluster.mcemu("keys", "issue", "rack", "--role", "node", "--nodes", "3")
    cluster.mcemu("keys", "issue", "alice")
    port = free_port()
    cluster.up("--topology", "hypercube:2", "--allocator", ALLOCATOR, "--scheduler", SCHEDULER,
               "--listen", f"127.0.0.1:{port}")
    tcp, issued, c = f"tcp://127.0.0.1:{port}", cluster.home / "keys" / "issued", cluster.client
    before = node_states(cluster)
    os.kill(before[3]["pid"], signal.SIGKILL)  # node 3 leaves this host: "another host" plays it below
    wait_for(lambda: node_states(cluster)[3]["state"] == "down", 10, "node 3 down")
    rack = _node_peer(tcp, issued / "rack.toml")
    try:
        r = _register(rack, 1)
        assert (r["type"], r["code"]) == ("error", "forbidden") and "bound to nodes 3" in r["message"]
    finally:
        rack.close()
    assert node_states(cluster)[1]["pid"] == before[1]["pid"] and node_states(cluster)[1]["state"] == "idle"
    joiner = subprocess.Popen([sys.executable, "-m", "emulator", "node", "--connect", tcp, "--id", "3",
                               "--key", str(issued / "rack.toml")], env=cluster.env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    cluster.record(joiner)
    wait_for(lambda: node_states(cluster)[3]["pid"] == joiner.pid and node_states(cluster)[3]["state"] == "idle",
             15, "node 3 joined with its rack key")
    # the cluster's shared node key cannot take over node 3 while its connection lives
    other = _node_peer(tcp, issued / "nodes.toml")
    try:
        r = _register(other, 3)
        assert (r["type"], r["code"]) == ("error", "forbidden") and "another principal" in r["message"]
    finally:
        other.close()
    assert node_states(cluster)[3]["pid"] == joiner.pid
    seen = cluster.home / "seen"
    seen.mkdir()
    jid = c.submit({"cube": 2}, runtime=2, command=f"touch {seen}/$MCEMU_NODE")
    wait_for(lambda: c.queue(jobs=[jid])["jobs"][0]["state"] == "completed", 20, "a job on every node")
    assert sorted(p.name for p in seen.iterdir()) == ["0", "1", "2", "3"]  # node 3's task ran on the joiner

    with Client(tcp, key=issued / "alice.toml", timeout=5) as alice:
        assert alice.ping()  # a connection opened before the revocation
        cluster.mcemu("keys", "revoke", "alice")
        cluster.mcemu("keys", "revoke", "rack")

        def refused():
            try:
                alice.ping()
            except DaemonError as e:
                return e.code == "revoked"
            return False
        wait_for(refused, 5, "alice's open connection to be refused")
        with pytest.raises(DaemonError, match="revoked"):
            alice.submit({"cube": 0}, runtime=1)
    wait_for(lambda: node_states(cluster)[3]["state"] == "down", 5, "the revoked node down")
    wait_for(lambda: joiner.poll() is not None, 10, "the revoked node told to stop")
    assert [j["id"] for j in c.queue(all=True)["jobs"]] == [jid]  # alice submitted nothing
    assert c.ping()  # the owner, over ipc, unaffected
