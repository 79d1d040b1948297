"""No client can stall the daemon (issue 30): a paged and sliced ``queue``, per-client quota and
request rate, liveness that does not blame the nodes for the daemon's own lateness, job names
without control characters, and the flood itself in short form with real processes (the full
form, 20,000 jobs and 40 ``queue --all``: ``python scripts/flood.py``)."""
from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
import threading
import time
from pathlib import Path

import msgpack
import pytest
import zmq

from conftest import free_port, wait_for
from emulator.live import auth
from emulator.live import protocol as P
from emulator.live.daemon import Daemon
from emulator.live.kernel import FakeClock

ROOT = Path(__file__).resolve().parents[1]
T0 = 1000.0
MALLORY = auth.Principal("mallory", "client")


def daemon(tmp_path, **cfg) -> Daemon:
    cfg = {"topology": "hypercube:2", "allocator": "buddy", "scheduler": "fcfs", "time_unit": 1.0, **cfg}
    d = Daemon(tmp_path, cfg, grace=0.5, clock=FakeClock(T0))
    d.attach()
    return d


def ask(d: Daemon, ident: bytes, type_: str, **fields) -> dict:
    """Send one request as ``ident`` and run turns until its answer is on the wire."""
    rid = fields.setdefault("id", 1000)
    d.wire.clear()
    d.handle([ident, P.encode(type_, **fields)])
    for _ in range(1000):
        for i, f in d.wire:
            m = P.decode(f, max_size=P.MAX_REPLY)
            if i == ident and m.get("id") == rid:
                return m
        d._turn()
    raise AssertionError(f"no answer to {type_}")


def submit_many(d: Daemon, ident: bytes, n: int) -> None:
    for _ in range(n):
        assert ask(d, ident, "submit", request={"cube": 0}, runtime=100.0)["type"] == "ok"


def test_pages_cover_every_row_once_and_an_unpaged_listing_is_built_in_slices(tmp_path):
    d = daemon(tmp_path)
    try:
        submit_many(d, b"owner", 2500)
        whole = [r["id"] for r in ask(d, b"owner", "queue", all=True)["data"]["jobs"]]
        assert whole == list(range(1, 2501))
        got, after = [], 0
        while after is not None:
            pg = ask(d, b"owner", "queue", all=True, after=after, limit=700)["data"]
            assert len(pg["jobs"]) <= 700
            got += [r["id"] for r in pg["jobs"]]
            after = pg["next"]
        assert got == whole
        # an unpaged request: its first page in the turn it came, the rest one page per slice
        d.wire.clear()
        d.handle([b"owner", P.encode("queue", id=1, all=True)])
        assert d.from_clients.pending() and not any(i == b"owner" for i, _ in d.wire)
        d.from_clients.work(d.clock())  # no time left: nothing more
        d.from_clients.work(float("inf"))
        assert not d.from_clients.pending()
        # a cancel changes the cached row
        ask(d, b"owner", "cancel", job=5)
        rows = {r["id"]: r for r in ask(d, b"owner", "queue", all=True)["data"]["jobs"]}
        assert rows[5]["state"] == "cancelled" and rows[6]["state"] in ("queued", "held")
    finally:
        d.journal.close()


def test_requests_for_the_same_rows_share_one_build(tmp_path):
    d = daemon(tmp_path)
    try:
        submit_many(d, b"owner", 1500)
        d.wire.clear()
        for rid in range(1, 21):
            d.handle([b"owner", P.encode("queue", id=rid, all=True)])
        assert len(d.from_clients.listings[auth.LOCAL]) == 1  # one build, 20 requests
        d.from_clients.work(float("inf"))
        d._flush()
        replies = [P.decode(f, max_size=P.MAX_REPLY) for i, f in d.wire if i == b"owner"]
        replies = [m for m in replies if m["type"] == "ok" and "jobs" in (m.get("data") or {})]
        assert sorted(m["id"] for m in replies) == list(range(1, 21))
        assert all(len(m["data"]["jobs"]) == 1500 for m in replies)
    finally:
        d.journal.close()


def test_a_client_has_a_quota_and_a_request_rate_and_refusals_change_nothing(tmp_path):
    d = daemon(tmp_path)
    try:
        d.peers[b"m"] = MALLORY
        d.admission.max_jobs = 3
        submit_many(d, b"m", 3)
        before = (d.book.next_id, len(d.jobs))
        r = ask(d, b"m", "submit", request={"cube": 0}, runtime=1.0)
        assert r["code"] == "quota" and "quota is 3" in r["message"]
        assert (d.book.next_id, len(d.jobs)) == before
        submit_many(d, b"owner", 5)  # the admin has none
        ask(d, b"owner", "cancel", job=1)
        assert ask(d, b"m", "submit", request={"cube": 0}, runtime=1.0)["type"] == "ok"  # one ended: room again
        d.admission.buckets.clear()
        d.admission.rate, d.admission.burst = 10.0, 5.0
        codes = [ask(d, b"m", "ping")["type"] for _ in range(8)]
        assert codes == ["ok"] * 5 + ["error"] * 3
        r = ask(d, b"m", "ping")
        assert r["code"] == "rate-limited" and "retry after" in r["message"]
        d.kernel.clock.advance(0.5)  # five tokens back
        assert ask(d, b"m", "ping")["type"] == "ok"
        assert all(ask(d, b"owner", "ping")["type"] == "ok" for _ in range(50))  # never the admin
    finally:
        d.journal.close()


