"""Hostile peers: the malformed, spoofed and oversized frames a fuzzer or an attacker sends
to a daemon, and a sender that counts the daemon's answers. Used by the hostile-input test
(tests/test_protocol_hostile.py) and the soak (scripts/soak.py); the daemon must answer each
with an error (or a valid reply) and change nothing it should not.
"""
from __future__ import annotations

import random

import msgpack
import zmq

from emulator.live import auth
from emulator.live import protocol as P


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


def blast(endpoint: str, seed: int, n: int, key=None, wait: float = 3.0) -> tuple[int, set, int]:
    """Send ``n`` hostile messages (seeded) to a daemon's ROUTER, as the holder of credential
    ``key`` over tcp; returns (replies, the error codes seen, ok replies). Every message gets
    exactly one reply; the wait for the last ones ends after ``wait`` s of silence. Nothing
    blocks when the daemon is gone: the messages the socket cannot queue are not sent."""
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

    def take():
        nonlocal replies, oks
        m = P.decode(s.recv(), max_size=P.MAX_REPLY)
        replies += 1
        oks += m["type"] == "ok"
        if m["type"] == "error":
            codes.add(m["code"])

    try:
        for frames in hostile_frames(rng, n):
            try:
                s.send_multipart(frames, flags=zmq.NOBLOCK)
            except zmq.Again:
                break
            while s.poll(0):
                take()
        while replies < n and s.poll(wait * 1000):
            take()
    finally:
        s.close(linger=0)
    return replies, codes, oks


__all__ = ["blast", "hostile_frames"]
