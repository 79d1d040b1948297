"""The node registry: which process plays each node, and whether it is alive.

Liveness tells a dead node from a busy one (docs/ARCHITECTURE.md, "Liveness"):

* A node process on this host (it registered over ipc, from this host) is *watched*: the daemon
  holds a pidfd of it (``watch``), which the kernel reports readable the moment the process
  ends, so its death is known at once, whatever the load. Its silence means only that it is
  slow: it is down for silence only after ``hang`` seconds (``mcemu up --hang``, 30 by default:
  an agent stopped or deadlocked),
  never for the fractions of a second that CPU contention costs.
* A node elsewhere (tcp) can only be judged by its silence, the ZeroMQ guide's Paranoid Pirate:
  every message from a node counts as a heartbeat, and a node silent for ``liveness`` intervals
  (``expiry`` seconds, 3 x 200 ms by default) is down.

The daemon heartbeats every node it has sent nothing else for half an interval (the agents
judge the daemon by it). Heartbeats go out in waves (``heartbeat_wave``): one group of nodes (node id mod ``groups``)
every ``heartbeat / groups`` seconds, so that the nodes' wake-ups and answers come in small
waves instead of one burst of every node.

Nodes start down and come up when they register: a job never waits for a node that does not
exist yet. A node that registers with another pid (or host) than before is a new incarnation:
its tasks are lost. ``down`` is the policy stack's own set (scheduler.stack.Stack.down): a
node in it is out of service for every allocation, gang rows and sequential jobs included.
The registry only keeps the facts; what a node going down means for its jobs is
emulator.live.manager's business.
"""
from __future__ import annotations

import os
import socket

from emulator.live import protocol as P

HOST = socket.gethostname()


class NodeRec:
    __slots__ = ("id", "ident", "pid", "host", "last", "sent", "jobs", "hb", "principal", "pidfd", "quiet")

    def __init__(self, id):
        self.id = id
        self.ident: bytes | None = None  # its ZeroMQ routing id while connected
        self.pid = self.host = None  # its process (an incarnation)
        self.last = 0.0  # monotonic time it was last heard from
        self.sent = 0.0  # monotonic time it was last sent something
        self.jobs: set[int] = set()  # jobs with a task placed here
        # a frame equal to this node's heartbeat needs no decoding (256 nodes send 1280 a second)
        self.hb = P.heartbeat_frame(id)
        self.principal = None  # who registered it (emulator.live.auth); another may not take it over live
        self.pidfd: int | None = None  # a pidfd of its process while it is watched (a process of this host)
        self.quiet = 0.0  # its longest silence so far (seconds): how slow a busy host made it


