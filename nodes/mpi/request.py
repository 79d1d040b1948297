"""``MPI.Request`` and ``MPI.Prequest``: a send completes at once (the transport is eager:
MPI's standard mode with buffering); a receive completes when the engine matches it,
during any later MPI call. ``wait``/``test`` (object API) return the received object;
``Wait``/``Test`` (buffer API) return True / a flag. A completed request becomes inactive
(REQUEST_NULL's state): waiting on it again returns at once with an empty status.

Handles, as mpi4py's: a request that is not active and not persistent (one completed, freed,
or made as ``MPI.Request()``) is null: false, and equal to MPI.REQUEST_NULL. A persistent one
stays true when inactive (it can be started again) until it is freed. A statuses list given
to the calls on many requests is filled, and extended, to one Status a request.
"""
from __future__ import annotations

import pickle

from nodes.mpi.constants import ANY_SOURCE, ANY_TAG, UNDEFINED
from nodes.mpi.errors import MPIException, UnsupportedMeta, unsupported
from nodes.mpi.envelope import HEAD, OBJ
from nodes.mpi.matching import awaiting_all, awaiting_any
from nodes.mpi.status import Status

_FIELDS = ("_eng", "_m", "_source", "_tag", "_target", "_done", "_active", "_src", "_rtag",
           "_nbytes", "_kind", "_payload", "_error", "_start")


class Request(metaclass=UnsupportedMeta):
    __slots__ = _FIELDS

    def __init__(self, request: "Request | None" = None):
        self._eng = self._m = self._target = self._payload = self._error = self._start = None
        self._source, self._tag = ANY_SOURCE, ANY_TAG
        self._done, self._active = True, False
        self._src, self._rtag, self._nbytes, self._kind = ANY_SOURCE, ANY_TAG, 0, OBJ

    @classmethod
    def _recv(cls, eng, m, source: int, tag: int, target):
        """A receive into ``target`` (a buffers.Buf) or, with None, of an object."""
        req = cls()
        req._eng, req._m, req._source, req._tag, req._target = eng, m, source, tag, target
        req._done, req._active = False, True
        eng.post(m, req)
        return req

    @classmethod
    def _completed(cls, source: int = ANY_SOURCE, tag: int = ANY_TAG):
        req = cls()
        req._active, req._src, req._rtag = True, source, tag
        return req

    def _complete(self, src: int, tag: int, kind: int, payload: bytes) -> None:
        self._src, self._rtag, self._kind, self._done = src, tag, kind, True
        self._nbytes = len(payload) - HEAD
        if self._target is None:
            self._payload = payload
        else:
            try:
                self._target.fill(payload, HEAD)
            except MPIException as e:
                self._error = e

    def _what(self) -> str:
        return self._m.describe("recv", self._source, self._tag)

    def _finish(self, status):
        """The completed request's status and value; it becomes inactive."""
        if not self._active:
            if status is not None:
                status._set(ANY_SOURCE, ANY_TAG, 0)
            return None
        self._active = False
        if status is not None:
            status._set(self._src, self._rtag, self._nbytes)
        if self._error is not None:
            err, self._error = self._error, None
            raise err
        payload, self._payload = self._payload, None
        if payload is None:
            return None
        body = memoryview(payload)[HEAD:]
        return pickle.loads(body) if self._kind == OBJ else bytes(body)

    def _ready(self) -> bool:
        if not self._done:
            self._eng.progress(False)
        return self._done

    def Wait(self, status=None) -> bool:
        if not self._done:
            self._eng.complete(self)
        self._finish(status)
        return True

    def wait(self, status=None):
        if not self._done:
            self._eng.complete(self)
        return self._finish(status)

    def Test(self, status=None) -> bool:
        if not (self._ready() or not self._active):
            return False
        self._finish(status)
        return True

    def test(self, status=None):
        if not (self._ready() or not self._active):
            return False, None
        return True, self._finish(status)

    def Get_status(self, status=None) -> bool:
        """Whether it completed, without completing it (the status is filled when it did)."""
        if not self._ready():
            return False
        if status is not None:
            status._set(self._src, self._rtag, self._nbytes)
        return True

    def Free(self) -> None:
        self._active, self._start = False, None

    def _null(self) -> bool:
        return not self._active and self._start is None

    def __eq__(self, other) -> bool:
        if not isinstance(other, Request):
            return NotImplemented
        return self is other or (self._null() and other._null())

    def __ne__(self, other) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None  # as mpi4py's: a request's equality changes when it completes

    def Cancel(self) -> None:
        raise unsupported("Request.Cancel")

    def __bool__(self) -> bool:
        return not self._null()

    def __getattr__(self, name: str):
        raise unsupported(f"Request.{name}")

    # -- many requests ----------------------------------------------------------------------

    @staticmethod
    def Waitall(requests, statuses=None) -> bool:
        Request.waitall(requests, statuses)
        return True

    @staticmethod
    def waitall(requests, statuses=None) -> list:
        requests = list(requests)
        wait_all(requests)
        statuses = _statuses(statuses, len(requests))
        return [r.wait(None if statuses is None else statuses[i]) for i, r in enumerate(requests)]

    @staticmethod
    def Waitany(requests, status=None) -> int:
        return Request.waitany(requests, status)[0]

    @staticmethod
    def waitany(requests, status=None):
        active = [i for i, r in enumerate(requests) if r._active]
        if not active:
            if status is not None:
                status._set(ANY_SOURCE, ANY_TAG, 0)
            return UNDEFINED, None
        i = _until_any(requests, active)
        return i, requests[i]._finish(status)

    @staticmethod
    def Waitsome(requests, statuses=None):
        active = [i for i, r in enumerate(requests) if r._active]
        if not active:
            return None
        _until_any(requests, active)
        return _finish_done(requests, statuses)

    @staticmethod
    def Testsome(requests, statuses=None):
        active = [i for i, r in enumerate(requests) if r._active]
        if not active:
            return None
        if not any(requests[i]._ready() for i in active):
            return []
        return _finish_done(requests, statuses)

    @staticmethod
    def Testall(requests, statuses=None) -> bool:
        return Request.testall(requests, statuses)[0]

    @staticmethod
    def testall(requests, statuses=None):
        if not all(r._ready() or not r._active for r in requests):
            return False, None
        return True, Request.waitall(requests, statuses)

    @staticmethod
    def Testany(requests, status=None):
        i, flag, _ = Request.testany(requests, status)
        return i, flag

    @staticmethod
    def testany(requests, status=None):
        active = [i for i, r in enumerate(requests) if r._active]
        if not active:
            return UNDEFINED, True, None
        for i in active:
            if requests[i]._ready():
                return i, True, requests[i]._finish(status)
        return UNDEFINED, False, None


