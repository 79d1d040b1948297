"""The interconnect's tcp port (issue 30): the network of the tasks of nodes on other hosts.

A node joined with ``mcemu node --connect tcp://HOST:P --key FILE`` runs its tasks on its own
host, where the interconnect's ipc socket is out of reach. So when the daemon listens on tcp
(``mcemu up --listen tcp://HOST:P``) the interconnect also listens on ``tcp://HOST:P+2``
(emulator.live.home.net_for; P+1 is the daemon's events), and the node's agent gives its tasks
that address (MCEMU_NET) and its own credential file (MCEMU_NET_KEY), which nodes.comm uses.

Who may connect: the port is CURVE with the cluster's server key, like the daemon's, and the
daemon's own ZAP handler (emulator.live.auth.Zap, the cluster's keyring) decides, narrowed to
``node`` and ``admin`` keys: a task is its node's, so it holds its node's key; a client key is
refused at the handshake (it would have no rank to play, only other jobs' to claim). With
``--insecure`` the port is plain, as the daemon's is then. The interconnect's checks of each
hello (emulator.live.netjobs: the rank's task secret among them) apply to these connections as
to the local ones. A revoked key ends its open connections here as on the daemon's port
(``Zap.watch``, ``Zap.vet``): each later frame of one is answered ``revoked`` and dropped, and
nothing more is sent to it (the daemon meanwhile takes its node down, which ends its jobs).

Where the interconnect learns the daemon's address: ``endpoints.json``, which the daemon writes
before it serves; ``mcemu up`` and the daemon's keeper (emulator.live.netkeeper) both start the
interconnect after that, and a recovered daemon listens where the dead one did.

Inside the interconnect a connection of this port is named ``(REMOTE, routing id)``: a name no
peer of the ipc socket (whose names are bytes) can forge, which also says where a reply goes.
A remote task's pid and published clock are its host's, not the interconnect's: its hello's
``pid`` and ``clock`` are dropped, and in virtual time its clock moves by its frames alone
(emulator.live.vtime: a rank without either is bounded by the clock of its last frame). In
dilated time its messages are timed by the same model as every other; their due times are the
interconnect's clock, which a task on another host translates with the offset its welcome
gives (``now``, when the protocol carries it: see ``WELCOME_NOW``).
"""
from __future__ import annotations

import logging
from pathlib import Path

import zmq

from emulator.live import auth
from emulator.live import home as homemod
from emulator.live import protocol as P
from emulator.live import sockets

log = logging.getLogger("mcemu.interconnect")

REMOTE = "tcp"  # the first half of a tcp connection's name (module docstring)
ROLES = (b"node", b"admin")  # the keys that may reach the network: a task's node's, the admin's
# the welcome of a remote task carries the interconnect's clock (nodes.comm: the offset between
# the hosts' monotonic clocks) once the protocol has the field
WELCOME_NOW = "now" in P.SCHEMAS["net_welcome"]


class NodeZap(auth.Zap):
    """The daemon's ZAP handler, letting in only ``ROLES``."""

    def _decide(self, req):
        reply = super()._decide(req)
        role = reply[4].partition(b":")[0]
        if reply[2] != b"200" or role in ROLES:
            return reply
        self.refused += 1
        if self.refused <= 10 or self.refused % 1000 == 0:
            log.warning("refused a %s key (%s) on the network's tcp port: only node and admin keys",
                        role.decode(errors="replace"), reply[4].decode(errors="replace"))
        return [b"1.0", reply[1], b"400", b"only node and admin keys may reach the network", b"", b""]


_MORE, _LAST = int(zmq.SNDMORE | zmq.NOBLOCK), int(zmq.NOBLOCK)


class Port:
    """The tcp port beside the daemon's (module docstring): its ROUTER (``sock``), ZAP handler
    (``zap``, None when ``--insecure``), ``endpoint`` and who each connection is (``peers``:
    routing id -> emulator.live.auth.Principal, from its first frame's ZAP metadata)."""

    def __init__(self, sock, zap, endpoint: str):
        self.sock, self.zap, self.endpoint = sock, zap, endpoint
        self.peers: dict = {}

    @classmethod
    def listen(cls, ctx, home: Path, hwm: int):
        """The port, or None when the daemon listens on ipc only; OSError saying why when it
        cannot bind."""
        eps = homemod.read_json(Path(home) / "endpoints.json") or {}
        control = eps.get("control_tcp")
        if not control or not control.startswith("tcp://"):
            return None
        ep = homemod.net_for(control)
        r = sockets.router(ctx, hwm)
        zap = None
        if not eps.get("insecure"):
            zap = NodeZap(ctx, home)  # before the bind: without a handler libzmq lets every key in
            auth.curve_server(r, home)
        try:
            r.bind(ep)
        except zmq.ZMQError as e:
            r.close(linger=0)
            if zap is not None:
                zap.close()
            raise OSError(f"cannot listen on {ep} (the daemon's port {control.rpartition(':')[2]} + 2, where nodes "
                          f"on other hosts look for the network): {e}") from None
        return cls(r, zap, r.getsockopt(zmq.LAST_ENDPOINT).decode())

    def admit(self, frames: list) -> list | None:
        """A message read with copy=False: its frames as bytes, the first the connection's name
        ``(REMOTE, routing id)``; None (answered ``revoked``) from a connection whose key was
        revoked since its handshake."""
        ident = frames[0].bytes
        p = self.peers.get(ident)
        if p is None:
            if len(self.peers) > 100_000:  # ids of connections long gone
                self.peers.clear()
            p = auth.from_frame(frames[-1])
            p = self.peers[ident] = self.zap.vet(p) if self.zap is not None else p
        if p.role == "revoked":
            self._put(ident, P.encode_unchecked("error", id=None, code="revoked", message=(
                f"the key of {p.name!r} was revoked: this connection is refused")))
            return None
        return [(REMOTE, ident), *(f.bytes for f in frames[1:])]

    def watch(self, kernel) -> None:
        """Revocations end open connections, as on the daemon's port (emulator.live.auth.Zap.watch)."""
        if self.zap is not None:
            self.zap.watch(kernel, self.peers, lambda idents: None)  # marked: ``admit`` and ``send`` refuse them

    def send(self, ident: bytes, frame: bytes) -> bool:
        p = self.peers.get(ident)
        if p is not None and p.role == "revoked":
            return False  # a revoked key hears nothing more, its own rank's messages included
        return self._put(ident, frame)

    def _put(self, ident: bytes, frame: bytes) -> bool:
        try:
            self.sock.send(ident, _MORE)
            self.sock.send(frame, _LAST)
            return True
        except zmq.ZMQError:
            return False

    def close(self) -> None:
        self.sock.close(linger=0)
        if self.zap is not None:
            self.zap.close()


__all__ = ["NodeZap", "Port", "REMOTE", "ROLES", "WELCOME_NOW"]
