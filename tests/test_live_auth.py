"""CURVE on tcp with real processes: a cluster up with ``--listen`` answers only issued keys;
owners and roles hold over the wire; ``--listen`` without keys is refused (``--insecure``
says so out loud). A node joining over tcp with its node key: tests/test_live_faults.py."""
from __future__ import annotations

import os
import pwd
import signal

import pytest

from conftest import ALLOCATOR, SCHEDULER, free_port, wait_for
from emulator.live import keys as keysmod
from emulator.live.client import Client, ClientTimeout, DaemonError

pytestmark = pytest.mark.live


def _stranger(path, server_public: str):
    """A well-formed credential the cluster never issued."""
    import zmq

    pub, sec = (k.decode() for k in zmq.curve_keypair())
    path.write_text(f'name = "eve"\nrole = "admin"\npublic = "{pub}"\nsecret = "{sec}"\nserver = "{server_public}"\n')
    return path


def test_tcp_answers_issued_keys_only_and_each_principal_within_its_rights(cluster):
    cluster.mcemu("keys", "init", "--admin", "boss")
    for name in ("alice", "bob", "carol"):
        cluster.mcemu("keys", "issue", name)
    revoked = cluster.home / "carol.toml"
    revoked.write_text((cluster.home / "keys" / "issued" / "carol.toml").read_text())
    cluster.mcemu("keys", "revoke", "carol")
    port = free_port()
    cluster.up("--topology", "hypercube:2", "--allocator", ALLOCATOR, "--scheduler", SCHEDULER, "--listen",
               f"127.0.0.1:{port}")
    tcp = f"tcp://127.0.0.1:{port}"
    issued = cluster.home / "keys" / "issued"
    srv = keysmod.server(cluster.home)["public"]
    keys = {"none": None, "eve": _stranger(cluster.home / "eve.toml", srv), "carol (revoked)": revoked}
    os.environ.pop("MCEMU_KEY", None)
    for who, key in keys.items():
        with Client(tcp, timeout=0.7, key=key) as c:
            for call in (c.ping, lambda: c.submit({"cube": 0}, runtime=1), c.shutdown):
                with pytest.raises(ClientTimeout):
                    call()
    c = cluster.client  # ipc: the owner
    assert c.queue(all=True)["jobs"] == [] and c.ping()

    with Client(tcp, key=issued / "alice.toml") as alice, Client(tcp, key=issued / "bob.toml") as bob, \
            Client(tcp, key=issued / "nodes.toml") as node, Client(tcp, key=issued / "boss.toml") as boss:
        a = alice.submit({"cube": 1}, runtime=60)
        b = bob.submit({"cube": 1}, runtime=60)
        mine = c.submit({"cube": 0}, runtime=60, command="sleep 60; echo private")
        with pytest.raises(DaemonError, match="may cancel only its own jobs"):
            bob.cancel(a)
        with pytest.raises(DaemonError, match="only the cluster's admin"):
            alice.shutdown()
        with pytest.raises(DaemonError, match="node key 'nodes' may not send client requests"):
            node.submit({"cube": 0}, runtime=1)
        if os.geteuid() != 0 or not _has_account("alice"):
            with pytest.raises(DaemonError, match="forbidden"):
                alice.submit({"cube": 0}, runtime=1, command="id")
        rows = {j["id"]: j for j in bob.queue(all=True)["jobs"]}
        assert (rows[a]["owner"], rows[b]["owner"]) == ("alice", "bob")
        assert "hidden" in rows[mine]["command"]
        assert {j["id"]: j for j in c.queue()["jobs"]}[mine]["command"].endswith("echo private")
        assert bob.cancel(b)["state"] == "cancelled"
        assert boss.cancel(a)["state"] == "cancelled"
        assert {j["id"]: j["state"] for j in c.queue(all=True)["jobs"]} == \
            {a: "cancelled", b: "cancelled", mine: "running"}

    # the CLI: --key on a client command, one-line error for a file that is no credential
    r = cluster.mcemu("queue", "--all", "--connect", tcp, "--key", str(issued / "alice.toml"), "--json")
    assert '"owner": "alice"' in r.stdout
    r = cluster.mcemu("queue", "--connect", tcp, "--key", str(cluster.home / "nope.toml"), check=False)
    assert r.returncode == 2 and r.stderr.strip().startswith("mcemu queue: error: --key: no key file")


def _has_account(name):
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


@pytest.mark.skipif(os.geteuid() != 0 or not _has_account("nobody"), reason="needs a root daemon and 'nobody'")
def test_a_client_command_runs_as_the_clients_own_account_never_as_root(cluster):
    cluster.mcemu("keys", "init")
    cluster.mcemu("keys", "issue", "nobody")
    port = free_port()
    cluster.up("--topology", "hypercube:1", "--allocator", ALLOCATOR, "--scheduler", SCHEDULER, "--listen",
               f"127.0.0.1:{port}")
    with Client(f"tcp://127.0.0.1:{port}", key=cluster.home / "keys" / "issued" / "nobody.toml") as c:
        jid = c.submit({"cube": 0}, runtime=1, command="id -u; id -un")
        wait_for(lambda: c.queue(jobs=[jid])["jobs"][0]["state"] == "completed", 15, "the job to complete")
    out = cluster.home / "output" / f"job{jid}.0.out"
    uid = pwd.getpwnam("nobody").pw_uid
    assert out.read_text().split() == [str(uid), "nobody"]
    assert out.stat().st_uid == uid  # its owner can read what it wrote


def test_listen_without_keys_is_refused_before_anything_starts_and_insecure_says_so(cluster):
    port = free_port()
    r = cluster.mcemu("up", "--detach", "--topology", "hypercube:1", "--listen", f"127.0.0.1:{port}", check=False)
    assert r.returncode == 2 and "mcemu keys init" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert cluster.daemon_pid() is None and not (cluster.home / "journal.db").exists()
    r = cluster.mcemu("up", "--detach", "--topology", "hypercube:1", "--listen", f"127.0.0.1:{port}", "--insecure",
                      "--no-restart")
    cluster.record()
    assert "WARNING: --insecure" in r.stderr
    with Client(f"tcp://127.0.0.1:{port}", timeout=5) as c:  # no key: the admin, as the flag said
        assert c.ping()


def test_a_recovered_daemon_listens_where_the_dead_one_did_with_the_same_keys(cluster):
    cluster.mcemu("keys", "init")
    port = free_port()
    cluster.up("--topology", "hypercube:1", "--allocator", ALLOCATOR, "--scheduler", SCHEDULER, "--listen",
               f"127.0.0.1:{port}")
    key = cluster.home / "keys" / "issued" / "nodes.toml"
    pid = cluster.daemon_pid()
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: cluster.daemon_pid() is None, 5, "the daemon to die")
    r = cluster.mcemu("up", "--detach")  # no options: the journal and the dead daemon's record
    cluster.record()
    assert "recovered the journal" in r.stdout
    admin = next(p for p in (cluster.home / "keys" / "issued").glob("*.toml") if p.name != "nodes.toml")
    with Client(f"tcp://127.0.0.1:{port}", timeout=5, key=admin) as c:
        assert c.ping() and c.status()["pid"] != pid
    with Client(f"tcp://127.0.0.1:{port}", timeout=0.7, key=key) as c, pytest.raises(DaemonError, match="forbidden"):
        c.ping()  # still CURVE, still the same principals