def wait_all(requests) -> None:
    """Progress until every one of ``requests`` is done, each wait naming all that are left
    (matching.awaiting_all): one wake-up for the lot, not one for each. Only on a transport
    that wakes such a wait once (``waits_all``: virtual time); elsewhere a wait returns at each
    message anyway, and naming what is left each time cost O(n) a message (the callers then
    complete the requests one by one, as before)."""
    left = [r for r in requests if r._active and not r._done and r._eng is not None]
    if len(left) < 2 or not getattr(left[0]._eng.t, "waits_all", False):
        return
    while len(left) > 1:
        left[0]._eng.progress(True, awaiting_all([r._what() for r in left]))
        left = [r for r in left if not r._done]


def _until_any(requests, active: list) -> int:
    """Progress until one of ``requests[i]`` (i in active) is done: the first such i."""
    eng = next((requests[i]._eng for i in active if requests[i]._eng is not None), None)
    while True:
        for i in active:
            if requests[i]._done:
                return i
        eng.progress(True, awaiting_any([requests[i]._what() for i in active]))


def _finish_done(requests, statuses) -> list:
    """Waitsome/Testsome: finish every active request that is done; their indices, in order,
    ``statuses[k]`` the status of the k-th (MPI's array_of_statuses)."""
    done = [j for j, r in enumerate(requests) if r._active and r._done]
    statuses = _statuses(statuses, len(done))
    for k, j in enumerate(done):
        requests[j]._finish(None if statuses is None else statuses[k])
    return done


def _statuses(statuses, n: int):
    """mpi4py's rule: a list shorter than ``n`` is extended with new Status objects (another
    sequence is used as it is; a status beyond it is not reported)."""
    if statuses is None:
        return None
    if isinstance(statuses, list) and len(statuses) < n:
        statuses.extend(Status() for _ in range(n - len(statuses)))
    return [statuses[i] if i < len(statuses) else None for i in range(n)]


class Prequest(Request):
    """A persistent request (Send_init/Recv_init): ``Start`` begins one more operation."""

    __slots__ = ()

    @classmethod
    def _persistent(cls, start):
        req = cls()
        req._start = start
        return req

    def Start(self) -> None:
        self._start(self)

    @staticmethod
    def Startall(requests) -> None:
        for r in requests:
            r.Start()


REQUEST_NULL = Request()
