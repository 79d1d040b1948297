"""Principals and their rights (emulator.live.auth) on a daemon without sockets, the ZAP
handler's decisions and the key store (emulator.live.keys). The same over real CURVE tcp:
tests/test_live_auth.py."""
from __future__ import annotations

import os
import stat

import pytest
import zmq

from emulator.live import auth
from emulator.live import keys as keysmod
from emulator.live.auth import Principal
from tests.fixtures.stub_daemon import Stub

ALICE, BOB = Principal("alice", "client"), Principal("bob", "client")
ADMIN, RACK = Principal("boss", "admin"), Principal("rack1", "node")


def _stub(tmp_path, **cfg):
    s = Stub(tmp_path, **cfg)
    s.d.peers.update({b"alice": ALICE, b"bob": BOB, b"boss": ADMIN, b"rack1": RACK, b"rack2": Principal("rack2", "node")})
    return s


def _call(s, ident, type_, **f):
    return s.call(type_, ident, **f)


def test_jobs_record_their_owner_and_only_the_owner_or_the_admin_cancels(tmp_path):
    s = _stub(tmp_path)
    a = _call(s, b"alice", "submit", request={"cube": 1}, runtime=5)["data"]["job"]
    b = _call(s, b"bob", "submit", request={"cube": 1}, runtime=5)["data"]["job"]
    local = s.call("submit", request={"cube": 0}, runtime=5, command="echo secret")["data"]["job"]
    rows = {j["id"]: j for j in s.call("queue")["data"]["jobs"]}
    assert (rows[a]["owner"], rows[b]["owner"], rows[local]["owner"]) == ("alice", "bob", auth.LOCAL.name)

    r = _call(s, b"bob", "cancel", job=a)
    assert r["type"] == "error" and r["code"] == "forbidden" and "alice" in r["message"]
    assert s.d.jobs[a].state == "queued"
    assert _call(s, b"alice", "cancel", job=a)["type"] == "ok"
    assert _call(s, b"boss", "cancel", job=b)["type"] == "ok"
    assert (s.d.jobs[a].state, s.d.jobs[b].state) == ("cancelled", "cancelled")
    assert s.d.jobs[b].reason == "cancelled by boss"

    # a client sees others' jobs and their owners, not their commands; the owner and the admin do
    seen = {j["id"]: j for j in _call(s, b"bob", "queue", all=True)["data"]["jobs"]}
    assert seen[local]["owner"] == auth.LOCAL.name and "hidden" in seen[local]["command"]
    assert s.call("queue")["data"]["jobs"][0]["command"] == "echo secret"
    assert {j["id"]: j for j in _call(s, b"boss", "queue", all=True)["data"]["jobs"]}[local]["command"] == "echo secret"


def test_roles_keep_nodes_and_clients_apart_and_only_the_admin_shuts_down(tmp_path):
    s = _stub(tmp_path)
    r = _call(s, b"rack1", "submit", request={"cube": 0}, runtime=1)
    assert r["code"] == "forbidden" and "node key" in r["message"]
    out = s.send(b"alice", "register", node=0, pid=1, host="h")
    assert [m["code"] for _, m in out] == ["forbidden"] and s.d.nodes[0].ident is None
    s.d.running = True
    assert _call(s, b"alice", "shutdown")["code"] == "forbidden" and s.d.running is True
    assert not s.d.jobs
    out = s.send(b"rack1", "register", node=0, pid=1, host="h")
    assert out[0][1]["type"] == "welcome"
    assert _call(s, b"boss", "shutdown")["type"] == "ok" and s.d.running is False


def test_a_live_node_cannot_be_taken_over_by_another_principal(tmp_path):
    s = _stub(tmp_path)
    assert s.send(b"rack1", "register", node=1, pid=10, host="a")[0][1]["type"] == "welcome"
    out = s.send(b"rack2", "register", node=1, pid=11, host="b")
    assert out[0][1]["code"] == "forbidden" and s.d.nodes[1].pid == 10
    s.d.peers[b"rack1-again"] = RACK  # the same principal's node restarted: a new connection
    assert s.send(b"rack1-again", "register", node=1, pid=12, host="a")[0][1]["type"] == "welcome"
    assert s.d.nodes[1].pid == 12


