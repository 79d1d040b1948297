"""The cluster's CURVE keys: who may talk to a daemon over tcp, and as whom.

ZeroMQ's CURVE (RFC 26, pyzmq's ``zmq.curve_keypair``) encrypts and authenticates every tcp
connection; the daemon's ZAP handler (emulator.live.auth) lets in only the public keys listed
here and names the connection's *principal* from the key. The ipc sockets in MCEMU_HOME stay
as they are: owner-only files in an owner-only directory.

Layout, all under ``MCEMU_HOME/keys`` (0700, files 0600)::

    server.toml             the daemon's key pair (its public half goes into every credential)
    principals/NAME.toml    who is let in: name, role and public key (the daemon reads these)
    issued/NAME.toml        the credential to hand to NAME: its key pair and the server's key

Roles: ``admin`` (any job, shutdown), ``client`` (its own jobs), ``node`` (a node agent; it may
not submit, and a client key may not pose as a node). ``mcemu keys init`` makes the server pair,
an admin credential named after the local user and a ``nodes`` credential; ``mcemu keys issue
NAME --role client`` adds one; ``mcemu keys revoke NAME`` removes it: new connections are
refused at once, and the daemon, which re-reads ``principals/`` when it changes, refuses the
next message of a connection opened with it before (emulator.live.auth).

A node credential may be bound to node ids (``mcemu keys issue rack2 --role node --nodes
4-7``): its holder may register only those (issue 30: one shared ``nodes`` credential let its
holder take over any remote node's id and hear other users' ``run`` messages, their task
secrets included). The ``nodes`` credential of ``init`` is unbound: it is for the cluster's
own launcher and hosts you trust with every node; give each other host a bound one. Whatever
the binding, a node id held by a live connection of another principal is not taken over.

A credential is a small TOML file (Z85 keys contain no quote or backslash)::

    name = "alice"
    role = "client"
    public = "..."
    secret = "..."
    server = "..."
    nodes = "4-7"      (a bound node credential only)
"""
from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

import zmq

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROLES = ("admin", "client", "node")
NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
NODES_RE = re.compile(r"^\d{1,7}(-\d{1,7})?(,\d{1,7}(-\d{1,7})?)*$")
MAX_NODE_ID = 1 << 20  # emulator.live.protocol.MAX_NODE


class KeyFileError(ValueError):
    """A missing, malformed or refused key file; the message says which and what to do."""


def keys_dir(home: Path) -> Path:
    return Path(home) / "keys"


def _private_dir(p: Path) -> Path:
    p.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(p, 0o700)
    return p


def _write(path: Path, fields: dict) -> None:
    text = "".join(f'{k} = "{v}"\n' for k, v in fields.items())
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def read(path) -> dict:
    """A key file's fields; KeyFileError when it is missing or not one of ours."""
    path = Path(path)
    try:
        d = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise KeyFileError(f"no key file {path}") from None
    except (OSError, ValueError) as e:
        raise KeyFileError(f"cannot read key file {path}: {e}") from None
    for k in ("public",) + (("secret",) if path.parent.name != "principals" else ()):
        v = d.get(k)
        if not isinstance(v, str) or len(v) != 40:
            raise KeyFileError(f"key file {path}: {k!r} must be a 40-character Z85 key")
    return d


def check_name(name: str) -> str:
    if not NAME_RE.match(name or ""):
        raise KeyFileError(f"a principal's name is 1-64 letters, digits, '_', '.' or '-' (not starting with "
                        f"'.' or '-'), got {name!r}")
    return name


@lru_cache(maxsize=256)
def node_ranges(spec: str) -> tuple:
    """The (first, last) id ranges of a node binding such as ``4-7,9``; KeyFileError when it is
    not one."""
    if len(spec or "") > 200 or not NODES_RE.match(spec or ""):
        raise KeyFileError(f"a node binding is ids and ranges such as 4-7,9 (at most 200 characters), got {spec!r}")
    out = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        lo, hi = int(lo), int(hi or lo)
        if lo > hi or hi >= MAX_NODE_ID:
            raise KeyFileError(f"node range {part!r}: ids go up, from 0 to at most {MAX_NODE_ID - 1}")
        out.append((lo, hi))
    return tuple(out)


def binds(spec: str, node: int) -> bool:
    """Whether the binding ``spec`` (well formed: ``node_ranges``) includes ``node``."""
    return any(lo <= node <= hi for lo, hi in node_ranges(spec))


def _keypair() -> tuple[str, str]:
    if not zmq.has("curve"):
        raise KeyFileError("this libzmq was built without CURVE: cannot make keys")
    pub, sec = zmq.curve_keypair()
    return pub.decode("ascii"), sec.decode("ascii")


def initialized(home: Path) -> bool:
    return (keys_dir(home) / "server.toml").exists()