class NodeRegistry:
    def __init__(self, topology, down, heartbeat: float, liveness: int, hang: float = 30.0):
        self.nodes = [NodeRec(i) for i in range(topology.size)]
        self.by_ident: dict[bytes, NodeRec] = {}
        self.down = down
        self.hb = heartbeat
        self.liveness = liveness
        self.expiry = heartbeat * liveness
        # seconds of silence after which a watched node whose process is alive is taken for hung
        # (a stopped or deadlocked agent; ``mcemu up --hang``): far above any scheduling delay
        self.hang = max(hang, self.expiry)

    def attach(self, ident: bytes, nr: NodeRec, pid, host, wall: float) -> bool:
        """Node ``nr`` registered from connection ``ident`` as process ``pid`` on ``host``;
        True when that is a new incarnation (its previous process's tasks are lost)."""
        new_incarnation = nr.pid is not None and (nr.pid, nr.host) != (pid, host)
        if nr.ident is not None and nr.ident != ident:
            self.by_ident.pop(nr.ident, None)
        prev = self.by_ident.get(ident)
        if prev is not None and prev is not nr:  # one connection cannot be two nodes
            prev.ident = None
        nr.ident, nr.last = ident, wall
        self.by_ident[ident] = nr
        nr.pid, nr.host = pid, host
        return new_incarnation

    def detach(self, nr: NodeRec) -> None:
        """Forget node ``nr``'s connection (it went down or left)."""
        if nr.ident is not None:
            self.by_ident.pop(nr.ident, None)
        nr.ident = None

    def heard(self, nr: NodeRec, wall: float) -> None:
        """Node ``nr`` spoke at ``wall``."""
        gap = wall - nr.last
        if gap > nr.quiet and nr.ident is not None:
            nr.quiet = gap
        nr.last = wall

    def expired(self, wall: float) -> list[NodeRec]:
        """Nodes in service that missed their heartbeats: a watched node (its process alive on
        this host) only after ``hang`` seconds of silence."""
        limit, hung = wall - self.expiry, wall - self.hang
        down = self.down
        return [nr for nr in self.nodes
                if nr.last < (limit if nr.pidfd is None else hung) and nr.id not in down]

    def watch(self, nr: NodeRec, local: bool) -> int | None:
        """Hold a pidfd of node ``nr``'s process when it runs on this host (``local``: it came
        over ipc, so the pid it gave is one of this host's); returns the fd to wait on (readable
        once the process has ended), or None where it cannot be watched (another host, no
        pidfd_open: Linux before 5.3), which leaves the node to its heartbeats."""
        self.unwatch(nr)
        if not local or nr.host != HOST or not isinstance(nr.pid, int) or not hasattr(os, "pidfd_open"):
            return None
        try:
            nr.pidfd = os.pidfd_open(nr.pid)
        except OSError:  # no such process (it died already) or not permitted
            return None
        return nr.pidfd

    def unwatch(self, nr: NodeRec) -> int | None:
        """Stop watching ``nr``; returns the fd that was closed, if any."""
        fd, nr.pidfd = nr.pidfd, None
        if fd is not None:
            os.close(fd)
        return fd

    def heartbeat_wave(self, wall: float, outbox: list, group: int = 0, groups: int = 1) -> None:
        """Heartbeat the connected nodes of one group (node id mod ``groups``) that were sent
        nothing for half an interval. Called every ``hb / groups`` with the next group, so
        each node hears from the daemon at least once per interval: a job's ``run`` messages
        arriving during a burst of 256 heartbeats waited for all of them."""
        frame = HEARTBEAT
        limit = wall - self.hb / 2
        for nr in self.nodes[group::groups]:
            if nr.ident is not None and nr.sent < limit:
                outbox.append((nr.ident, frame))

    def expect_back(self, incarnations: dict, wall: float, grace: float) -> None:
        """After a daemon restart: the nodes that were in service get ``grace`` seconds to
        register again (``incarnations``: node -> (pid, host) they last registered with). One
        whose process still lives on this host gets ``hang`` seconds, as a watched node would:
        on a busy host its reconnect and hello can take longer than the grace (a soak under a
        load average of 40 saw six live nodes declared down 5 s after a recovery)."""
        for nr in self.nodes:
            if nr.id not in self.down:
                nr.pid, nr.host = incarnations.get(nr.id, (None, None))
                wait = self.hang if nr.host == HOST and _alive(nr.pid) else grace
                nr.last = wall + wait - self.expiry  # expires after the wait unless it registers

    def row(self, nr: NodeRec, state: str) -> dict:
        """One row of ``mcemu nodes --json``."""
        return {"node": nr.id, "state": state, "jobs": sorted(nr.jobs), "pid": nr.pid, "host": nr.host,
                "connected": nr.ident is not None, "watched": nr.pidfd is not None,
                "max_silence": round(nr.quiet, 3)}


HEARTBEAT = P.heartbeat_frame()


def _alive(pid) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's: not one of ours (a reused pid), treated as gone
        return False
    return True

__all__ = ["HEARTBEAT", "HOST", "NodeRec", "NodeRegistry"]