def test_a_node_reports_only_on_the_tasks_placed_on_it(tmp_path):
    s = Stub(tmp_path)
    s.register_all()
    jid = s.call("submit", request={"cube": 1}, runtime=50)["data"]["job"]
    jr = s.d.jobs[jid]
    assert jr.state == "running" and jr.nodes == [0, 1]
    # node 3 claims rank 0's start and end
    s.send(b"n3", "task_started", node=3, job=jid, attempt=1, rank=0, pid=999)
    s.send(b"n3", "task_done", node=3, job=jid, attempt=1, rank=0, status=0, usage={})
    s.send(b"n3", "task_done", node=3, job=jid, attempt=1, rank=1, status=0, usage={})
    assert jr.state == "running" and jr.started == set() and jr.done == {}
    # and a peer cannot speak for another node than the one it registered as
    out = s.send(b"n3", "task_done", node=0, job=jid, attempt=1, rank=0, status=0, usage={})
    assert out[0][1]["code"] == "bad-node" and jr.done == {}
    for n in (0, 1):
        s.send(b"n%d" % n, "task_done", node=n, job=jid, attempt=1, rank=n, status=0, usage={})
    assert jr.state == "completed"


def test_a_clients_command_runs_as_its_own_account_or_is_refused(tmp_path):
    s = _stub(tmp_path)
    s.d.peers[b"nobody"] = Principal("nobody", "client")
    s.d.peers[b"root"] = Principal("root", "client")
    s.d.peers[b"ghost"] = Principal("no-such-account-x", "client")
    for ident in (b"alice", b"ghost", b"root"):
        r = _call(s, ident, "submit", request={"cube": 0}, runtime=1, command="id")
        assert r["type"] == "error" and r["code"] == "forbidden", r
    assert not s.d.jobs
    r = _call(s, b"nobody", "submit", request={"cube": 0}, runtime=1, command="id")
    if os.geteuid() == 0:
        jid = r["data"]["job"]
        assert s.d.jobs[jid].user == "nobody" and s.d.jobs[jid].owner == "nobody"
        runs = [m for _, m in s.register_all() if m["type"] == "run"]
        assert runs and runs[0]["user"] == "nobody"
    else:  # a daemon that is not root would run it as its own account: refused
        assert r["code"] == "forbidden" and "root" in r["message"]
    # a synthetic job needs no account; the admin's command runs as the daemon's
    assert _call(s, b"alice", "submit", request={"cube": 0}, runtime=1)["type"] == "ok"
    jid = _call(s, b"boss", "submit", request={"cube": 0}, runtime=1, command="id")["data"]["job"]
    assert s.d.jobs[jid].user is None


# ---------------------------------------------------------------------- keys and ZAP


def test_keys_are_private_and_refused_twice_or_malformed(tmp_path):
    made = keysmod.init(tmp_path, "boss")
    kd = keysmod.keys_dir(tmp_path)
    assert [p.name for p in made] == ["boss.toml", "nodes.toml"]
    for d in (kd, kd / "principals", kd / "issued"):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700
    for f in (kd / "server.toml", *made):
        assert stat.S_IMODE(f.stat().st_mode) == 0o600
    with pytest.raises(keysmod.KeyFileError, match="already has"):
        keysmod.init(tmp_path, "boss")
    with pytest.raises(keysmod.KeyFileError, match="already has a key"):
        keysmod.issue(tmp_path, "boss")
    for bad in ("", "../x", "-x", "a b", "x" * 65):
        with pytest.raises(keysmod.KeyFileError, match="name"):
            keysmod.issue(tmp_path, bad)
    with pytest.raises(keysmod.KeyFileError, match="role"):
        keysmod.issue(tmp_path, "eve", "root")
    garbage = tmp_path / "g.toml"
    garbage.write_text("public = 3\n")
    with pytest.raises(keysmod.KeyFileError):
        keysmod.credential(garbage)
    with pytest.raises(keysmod.KeyFileError, match="no key file"):
        keysmod.credential(tmp_path / "missing.toml")
    c = keysmod.credential(made[0])
    assert c["server"] == keysmod.server(tmp_path)["public"] and c["role"] == "admin"


def test_the_zap_handler_lets_in_issued_keys_only_and_sees_revocations(tmp_path):
    keysmod.init(tmp_path, "boss")
    alice = keysmod.credential(keysmod.issue(tmp_path, "alice"))
    ctx = zmq.Context()
    z = auth.Zap(ctx, tmp_path)
    try:
        def ask(public_z85, mechanism=b"CURVE"):
            creds = [zmq.utils.z85.decode(public_z85)] if public_z85 else []
            return z._decide([b"1.0", b"7", b"mcemu", b"127.0.0.1", b"", mechanism, *creds])

        ok = ask(alice["public"])
        assert ok[2] == b"200" and ok[4] == b"client:alice" and ok[1] == b"7"
        stranger = zmq.curve_keypair()[0].decode()
        assert ask(stranger)[2] == b"400"
        assert ask(None, b"NULL")[2] == b"400"
        assert z._decide([b"2.0", b"1"])[2] == b"400"
        keysmod.revoke(tmp_path, "alice")
        assert ask(alice["public"])[2] == b"400"
        assert auth.from_user_id("client:alice") == ALICE and auth.from_user_id(None) == auth.LOCAL
    finally:
        z.close()
        ctx.term()
