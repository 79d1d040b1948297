"""``MPI.Comm``: a communicator's identity and its point-to-point calls, both APIs.

The object API (lower-case: ``send``, ``recv``, ``isend``, ``irecv``, ``sendrecv``,
``probe``, ``iprobe``) pickles with protocol 5; the buffer API (``Send``, ``Recv``,
``Isend``, ``Irecv``, ``Sendrecv``, ``Sendrecv_replace``, ``Probe``, ``Iprobe``,
``Send_init``/``Recv_init``) copies from and into buffers (nodes.mpi.buffers). Every send
is eager and completes at once, so the synchronous, buffered and ready modes (``Ssend``,
``Bsend``, ``Rsend``, ``issend``...) are the standard one. PROC_NULL as a peer completes at
once (a receive gets source PROC_NULL, tag ANY_TAG, 0 bytes). A peer outside the
communicator (ERR_RANK), a negative tag other than a receive's ANY_TAG (ERR_TAG) and a
message above MAX_MESSAGE (ERR_COUNT) raise MPI.Exception in this rank; nothing is sent.

A communicator is a group (its ranks' world ranks) and a pair of context ids (matching).
MPI.COMM_WORLD and MPI.COMM_SELF resolve their transport at first use (``_lazy``).
"""
from __future__ import annotations

import os
import pickle
import sys

from nodes.mpi.buffers import message
from nodes.mpi.constants import (ANY_SOURCE, ANY_TAG, APPNUM, CONGRUENT, IDENT, IO, LASTUSEDCODE, PROC_NULL, SIMILAR,
                                 TAG_MAX, TAG_UB, UNDEFINED, UNEQUAL, UNIVERSE_SIZE, WTIME_IS_GLOBAL)
from nodes.mpi.errors import ERR_COMM, ERR_LASTCODE, ERR_RANK, ERR_TAG, MPIException, UnsupportedMeta, unsupported
from nodes.mpi.envelope import BUF, HEAD, OBJ
from nodes.mpi.matching import engine
from nodes.mpi.request import Prequest, Request

_STATE = frozenset(("_eng", "_group", "_rank", "_size", "_ctx", "_m", "_cm", "_cname"))
# the names MPI gives the predefined communicators (by context id); any other starts as ""
_NAMES = {0: "MPI_COMM_WORLD", 2: "MPI_COMM_SELF"}
# Get_attr: the predefined attributes, as MPICH answers them under mpiexec (IO: every rank
# may do I/O; clocks are not synchronised; UNIVERSE_SIZE is not set)
_ATTRS = {TAG_UB: TAG_MAX, IO: ANY_SOURCE, WTIME_IS_GLOBAL: 0, APPNUM: 0, UNIVERSE_SIZE: None,
          LASTUSEDCODE: ERR_LASTCODE}


