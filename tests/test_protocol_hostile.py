"""Hostile input against a live daemon: 10,000 random or malformed frames to its ROUTER (over
ipc:// and tcp://), raw garbage to its socket files; it stays up, answers refusals with error
replies, and still serves well-formed requests correctly."""
from __future__ import annotations

import random
import socket

import msgpack
import pytest
import zmq

from conftest import ALLOCATOR, SCHEDULER, free_port, wait_for
from emulator.live import auth
from emulator.live import home as homemod
from emulator.live import protocol as P
from emulator.live.client import Client, ClientTimeout

pytestmark = pytest.mark.live

N_FRAMES = 10_000


def hostile_frames(rng: random.Random, n: int):
    """Multipart messages (lists of frames) of every malformed kind."""
    good = {"v": 1, "type": "submit", "id": 1, "request": {"cube": 1}, "runtime": 1.0}
    mutations = [
        lambda: [rng.randbytes(rng.randrange(0, 300))],
        lambda: [msgpack.packb(rng.choice([None, 1, -5, 3.5, "x", [1, 2], True, b"bin"]))],
        lambda: [msgpack.packb({**good, "v": rng.choice([0, 2, "1", None, 1.0 + 1e-9])})],
        lambda: [msgpack.packb({**good, "type": rng.choice(["", "SUBMIT", "welcome", "run", "ok", "job", 7])})],
        lambda: [msgpack.packb({k: v for k, v in good.items() if k != rng.choice(["id", "request", "runtime"])})],
        lambda: [msgpack.packb({**good, rng.choice(["request", "runtime", "id", "name", "burn", "command"]):
                                rng.choice([-1, 2**63, "x" * 9000, [], {}, {"cube": 99}, None, float("inf"), True])})],
        lambda: [msgpack.packb({**good, "extra": 1})],
        lambda: [msgpack.packb(good)[: rng.randrange(1, 20)]],
        lambda: [msgpack.packb(good), b"second frame"],
        lambda: [b"", b"", b""],
        lambda: [msgpack.packb(msgpack.ExtType(1, b"\x00" * 8))],
        lambda: [rng.choice([  # node messages from a peer that never registered
            P.encode("task_done", node=0, job=1, attempt=1, rank=0, status=0, usage={}),
            P.encode("task_started", node=0, job=1, attempt=1, rank=0, pid=9),
            P.encode("heartbeat", node=0), P.encode("bye", node=1)])],
        lambda: [msgpack.packb({"v": 1, "type": "register", "node": rng.choice([-1, 10**6, 2**40]), "pid": 1,
                                "host": "h"})],
        lambda: [msgpack.packb({"v": 1, "type": "cancel", "id": 3, "job": rng.randrange(1000, 10**9)})],
        lambda: [b"\xdd\xff\xff\xff\xff"],  # an array header claiming 4 billion items
        lambda: [b"\x91" * 5000 + b"\x00"],  # deep nesting
        lambda: [b"\x00" * (P.MAX_FRAME + 10)],  # too large for the protocol: error reply
    ]
    for _ in range(n):
        yield rng.choice(mutations)()


def blast(endpoint: str, seed: int, n: int, key=None) -> tuple[int, set]:
    ctx = zmq.Context.instance()
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    s.setsockopt(zmq.SNDHWM, 0)
    s.setsockopt(zmq.RCVHWM, 0)
    if key:
        auth.curve_client(s, key)
    s.connect(endpoint)
    rng = random.Random(seed)
    replies, codes, oks = 0, set(), 0
    for frames in hostile_frames(rng, n):
        s.send_multipart(frames)
        while s.poll(0):
            m = P.decode(s.recv(), max_size=P.MAX_REPLY)
            replies += 1
            oks += m["type"] == "ok"
            if m["type"] == "error":
                codes.add(m["code"])
    # the remaining answers; every hostile frame gets exactly one (an error, or for an
    # unknown job's cancel, also an error)
    while replies < n and s.poll(3000):
        m = P.decode(s.recv(), max_size=P.MAX_REPLY)
        replies += 1
        oks += m["type"] == "ok"
        if m["type"] == "error":
            codes.add(m["code"])
    s.close(linger=0)
    return replies, codes, oks


def test_daemon_survives_hostile_frames_and_still_answers(cluster, tmp_path):
    port = free_port()
    cluster.mcemu("keys", "init", "--admin", "boss")
    cluster.up("--topology", "hypercube:2", "--allocator", ALLOCATOR, "--scheduler", SCHEDULER,
               "--time-unit", "0.01", "--listen", f"127.0.0.1:{port}")
    pid = cluster.daemon_pid()
    accepted = 0  # a mutation can land on a valid submit (burn=True, command=None): a real job
    tcp, issued = f"tcp://127.0.0.1:{port}", cluster.home / "keys" / "issued"
    decoding = {"not-msgpack", "not-a-map", "version", "unknown-type", "missing-field", "unknown-field",
                "bad-field", "frames", "too-large"}
    # the owner over ipc; over tcp an authenticated admin (node messages forbidden) and node
    # (client requests forbidden) send the same frames
    for i, (ep, key, want) in enumerate([
            (homemod.control_endpoint(cluster.home), None, {"unregistered", "bad-node", "not-active"}),
            (tcp, issued / "boss.toml", {"forbidden", "not-active"}),
            (tcp, issued / "nodes.toml", {"forbidden", "unregistered", "bad-node"})]):
        replies, codes, oks = blast(ep, seed=i, n=N_FRAMES, key=key)
        accepted += oks
        assert replies == N_FRAMES  # one reply per message, none lost
        assert decoding | want <= codes, (key, codes)
        assert cluster.daemon_pid() == pid
    # without a key, or with garbage for a handshake, nothing reaches the daemon at all
    with pytest.raises(ClientTimeout):
        Client(tcp, timeout=0.5).submit({"cube": 0}, runtime=1)
    for k in range(20):
        with socket.create_connection(("127.0.0.1", port)) as raw:
            raw.sendall(random.Random(k).randbytes(500))

    # a frame above libzmq's limit is dropped with its connection, nothing else happens
    s = zmq.Context.instance().socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    s.connect(homemod.control_endpoint(cluster.home))
    s.send(b"\x00" * (P.MAX_WIRE + 1))
    s.close()
    # raw bytes that are not even ZMTP, on every socket file
    for name in ("daemon.sock", "events.sock"):
        for k in range(20):
            with socket.socket(socket.AF_UNIX) as raw:
                raw.connect(str(cluster.home / name))
                raw.sendall(random.Random(k).randbytes(500))

    c = cluster.client
    assert c.ping() and cluster.daemon_pid() == pid
    assert all(n["connected"] and n["state"] != "down" for n in c.nodes())  # no spoofed frame changed a node
    jid = c.submit({"cube": 1}, runtime=5)
    job = wait_for(lambda: (j := c.queue(jobs=[jid])["jobs"][0])["state"] == "completed" and j, 30, "a job")
    assert len(job["nodes"]) == 2 and job["exit"] == [0, 0]
    jobs = c.queue(all=True)["jobs"]
    assert len(jobs) == accepted + 1 and jobs[-1] == job  # only accepted submits made jobs
    wait_for(lambda: all(j["state"] == "completed" for j in c.queue(all=True)["jobs"]), 30, "all jobs done")
    assert [n["state"] for n in c.nodes()] == ["idle"] * 4

