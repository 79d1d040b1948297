"""Who is talking to the daemon, and what they may do.

Over tcp every connection is CURVE (emulator.live.keys): the daemon's ZAP handler (RFC 27,
served in the daemon's own poll loop) accepts a client key found in ``keys/principals`` and
names the connection ``ROLE:NAME``; libzmq stamps that on every message as its ``User-Id``,
with the key (``X-Key``) and a node credential's binding (``X-Nodes``) as the connection's
metadata (the ZAP reply's properties).
Over ipc the socket file is the cluster owner's alone, so its peers are the owner: ``LOCAL``.
With ``--insecure`` a tcp peer is LOCAL too (anyone who reaches the port owns the cluster,
which is what the flag says).

Rules (``forbidden`` returns the reason or None):

* node messages (register, heartbeat, task reports) need role ``node`` or LOCAL; a client key
  cannot pose as a node. A node reports only on tasks the daemon placed on it
  (emulator.live.node_handlers checks the rank's node), a node key bound to ids registers only
  those, and a node id held by a live connection of another principal cannot be taken over.
* a revoked key ends the connections opened with it (issue 30): ZAP asks only at a
  connection's handshake, so the daemon re-reads ``principals/`` every ``KEYS_EVERY`` seconds
  (``Zap.watch``) and, when it changed, marks ``revoked`` every peer whose key is no longer let
  in as it was; a revoked peer's every message is answered ``revoked`` and dropped, and a node
  so revoked is told to shut down and is down (its jobs requeued). A connection first heard
  after a revocation is checked as it is first heard (``Zap.vet``).
* client requests need ``client``, ``admin`` or LOCAL; a node key cannot submit.
* ``comm`` (a job's message statistics, from emulator.live.interconnect) needs LOCAL.
* ``cancel`` of another principal's job and ``shutdown`` need ``admin`` or LOCAL; ``queue``
  hides the command of another principal's jobs from a ``client``.
* a ``command`` task runs as the daemon's account for LOCAL and admins. For a ``client`` it runs
  as the local account of the principal's name, which needs a daemon running as root and an
  account of that name other than root; otherwise the submit is refused. A task never runs as
  root for someone else. A command that account could not run (``can_run``: a program it may
  not execute, a communicating task where it cannot reach the interconnect) is refused at
  submit with the reason, rather than accepted to fail with exit 126.
"""
from __future__ import annotations

import logging
import os
import pwd
import shlex
from pathlib import Path
from typing import NamedTuple

import zmq
from zmq.utils import z85

from emulator.live import keys as keysmod

log = logging.getLogger("mcemu.daemon")

ZAP_ENDPOINT = "inproc://zeromq.zap.01"
ZAP_DOMAIN = b"mcemu"


KEYS_EVERY = 0.2  # seconds between the daemon's looks at principals/ for revocations


class Principal(NamedTuple):
    name: str
    role: str  # local, admin, client, node, or revoked (its key no longer let in)
    nodes: str | None = None  # a node key's binding (emulator.live.keys.node_ranges), None: any node
    key: str | None = None  # the public key it connected with (None: LOCAL)

    @property
    def admin(self) -> bool:
        return self.role in ("local", "admin")


def local_principal() -> Principal:
    try:
        name = pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        name = str(os.getuid())
    return Principal(name, "local")


LOCAL = local_principal()

NODE_ROLES = frozenset({"local", "node"})
CLIENT_ROLES = frozenset({"local", "admin", "client"})


def from_user_id(uid: str | None) -> Principal:
    """The principal the ZAP handler named (``ROLE:NAME``), LOCAL for an ipc peer (no User-Id)."""
    if not uid:
        return LOCAL
    role, _, name = uid.partition(":")
    return Principal(name, role)


def from_frame(frame) -> Principal:
    """Who sent ``frame`` (a zmq.Frame): the ZAP handler's User-Id and metadata; LOCAL over ipc."""
    try:
        p = from_user_id(frame.get("User-Id"))
    except zmq.ZMQError:  # ipc: no security mechanism, the owner's socket
        return LOCAL
    return p if p is LOCAL else p._replace(nodes=_prop(frame, "X-Nodes"), key=_prop(frame, "X-Key"))


def _prop(frame, name: str) -> str | None:
    try:
        return frame.get(name) or None
    except zmq.ZMQError:  # not set for this connection
        return None