def init(home: Path, admin: str, force: bool = False) -> list[Path]:
    """The server pair, an admin credential named ``admin`` and a ``nodes`` credential.
    Refuses to overwrite existing keys unless ``force`` (which revokes every credential)."""
    check_name(admin)
    kd = _private_dir(keys_dir(home))
    if initialized(home) and not force:
        raise KeyFileError(f"{kd} already has the cluster's keys (`mcemu keys list`; --force makes new ones "
                        f"and revokes every credential issued)")
    if force:
        for sub in ("principals", "issued"):
            for f in (kd / sub).glob("*.toml") if (kd / sub).exists() else ():
                f.unlink()
    pub, sec = _keypair()
    _write(kd / "server.toml", {"public": pub, "secret": sec})
    return [issue(home, admin, "admin"), issue(home, "nodes", "node")]


def server(home: Path) -> dict:
    if not initialized(home):
        raise KeyFileError(f"no cluster keys in {keys_dir(home)}: run `mcemu keys init` first")
    return read(keys_dir(home) / "server.toml")


def issue(home: Path, name: str, role: str = "client", nodes: str | None = None) -> Path:
    """A new key pair for ``name``: let in (principals/) and handed out (issued/); a node
    credential bound to the ids ``nodes`` (``4-7,9``) when given."""
    check_name(name)
    if role not in ROLES:
        raise KeyFileError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    if nodes is not None:
        if role != "node":
            raise KeyFileError(f"only a node credential is bound to node ids (--nodes), not a {role} one")
        node_ranges(nodes)
    srv = server(home)
    kd = keys_dir(home)
    if (kd / "principals" / f"{name}.toml").exists():
        raise KeyFileError(f"{name!r} already has a key (`mcemu keys revoke {name}` first)")
    pub, sec = _keypair()
    bound = {} if nodes is None else {"nodes": nodes}
    _write(_private_dir(kd / "principals") / f"{name}.toml", {"name": name, "role": role, "public": pub, **bound})
    out = _private_dir(kd / "issued") / f"{name}.toml"
    _write(out, {"name": name, "role": role, "public": pub, "secret": sec, "server": srv["public"], **bound})
    return out


def revoke(home: Path, name: str) -> None:
    check_name(name)
    kd = keys_dir(home)
    p = kd / "principals" / f"{name}.toml"
    if not p.exists():
        raise KeyFileError(f"no principal {name!r} (`mcemu keys list`)")
    p.unlink()
    (kd / "issued" / f"{name}.toml").unlink(missing_ok=True)


def principals(home: Path) -> list[dict]:
    d = keys_dir(home) / "principals"
    out = []
    for f in sorted(d.glob("*.toml")) if d.exists() else ():
        try:
            r = read(f)
        except KeyFileError:
            continue  # a broken file lets no one in; `keys list` shows the rest
        if r.get("role") in ROLES and r.get("name") == f.stem and _bound(r):
            out.append({"name": r["name"], "role": r["role"], "public": r["public"], "nodes": r.get("nodes")})
    return out


def _bound(r: dict) -> bool:
    """A principal's node binding is absent or well formed (a broken one lets no one in)."""
    if r.get("nodes") is None:
        return True
    try:
        return r["role"] == "node" and isinstance(r["nodes"], str) and bool(node_ranges(r["nodes"]))
    except KeyFileError:
        return False


def credential(path) -> dict:
    """A credential file a client or node was handed: name, role, public, secret, server."""
    d = read(path)
    if not isinstance(d.get("server"), str) or len(d["server"]) != 40:
        raise KeyFileError(f"key file {path}: no 'server' key (is it a credential from `mcemu keys issue`?)")
    return d


class Keyring:
    """The daemon's view of principals/: public key -> (name, role, node binding or None),
    re-read when it changes (a revocation takes effect without a restart)."""

    def __init__(self, home: Path):
        self.dir = keys_dir(home) / "principals"
        self._stamp = None
        self._by_key: dict[str, tuple[str, str, str | None]] = {}
        self.generation = 0  # how many times it changed

    def lookup(self, public_z85: str):
        self.reload()
        return self._by_key.get(public_z85)

    def get(self, public_z85: str):
        """``lookup`` as of the last reload."""
        return self._by_key.get(public_z85)

    def reload(self) -> bool:
        """Re-read principals/ if it changed since; True when it did. The stamp is its entries'
        names and inodes (every issue and revoke adds, replaces or removes one), not only the
        directory's mtime, whose clock may not tell apart two changes within a tick."""
        try:
            with os.scandir(self.dir) as it:
                stamp = tuple(sorted((e.name, e.inode()) for e in it))
        except OSError:
            stamp = None
        if stamp == self._stamp:
            return False
        self._stamp = stamp
        self.generation += 1
        self._by_key = {p["public"]: (p["name"], p["role"], p["nodes"]) for p in principals(self.dir.parent.parent)}
        return True


__all__ = ["ROLES", "KeyFileError", "Keyring", "binds", "credential", "init", "initialized", "issue", "keys_dir",
           "node_ranges", "principals", "read", "revoke", "server"]
