"""A rank's clock where the interconnect can read it: 32 bytes of shared memory.

In virtual time a rank that computes sends no frame, yet the others may wait on its clock
(emulator.live.vtime: nobody is answered past a computing rank's bound). The rank publishes how
its clock is made (:class:`ClockWriter`, nodes.mpi.live): the clock at the last moment it was
set, whether the program is inside an MPI call (``paused``: the clock does not move) and, when
not, the thread CPU time at which the program resumed and the gauge's factor for the interval
that began then (nodes.mpi.cpuclock; 1 with ``--cpu-clock raw``). The interconnect reads it
(:class:`ClockReader`) with the thread's CPU time from the host (/proc schedstat, never ahead of
the thread's own clock): the rank's clock is at least ``clock + scale * factor * (cpu - mark)``, exactly
the rank's own rule, so the bound needs no margin and the library's own CPU time (nodes.mpi.timing)
is never counted. The record also counts the frames the rank has sent: frames still on their way
carry older clocks, so a record is used only once the interconnect has read as many (a send of
the past must not find the model already past it).

A seqlock keeps a reader from a half-written record: the writer makes the sequence odd, writes,
makes it even; a reader that sees it odd or changed tries again (and gives up after a few tries:
the bound then stays where it was, which is safe). The rank reads its CPU time while the
sequence is odd (``begin``, then ``commit``): a reader that used the record before read the
host's CPU time before that, and the clock's own bookkeeping is not the program's time. The file lives in ``$MCEMU_HOME/clocks`` (the
cluster user's; its name comes with the rank's hello).
"""
from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path

_REC = struct.Struct("<IIddQd")  # sequence, paused, clock (s), mark (thread CPU s), frames sent, factor
_SEQ = struct.Struct("<I")
SIZE = _REC.size


class ClockWriter:
    """The rank's side: ``set(clock, mark, paused, frames, factor)`` after every change, or
    ``begin()`` and then ``commit(...)`` around a read of the CPU time that the record is to hold."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.ftruncate(fd, SIZE)
            self.mm = mmap.mmap(fd, SIZE)
        finally:
            os.close(fd)
        self.seq = 0
        # until the rank has a clock (its welcome), a stopped clock at 0: it raises no bound (a
        # record of zeros would read as "computing since CPU time 0", the whole start-up)
        self.set(0.0, 0.0, True, 0)

    def set(self, clock: float, mark: float, paused: bool, frames: int, factor: float = 1.0) -> None:
        self.begin()
        self.commit(clock, mark, paused, frames, factor)

    def begin(self) -> None:
        """The record is changing: a reader keeps the bound it had (nodes.mpi.live reads the
        thread's CPU time between this and :meth:`commit`, so that the clock's own bookkeeping
        stays out of the program's time and no reader can have seen a later CPU time with the
        record before it). Idempotent until the commit."""
        if not self.seq & 1:
            self.seq += 1
            _SEQ.pack_into(self.mm, 0, self.seq)

    def commit(self, clock: float, mark: float, paused: bool, frames: int, factor: float = 1.0) -> None:
        if not self.seq & 1:
            self.begin()
        mm, seq = self.mm, self.seq
        _REC.pack_into(mm, 0, seq, 1 if paused else 0, clock, mark, frames, factor)
        self.seq = seq + 1
        _SEQ.pack_into(mm, 0, seq + 1)

    def close(self) -> None:
        try:
            self.mm.close()
            self.path.unlink()
        except (OSError, ValueError):
            pass


class ClockReader:
    """The interconnect's side: ``read()`` -> (paused, clock, mark, frames, factor) or None (no
    consistent read)."""

    def __init__(self, path: Path):
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            if os.fstat(fd).st_size != SIZE:
                raise OSError(f"{path} is not a rank's clock")
            self.mm = mmap.mmap(fd, SIZE, prot=mmap.PROT_READ)
        finally:
            os.close(fd)

    def read(self):
        mm = self.mm
        for _ in range(4):
            seq, paused, clock, mark, frames, factor = _REC.unpack_from(mm, 0)
            if seq & 1:
                continue
            if struct.unpack_from("<I", mm, 0)[0] == seq:
                return bool(paused), clock, mark, frames, factor
        return None

    def close(self) -> None:
        try:
            self.mm.close()
        except (OSError, ValueError):
            pass


__all__ = ["ClockReader", "ClockWriter", "SIZE"]