class Comm(metaclass=UnsupportedMeta):
    def __init__(self, lazy: "str | Comm | None" = None, name: str = ""):
        if isinstance(lazy, Comm):  # MPI.Intracomm(comm): another object for the same handle
            if lazy.__dict__.get("_lazy") not in (None, "null"):
                lazy._resolve()
            self.__dict__.update(lazy.__dict__)
            return
        # a communicator made without a handle (MPI.Comm()) is COMM_NULL, as in mpi4py
        self._lazy, self._name = lazy or "null", name
        self._errhandler = None

    def _setup(self, eng, group: tuple, ctx: int, name: str) -> None:
        self._eng, self._group, self._ctx, self._name = eng, group, ctx, name
        if "_cname" not in self.__dict__:  # a Set_name before first use is kept
            self._cname = _NAMES.get(ctx, "")
        self._size = len(group)
        self._rank = group.index(eng.rank)
        self._m = eng.register(ctx, group, name)
        self._cm = eng.register(ctx + 1, group, f"{name}'s collectives")
        self._lazy = None

    def _resolve(self) -> None:
        lazy = self._lazy
        if lazy == "null":
            raise MPIException(ERR_COMM, "MPI.COMM_NULL is not a communicator")
        eng = engine()
        if lazy == "world":
            self._setup(eng, tuple(range(eng.size)), 0, "COMM_WORLD")
        else:
            self._setup(eng, (eng.rank,), 2, "COMM_SELF")

    def __getattr__(self, name: str):
        if name in _STATE and self.__dict__.get("_lazy") is not None:
            self._resolve()
            return self.__dict__[name]
        if name.startswith("_"):
            raise AttributeError(name)
        raise unsupported(f"{type(self).__name__}.{name}")

    # handles: equal when they name the same communicator; every null one is COMM_NULL (a
    # freed one included). Unhashable, as mpi4py's (equality changes when one is freed).
    def _handle(self):
        lazy = self.__dict__.get("_lazy")
        return lazy if lazy is not None else (id(self._eng), self._ctx)

    def __eq__(self, other) -> bool:
        if not isinstance(other, Comm):
            return NotImplemented
        return self is other or self._handle() == other._handle()

    def __ne__(self, other) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None

    def __bool__(self) -> bool:
        return self._lazy != "null"

    # -- identity ---------------------------------------------------------------------------

    def Get_rank(self) -> int:
        return self._rank

    def Get_size(self) -> int:
        return self._size

    rank = property(Get_rank)
    size = property(Get_size)

    def Get_name(self) -> str:
        return self._cname

    def Set_name(self, name: str) -> None:
        self._cname = name

    name = property(Get_name, Set_name)

    def Get_group(self):
        from nodes.mpi.group import Group
        return Group(self._group, self._eng.rank)

    group = property(Get_group)

    def Is_inter(self) -> bool:
        return False

    def Is_intra(self) -> bool:
        return True

    is_inter = property(Is_inter)
    is_intra = property(Is_intra)

    def Get_topology(self) -> int:
        return UNDEFINED

    topology = property(lambda self: self.Get_topology())

    def Compare(self, other: "Comm") -> int:
        if self == other:
            return IDENT
        if self._group == other._group:
            return CONGRUENT
        return SIMILAR if sorted(self._group) == sorted(other._group) else UNEQUAL

    def Get_attr(self, keyval: int):
        if keyval not in _ATTRS:
            raise unsupported(f"Comm.Get_attr({keyval}) (a keyval other than TAG_UB, IO, WTIME_IS_GLOBAL, "
                              "APPNUM, UNIVERSE_SIZE, LASTUSEDCODE)")
        return _ATTRS[keyval]

    def Get_errhandler(self):
        return self._errhandler

    def Set_errhandler(self, errhandler) -> None:
        self._errhandler = errhandler  # kept; errors are always raised as MPI.Exception

    def Free(self) -> None:
        if self._lazy == "null" or self._ctx < 4:
            raise MPIException(ERR_COMM, f"{self._name} cannot be freed")
        self._eng.unregister(self._ctx)
        self._eng.unregister(self._ctx + 1)
        self._lazy = "null"

    def Abort(self, errorcode: int = 0):
        """End this rank at once with ``errorcode`` (its job then fails, as mpiexec's does), after
        MPICH's line on stderr. The status is the code's low byte, as MPICH's mpiexec gives
        (Abort(-1): 255), but never 0: the cluster ends a job's other ranks only when one exits
        non-zero (mpiexec kills them whatever the code), and they must not go on waiting for this
        one. So Abort(0), and Abort(256) whose low byte is 0 (it exited 0, and the others ran on
        to their end), exit 1 where mpiexec exits 0."""
        from nodes.mpi import matching
        eng = self.__dict__.get("_eng") or matching._engine  # none made yet: no rank to say
        where = f" on node {eng.rank} (rank {eng.rank} in comm 0)" if eng is not None else ""
        tail = f" - process {eng.rank}" if eng is not None else ""
        try:
            sys.stderr.write(f"Abort({errorcode}){where}: application called MPI_Abort(MPI_COMM_WORLD, "
                             f"{errorcode}){tail}\n")
        except Exception:  # noqa: BLE001  (a closed stream must not keep the rank alive)
            pass
        for f in (sys.stdout, sys.stderr):
            try:
                f.flush()
            except Exception:  # noqa: BLE001  (a closed stream must not keep the rank alive)
                pass
        os._exit(int(errorcode) & 0xFF or 1)

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.{type(self).__name__} {self._name}>"

    # -- checks -----------------------------------------------------------------------------

    def _dest(self, dest: int):
        """The world rank of ``dest`` (None for PROC_NULL)."""
        if dest == PROC_NULL:
            return None
        if not 0 <= dest < self._size:
            raise MPIException(ERR_RANK, f"rank {dest} is outside {self._name} (size {self._size})")
        return self._group[dest]

    def _source(self, source: int) -> None:
        if source != ANY_SOURCE and source != PROC_NULL and not 0 <= source < self._size:
            raise MPIException(ERR_RANK, f"source {source} is outside {self._name} (size {self._size})")

    @staticmethod
    def _stag(tag: int) -> None:
        if not 0 <= tag <= TAG_MAX:
            raise MPIException(ERR_TAG, f"tag {tag} is not a valid send tag (0 .. {TAG_MAX})")

    @staticmethod
    def _rtag(tag: int) -> None:
        if tag != ANY_TAG and not 0 <= tag <= TAG_MAX:
            raise MPIException(ERR_TAG, f"tag {tag} is not a valid receive tag (ANY_TAG or 0 .. {TAG_MAX})")

    # -- the object API ---------------------------------------------------------------------

    def send(self, obj, dest: int, tag: int = 0) -> None:
        w = self._dest(dest)
        self._stag(tag)
        if w is not None:
            data = pickle.dumps(obj, 5)
            self._eng.send(self._ctx, w, tag, OBJ, data, len(data))

    ssend = bsend = send

    def isend(self, obj, dest: int, tag: int = 0) -> Request:
        self.send(obj, dest, tag)
        return Request._completed()

    issend = ibsend = isend

    def _irecv(self, source: int, tag: int, target) -> Request:
        self._source(source)
        self._rtag(tag)
        if source == PROC_NULL:
            return Request._completed(PROC_NULL, ANY_TAG)
        return Request._recv(self._eng, self._m, source, tag, target)

    def recv(self, buf=None, source: int = ANY_SOURCE, tag: int = ANY_TAG, status=None):
        return self._irecv(source, tag, None).wait(status)

    def irecv(self, buf=None, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Request:
        return self._irecv(source, tag, None)

    def sendrecv(self, sendobj, dest: int, sendtag: int = 0, recvbuf=None, source: int = ANY_SOURCE,
                 recvtag: int = ANY_TAG, status=None):
        self.send(sendobj, dest, sendtag)
        return self.recv(None, source, recvtag, status)

    def probe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status=None) -> bool:
        return self._probe(source, tag, status, True)

    def iprobe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status=None) -> bool:
        return self._probe(source, tag, status, False)

    Probe, Iprobe = probe, iprobe

    def _probe(self, source: int, tag: int, status, block: bool) -> bool:
        self._source(source)
        self._rtag(tag)
        if source == PROC_NULL:
            if status is not None:
                status._set(PROC_NULL, ANY_TAG, 0)
            return True
        msg = self._eng.probe(self._m, source, tag, block)
        if msg is None:
            return False
        if status is not None:
            status._set(msg[0], msg[1], len(msg[3]) - HEAD)
        return True

    # -- the buffer API ---------------------------------------------------------------------

    def Send(self, buf, dest: int, tag: int = 0) -> None:
        w = self._dest(dest)
        self._stag(tag)
        if w is not None:
            data = message(buf).data()
            self._eng.send(self._ctx, w, tag, BUF, data, data.nbytes)

    Ssend = Bsend = Rsend = Send

    def Isend(self, buf, dest: int, tag: int = 0) -> Request:
        self.Send(buf, dest, tag)
        return Request._completed()

    Issend = Ibsend = Irsend = Isend

    def Recv(self, buf, source: int = ANY_SOURCE, tag: int = ANY_TAG, status=None) -> None:
        self._irecv(source, tag, message(buf)).Wait(status)

    def Irecv(self, buf, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Request:
        return self._irecv(source, tag, message(buf))

    def Sendrecv(self, sendbuf, dest: int, sendtag: int = 0, recvbuf=None, source: int = ANY_SOURCE,
                 recvtag: int = ANY_TAG, status=None) -> None:
        target = message(recvbuf)
        self.Send(sendbuf, dest, sendtag)
        self._irecv(source, recvtag, target).Wait(status)

    def Sendrecv_replace(self, buf, dest: int, sendtag: int = 0, source: int = ANY_SOURCE,
                         recvtag: int = ANY_TAG, status=None) -> None:
        self.Send(buf, dest, sendtag)   # the bytes are copied into the message before the receive
        self.Recv(buf, source, recvtag, status)

    def Send_init(self, buf, dest: int, tag: int = 0) -> Prequest:
        def start(req):
            self.Send(buf, dest, tag)
            req._active, req._done, req._src, req._rtag, req._nbytes = True, True, ANY_SOURCE, ANY_TAG, 0
        return Prequest._persistent(start)

    def Recv_init(self, buf, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Prequest:
        target = message(buf)

        def start(req):
            self._source(source)
            self._rtag(tag)
            req._eng, req._m, req._source, req._tag, req._target = self._eng, self._m, source, tag, target
            req._active, req._done, req._error = True, source == PROC_NULL, None
            req._src, req._rtag, req._nbytes = PROC_NULL, ANY_TAG, 0
            if source != PROC_NULL:
                self._eng.post(self._m, req)
        return Prequest._persistent(start)