@pytest.mark.parametrize("name", ["evil\x1b[2J", "two\nlines", "bell\x07", "del\x7f", "c1\x9b31m", "rtl\u202eexe"])
def test_a_name_with_control_characters_is_refused_and_nothing_changes(tmp_path, name):
    d = daemon(tmp_path)
    try:
        r = ask(d, b"owner", "submit", request={"cube": 0}, runtime=1.0, name=name)
        assert r["type"] == "error" and r["code"] == "bad-name" and "control character" in r["message"]
        assert not d.jobs and d.book.next_id == 1
        assert ask(d, b"owner", "submit", request={"cube": 0}, runtime=1.0, name="ok ünïcode ✓")["type"] == "ok"
    finally:
        d.journal.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="another account's access is judged as root")
def test_a_client_command_its_account_cannot_run_is_refused_with_the_reason(tmp_path):
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no account 'nobody'")
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "net.sock").touch(mode=0o600)
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    prog = closed / "prog"
    prog.touch(mode=0o755)
    assert auth.reaches(nobody, prog, os.X_OK)
    with pytest.raises(ValueError, match="cannot execute"):
        auth.can_run("nobody", f"{prog} --x", home)
    with pytest.raises(ValueError, match="cannot connect to the interconnect"):
        auth.can_run("nobody", "/bin/sh -c true; python3 -m nodes.pattern --shape 2x2", home)
    auth.can_run("nobody", "/bin/true", home)  # what it may run passes
    assert auth.reaches(nobody, Path("/bin/true"), os.X_OK) is None


def test_a_node_is_not_blamed_for_messages_the_daemon_has_not_read(tmp_path):
    """The daemon was late (two expiries of a long turn): the nodes' heartbeats of that time
    wait unread in its socket, so their silence is counted only up to when it had read
    everything; once read, they are heard, and a node that really said nothing is down."""
    d = Daemon(tmp_path, {"topology": "hypercube:1", "allocator": "buddy", "scheduler": "fcfs"}, clock=FakeClock(T0))
    d.bind()
    ctx = zmq.Context.instance()
    socks = []
    try:
        for n in range(2):
            s = ctx.socket(zmq.DEALER)
            s.setsockopt(zmq.LINGER, 0)
            s.connect(d.endpoints["control"])
            s.send(P.encode("register", node=n, pid=100 + n, host="elsewhere"))
            socks.append(s)
        wait_for(lambda: (d._drain(), len(d.by_ident) == 2)[1], 5, "both nodes registered")
        d.kernel.clock.advance(3 * d.expiry)  # the daemon's long turn; node 0 spoke meanwhile
        socks[0].send(d.nodes[0].hb)
        wait_for(lambda: d.router.getsockopt(zmq.EVENTS) & zmq.POLLIN, 5, "the heartbeat queued")
        d.from_nodes.purge(d._read_by(d.clock()))
        assert not d.down  # unread: nobody is blamed
        d._drain()
        d.from_nodes.purge(d._read_by(d.clock()))
        assert d.down == {1}  # read: node 0 spoke, node 1 did not
    finally:
        for s in socks:
            s.close()
        d.stop()


@pytest.mark.live
def test_the_flood_in_short_form_stalls_nothing(cluster):
    """2,000 jobs from one client key, then 20 ``queue --all`` back to back; meanwhile the
    admin pings: no node down, no job failed, the admin's ping p99 under 100 ms."""
    cluster.mcemu("keys", "init", "--admin", "boss")
    cluster.mcemu("keys", "issue", "mallory")
    port = free_port()
    cluster.up("--topology", "hypercube:3", "--scheduler", "fcfs", "--listen", f"127.0.0.1:{port}")
    lat, stop = [], threading.Event()

    def pinger():
        from emulator.live.client import Client
        with Client(home=cluster.home, timeout=60) as c:
            due = time.monotonic()
            while not stop.is_set():
                c.ping()
                done = time.monotonic()
                while due <= done:  # timed from when each was due (scripts/flood.py _pinger)
                    lat.append(done - due)
                    due += 0.02
                time.sleep(max(0.0, due - time.monotonic()))

    th = threading.Thread(target=pinger)
    th.start()
    try:
        r = subprocess.run([sys.executable, str(ROOT / "scripts/flood.py"), "--role", "flooder", "--endpoint",
                            f"tcp://127.0.0.1:{port}", "--key", str(cluster.home / "keys/issued/mallory.toml"),
                            "--jobs", "2000", "--queries", "20", "--runtime", "2"],
                           env=dict(cluster.env, PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        flood = json.loads(r.stdout)
    finally:
        stop.set()
        th.join(60)
    assert flood["accepted"] == 2000
    assert [n for _, n in flood["queries"]] == [2000] * 20
    nodes = cluster.client.nodes()
    assert all(n["state"] != "down" for n in nodes), nodes
    jobs = cluster.client.queue(all=True)["jobs"]
    assert len(jobs) == 2000 and not [j for j in jobs if j["state"] == "failed"]
    lat.sort()
    assert len(lat) >= 5 and lat[int(0.99 * len(lat))] < 0.1, lat[-10:]


def test_encode_rows_is_the_reply_packed_whole():
    rows = [{"id": i, "name": f"j{i}"} for i in range(20)]
    parts = [P.packer().pack(r) for r in rows]
    f = P.encode_rows("ok", {"id": 3}, {"now": 1.0, "gang": None}, "jobs", len(rows), parts)
    assert msgpack.unpackb(f) == {"v": P.VERSION, "type": "ok", "id": 3,
                                  "data": {"now": 1.0, "gang": None, "jobs": rows}}