def _metadata(**props) -> bytes:
    """ZAP reply metadata (ZMTP properties: name length, name, value length, value)."""
    out = b""
    for k, v in props.items():
        if v is not None:
            name, value = k.replace("_", "-").encode(), v.encode()
            out += bytes([len(name)]) + name + len(value).to_bytes(4, "big") + value
    return out


def forbidden(p: Principal, msg_type: str, node_types, client_types) -> str | None:
    if p.role == "revoked":
        return f"the key of {p.name!r} was revoked: this connection is refused"
    if msg_type in node_types and p.role not in NODE_ROLES:
        return f"{p.role} key {p.name!r} may not send node messages ({msg_type})"
    if msg_type in client_types and p.role not in CLIENT_ROLES:
        return f"{p.role} key {p.name!r} may not send client requests ({msg_type})"
    if msg_type == "comm" and p.role != "local":  # the interconnect's reports: it runs beside the daemon
        return f"only a local peer (the interconnect) may report communication statistics, not {p.name!r}"
    if msg_type == "shutdown" and not p.admin:
        return f"only the cluster's admin may shut it down ({p.name!r} is a {p.role})"
    return None


def run_as(p: Principal, command: str | None) -> str | None:
    """The local account a job's tasks run as (None: the daemon's own), or ValueError saying
    why this principal's command cannot run here."""
    if not command or p.admin:
        return None
    if os.geteuid() != 0:
        raise ValueError(f"a command from {p.name!r} would run as this daemon's account "
                         f"({LOCAL.name}): only the admin's may; a daemon running as root runs it "
                         f"as the local account {p.name!r}")
    try:
        pw = pwd.getpwnam(p.name)
    except KeyError:
        raise ValueError(f"no local account {p.name!r} to run its command as") from None
    if pw.pw_uid == 0:
        raise ValueError(f"{p.name!r} is a root account: a client's command never runs as root")
    return p.name


def reaches(pw, path: Path, want: int) -> str | None:
    """Why account ``pw`` (a pwd entry) cannot reach ``path`` with access ``want`` (os.R_OK,
    W_OK, X_OK bits) through its directories, or None. Decided from the modes, owners and the
    account's groups, since this process (root) would pass any os.access."""
    groups = set(os.getgrouplist(pw.pw_name, pw.pw_gid))
    path = Path(path)
    for p, need in [(d, os.X_OK) for d in reversed(path.parents)] + [(path, want)]:
        try:
            st = p.stat()
        except OSError as e:
            return f"{p}: {e.strerror}"
        shift = 6 if st.st_uid == pw.pw_uid else 3 if st.st_gid in groups else 0
        if (st.st_mode >> shift) & need != need:
            return f"{p} (mode {st.st_mode & 0o7777:04o}, owner uid {st.st_uid}) is closed to it"
    return None


