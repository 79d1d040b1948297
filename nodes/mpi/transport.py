"""The transport under the MPI layer (docs: iface of issue 28), and the choice of one.

A transport moves opaque payloads between the ranks of one job: ``send`` is eager (it
returns at once; messages from one rank to another arrive in the order sent) and ``wait``
hands over what has been delivered. Three exist:

- ``nodes.mpi.live.LiveTransport``: the cluster's interconnect (a task of a job; MCEMU_NET);
- ``nodes.mpi.local.LocalTransport``: socketpairs between the processes that
  ``python -m nodes.mpi.local -n N`` started (MCEMU_MPI_LOCAL), wall time;
- ``SingletonTransport``: one rank alone, as an mpi4py program run without mpiexec.

``world_transport()`` picks one, once, at the first use of MPI.COMM_WORLD.
"""
from __future__ import annotations

import os
import socket
import time
from typing import Protocol

from nodes.mpi.errors import TransportError


class Transport(Protocol):
    rank: int
    size: int

    def send(self, dest: int, payload: bytes, nbytes: int) -> None: ...

    def wait(self, block: bool, what: str) -> list[tuple[int, bytes]]: ...

    def sleep(self, seconds: float) -> None: ...

    def wtime(self) -> float: ...

    def processor_name(self) -> str: ...

    def close(self) -> None: ...


class WallTransport:
    """What the transports in wall time share: the clock, the processor's name, a real sleep."""

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def wtime(self) -> float:
        return time.perf_counter()

    def processor_name(self) -> str:
        return socket.gethostname()


class SingletonTransport(WallTransport):
    """A world of one rank: sends to itself are queued; waiting on an empty queue can never
    end, so it is reported as a deadlock instead of hanging."""

    rank, size = 0, 1

    def __init__(self):
        self._queue: list[tuple[int, bytes]] = []

    def send(self, dest: int, payload: bytes, nbytes: int) -> None:
        if dest != 0:
            raise TransportError("bad-rank", f"rank {dest} is outside a world of 1")
        self._queue.append((0, payload))

    def wait(self, block: bool, what: str) -> list[tuple[int, bytes]]:
        got, self._queue = self._queue, []
        if block and not got:
            raise TransportError("deadlock", f"rank 0 (the only rank) waits for {what}, which no rank can send")
        return got

    def close(self) -> None:
        pass


_world: Transport | None = None


def world_transport() -> Transport:
    """The transport of MPI.COMM_WORLD, made at the first call: MCEMU_MPI_LOCAL set ->
    LocalTransport; else MCEMU_NET set -> LiveTransport; else a world of one."""
    global _world
    if _world is None:
        if os.environ.get("MCEMU_MPI_LOCAL"):
            from nodes.mpi.local import LocalTransport
            _world = LocalTransport.from_env()
        elif os.environ.get("MCEMU_NET"):
            from nodes.mpi.live import LiveTransport
            _world = LiveTransport()
        else:
            _world = SingletonTransport()
    return _world
