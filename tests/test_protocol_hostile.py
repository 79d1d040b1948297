"""Hostile input against a live daemon: 10,000 random or malformed frames to its ROUTER (over
ipc:// and tcp://), raw garbage to its socket files; it stays up, answers refusals with error
replies, and still serves well-formed requests correctly."""
from __future__ import annotations

import random
import socket

import pytest
import zmq

from conftest import ALLOCATOR, SCHEDULER, free_port, wait_for
from emulator.live import home as homemod
from emulator.live import protocol as P
from emulator.live.client import Client, ClientTimeout
from tests.fixtures.hostile import blast

pytestmark = pytest.mark.live

N_FRAMES = 10_000


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