def can_run(user: str, command: str, home) -> None:
    """Refuse (ValueError) a command that the account ``user`` could start but never run: a
    program it may not execute (exit 126), or a task of this project that talks to the
    interconnect (``python -m nodes....``: the pattern task, an MPI program's ranks) where the
    account cannot reach ``net.sock`` (issue 30: such a job was accepted, then every rank
    exited 126 with no reason shown). The interconnect's socket is the cluster owner's alone
    (MCEMU_HOME is 0700): opening it to other accounts would let any of their processes claim a
    rank of another job, so this refuses rather than widens it."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return  # the shell will say what is wrong with it, in the job's output
    pw = pwd.getpwnam(user)
    if argv and argv[0].startswith("/"):
        why = reaches(pw, Path(argv[0]), os.X_OK)
        if why:
            raise ValueError(f"the command would run as the account {user!r}, which cannot execute {argv[0]}: {why}")
    if any(a.startswith("nodes.") for a, prev in zip(argv[1:], argv) if prev == "-m"):
        sock = Path(home) / "net.sock"
        why = reaches(pw, sock, os.R_OK | os.W_OK)
        if why:
            raise ValueError(f"the command is a communicating task, which would run as the account {user!r}, which "
                             f"cannot connect to the interconnect ({sock}): {why}; a client's communicating job "
                             f"cannot run on this cluster")


class Zap:
    """The ZAP handler: a REP socket on the daemon's context, polled by the daemon's loop."""

    def __init__(self, ctx, home):
        self.keyring = keysmod.Keyring(home)
        self.sock = ctx.socket(zmq.REP)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.bind(ZAP_ENDPOINT)
        self.refused = 0
        self.seen = 0  # the keyring's generation that ``revoked`` last looked at

    def handle(self) -> None:
        while True:
            try:
                req = self.sock.recv_multipart(flags=zmq.NOBLOCK)
            except zmq.Again:
                return
            try:
                reply = self._decide(req)
            except Exception:  # a bug here must refuse the connection, not end the daemon
                log.exception("ZAP handler failed")
                reply = [b"1.0", req[1] if len(req) > 1 else b"", b"500", b"internal error", b"", b""]
            self.sock.send_multipart(reply)

    def _decide(self, req):
        # version, request id, domain, address, identity, mechanism, credentials...
        if len(req) < 6 or req[0] != b"1.0":
            return [b"1.0", req[1] if len(req) > 1 else b"", b"400", b"malformed ZAP request", b"", b""]
        rid, address, mechanism = req[1], req[3], req[5]
        if mechanism == b"CURVE" and len(req) == 7 and len(req[6]) == 32:
            public = z85.encode(req[6]).decode("ascii")
            found = self.keyring.lookup(public)
            if found is not None:
                name, role, nodes = found
                return [b"1.0", rid, b"200", b"OK", f"{role}:{name}".encode(), _metadata(X_Key=public, X_Nodes=nodes)]
        self.refused += 1
        if self.refused <= 10 or self.refused % 1000 == 0:  # a flood of bad keys must not fill the log
            log.warning("refused a %s connection from %s: unknown key (%d refused)",
                        mechanism.decode(errors="replace"), address.decode(errors="replace"), self.refused)
        return [b"1.0", rid, b"400", b"unknown key", b"", b""]

    def vet(self, p: Principal) -> Principal:
        """``p`` as it is let in now: revoked when its key no longer names it."""
        self.keyring.reload()
        return p if self._admits(p) else p._replace(role="revoked")

    def _admits(self, p: Principal) -> bool:
        return p.key is None or self.keyring.get(p.key) == (p.name, p.role, p.nodes)

    def revoked(self, peers: dict) -> list:
        """The routing ids in ``peers`` (-> Principal) whose key was revoked since the last look
        (principals/ changed): marked revoked in ``peers``."""
        self.keyring.reload()
        if self.keyring.generation == self.seen:
            return []
        self.seen = self.keyring.generation
        out = []
        for ident, p in peers.items():
            if p.role != "revoked" and not self._admits(p):
                peers[ident] = p._replace(role="revoked")
                out.append(ident)
        if out:
            log.warning("%d open connection(s) of revoked keys refused from now on", len(out))
        return out

    def watch(self, kernel, peers: dict, gone) -> None:
        """Every KEYS_EVERY seconds on ``kernel``: ``gone([ident, ...])`` with the newly revoked peers."""
        def look():
            idents = self.revoked(peers)
            if idents:
                gone(idents)
            kernel.call_at(kernel.now() + KEYS_EVERY, look)
        kernel.call_at(kernel.now() + KEYS_EVERY, look)

    def close(self):
        self.sock.close(linger=0)


def curve_server(sock, home) -> None:
    """Make the next bind of ``sock`` a CURVE server with the cluster's key pair."""
    srv = keysmod.server(home)
    sock.setsockopt(zmq.CURVE_SECRETKEY, srv["secret"].encode())
    sock.setsockopt(zmq.CURVE_PUBLICKEY, srv["public"].encode())
    sock.setsockopt(zmq.CURVE_SERVER, 1)
    sock.setsockopt(zmq.ZAP_DOMAIN, ZAP_DOMAIN)


def curve_client(sock, credential_path) -> dict:
    """Make the next connect of ``sock`` a CURVE client with a credential file; returns it."""
    return use_credential(sock, keysmod.credential(credential_path))


def use_credential(sock, c: dict) -> dict:
    sock.setsockopt(zmq.CURVE_SERVERKEY, c["server"].encode())
    sock.setsockopt(zmq.CURVE_PUBLICKEY, c["public"].encode())
    sock.setsockopt(zmq.CURVE_SECRETKEY, c["secret"].encode())
    return c


def key_for(endpoint: str, key) -> str | None:
    """The credential a tcp connection uses: ``key`` if given, else ``MCEMU_KEY``; none for ipc."""
    if not endpoint.startswith("tcp://"):
        return None
    return key or os.environ.get("MCEMU_KEY") or None


__all__ = ["KEYS_EVERY", "LOCAL", "Principal", "Zap", "can_run", "curve_client", "curve_server", "forbidden",
           "from_frame", "from_user_id", "key_for", "reaches", "run_as", "use_credential"]
