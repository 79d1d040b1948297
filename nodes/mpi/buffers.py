"""The buffer API's message specifications, as mpi4py reads them.

A message is ``buf`` (a numpy array, bytes, bytearray, memoryview or any buffer object),
``[buf, datatype]``, ``[buf, count, datatype]``, ``[buf, (count, displ), datatype]`` or
``[buf, count, displ, datatype]``; the vector collectives take ``[buf, counts, displs,
datatype]``, ``[buf, (counts, displs), datatype]``, ``[buf, counts, datatype]``, ``[buf,
counts]``, ``[buf, datatype]`` or a bare buffer (see :func:`vector`). Without a datatype a
numpy array's is its dtype's (MPI._typedict) and any other buffer's is MPI.BYTE. A datatype
may differ from the array's dtype (an int64 array sent as MPI.INT is two INTs an element, as
in C); the array must then be contiguous.

Data travels as bytes in the buffer's memory order; a receive copies them in. Receiving
more bytes than the buffer holds is MPI's truncation error (ERR_TRUNCATE); fewer is fine.
A non-contiguous numpy view (a column of a C-ordered matrix) is accepted with its own dtype:
its elements are sent and received in index order.
"""
from __future__ import annotations

import numpy as np

from nodes.mpi.constants import DATATYPES, Datatype, datatype_of
from nodes.mpi.errors import ERR_BUFFER, ERR_COUNT, ERR_TRUNCATE, ERR_TYPE, MPIException

_BYTE = DATATYPES["BYTE"]
_U8 = np.dtype(np.uint8)
_DTYPES: dict = {}  # numpy dtype -> its MPI datatype (datatype_of's answer, kept)


def as_array(buf) -> np.ndarray:
    if isinstance(buf, np.ndarray):
        return buf
    try:
        return np.asarray(memoryview(buf))
    except TypeError:
        raise MPIException(ERR_BUFFER, f"{type(buf).__name__} is not a buffer (give a numpy array or a bytearray)") from None


def _datatype(dt) -> Datatype:
    if isinstance(dt, Datatype):
        return dt
    if isinstance(dt, str):
        return datatype_of(np.dtype(dt))
    raise MPIException(ERR_TYPE, f"{dt!r} is not an MPI datatype")


class Buf:
    """``count`` elements of ``dt`` at element ``displ`` of an array (``flat``: a 1-D view of
    it in memory order, or None when the array is not contiguous)."""

    __slots__ = ("arr", "flat", "dt", "count", "displ")

    def __init__(self, buf, dt=None, count=None, displ=0):
        arr = as_array(buf)
        dt = datatype_of(arr.dtype) if dt is None else _datatype(dt)
        contiguous = arr.flags.c_contiguous or arr.flags.f_contiguous
        flat = arr.reshape(-1, order="A") if contiguous else None
        if arr.dtype != dt.dtype:
            if flat is None:
                raise MPIException(ERR_BUFFER, f"a non-contiguous {arr.dtype} array given as {dt.name}")
            raw = flat.view(_U8)
            flat = raw[:len(raw) - len(raw) % dt.size].view(dt.dtype)
        self.arr, self.flat, self.dt, self.displ = arr, flat, dt, int(displ)
        total = flat.size if flat is not None else arr.size
        self.count = total - self.displ if count is None else int(count)
        if self.count < 0 or self.displ < 0 or self.displ + self.count > total:
            raise MPIException(ERR_COUNT, f"count {self.count} at {self.displ} does not fit a buffer of {total} {dt.name}")

    @property
    def nbytes(self) -> int:
        return self.count * self.dt.size

    @classmethod
    def _whole(cls, arr: np.ndarray, dt: Datatype) -> "Buf":
        """All of a 1-D contiguous array of ``dt``'s own dtype (what :func:`message` checked):
        the usual message, without __init__'s general case."""
        b = cls.__new__(cls)
        b.arr = b.flat = arr
        b.dt, b.displ, b.count = dt, 0, arr.shape[0]
        return b

    def values(self, displ: int = 0, count: int | None = None) -> np.ndarray:
        """The elements (a view where the array is contiguous)."""
        if not displ and count is None and not self.displ and self.flat is not None \
                and self.count == self.flat.shape[0]:
            return self.flat
        lo = self.displ + displ
        hi = lo + (self.count if count is None else count)
        if self.flat is not None:
            return self.flat[lo:hi]
        return np.ascontiguousarray(self.arr).reshape(-1)[lo:hi]

    def data(self, displ: int = 0, count: int | None = None) -> np.ndarray:
        """The elements' bytes (1-D uint8, contiguous) to send."""
        v = self.values(displ, count)
        return v if v.dtype is _U8 else v.view(_U8)

    def fill(self, src, off: int = 0, displ: int = 0, count: int | None = None) -> int:
        """Copy the bytes of ``src`` from ``off`` in at element ``displ``; raises ERR_TRUNCATE
        (nothing copied) when they are more than ``count`` elements. Returns the bytes copied."""
        n = len(src) - off if not isinstance(src, np.ndarray) else src.nbytes - off
        room = (self.count if count is None else count) * self.dt.size
        if n > room:
            raise MPIException(ERR_TRUNCATE, f"a message of {n} bytes for a buffer of {room} bytes")
        lo = self.displ + displ
        try:
            if self.flat is not None and self.flat.dtype is _U8 and type(src) is bytes:
                # bytes into bytes: a memoryview's copy, a third of numpy's for a small message
                memoryview(self.flat)[lo:lo + n] = memoryview(src)[off:off + n]
            elif self.flat is not None:
                start = lo * self.dt.size
                self.flat.view(_U8)[start:start + n] = np.frombuffer(src, _U8, n, off)
            else:
                k = n // self.dt.size
                self.arr.flat[lo:lo + k] = np.frombuffer(src, self.dt.dtype, k, off)
        except (ValueError, TypeError) as e:  # a read-only buffer (bytes)
            raise MPIException(ERR_BUFFER, f"cannot receive into this buffer: {e}") from None
        return n


def message(spec) -> Buf:
    """A point-to-point or collective message specification (see the module docstring)."""
    if type(spec) is list and len(spec) == 2:  # [array, datatype], the usual one: checked first
        arr, dt = spec
        if type(arr) is np.ndarray and type(dt) is Datatype and arr.ndim == 1 and arr.dtype == dt.dtype \
                and arr.flags.c_contiguous:
            return Buf._whole(arr, dt)
    elif type(spec) is np.ndarray and spec.ndim == 1 and spec.flags.c_contiguous:
        dt = _DTYPES.get(spec.dtype)
        if dt is None:
            dt = _DTYPES.setdefault(spec.dtype, datatype_of(spec.dtype))
        if dt.dtype == spec.dtype:
            return Buf._whole(spec, dt)
    if isinstance(spec, (list, tuple)) and spec and not isinstance(spec[0], (int, float)):
        buf, rest = spec[0], list(spec[1:])
        dt = rest.pop() if rest and isinstance(rest[-1], (Datatype, str)) else None
        count, displ = None, 0
        if len(rest) == 1:
            count = rest[0]
            if isinstance(count, (list, tuple)):
                count, displ = count
        elif len(rest) == 2:
            count, displ = rest
        elif rest:
            raise MPIException(ERR_BUFFER, f"a message specification of {len(spec)} items")
        return Buf(buf, dt, count, displ or 0)
    return Buf(spec)


def _integral(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _vector_items(spec):
    """(buf, counts, displs, datatype) of a vector specification, unpacked by mpi4py's rules
    (its message_vector): a 2-item ``[buf, x]`` is a datatype, a tuple ``(counts, displs)``
    or counts; a 3-item's middle tuple is ``(counts, displs)``; 4 items are all four. Only a
    tuple pairs counts with displs: a list (or an array) in that place is the counts."""
    if not isinstance(spec, (list, tuple)):
        return spec, None, None, None
    if len(spec) == 2:
        buf, counts = spec
        if isinstance(counts, (Datatype, str)):
            return buf, None, None, counts
        if isinstance(counts, tuple):
            return buf, *_pair(counts), None
        return buf, counts, None, None
    if len(spec) == 3:
        buf, counts, dt = spec
        return (buf, *_pair(counts), dt) if isinstance(counts, tuple) else (buf, counts, None, dt)
    if len(spec) == 4:
        return tuple(spec)
    raise ValueError(f"message: expecting 2 to 4 items, got {len(spec)}")  # mpi4py's errors, not MPI's


def _pair(counts_displs: tuple):
    if len(counts_displs) != 2:
        raise ValueError(f"message: a tuple in a vector specification is (counts, displs), "
                         f"got {len(counts_displs)} items")
    return counts_displs


def vector(spec, size: int):
    """A vector collective's specification: (Buf of the whole buffer, counts, displs).

    As mpi4py fills them in: no counts splits the buffer into ``size`` blocks as evenly as it
    goes (the first ``len % size`` one element longer); an integer count is every block's; no
    displacements packs the blocks in rank order, an integer one is a stride."""
    buf, counts, displs, dt = _vector_items(spec)
    b = Buf(buf, dt)
    if counts is None:
        counts = [b.count // size + (i < b.count % size) for i in range(size)]
    elif _integral(counts):
        counts = [int(counts)] * size
    counts = [int(c) for c in counts]
    if displs is None:
        displs = [sum(counts[:i]) for i in range(len(counts))]
    elif _integral(displs):
        displs = [int(displs) * i for i in range(size)]
    displs = [int(d) for d in displs]
    if len(counts) != size or len(displs) != size:
        raise MPIException(ERR_COUNT, f"counts and displs need {size} entries, got {len(counts)} and {len(displs)}")
    for c, d in zip(counts, displs):
        if c < 0 or d < 0 or (c and d + c > b.count):
            raise MPIException(ERR_COUNT, f"a block of {c} at {d} does not fit a buffer of {b.count} {b.dt.name}")
    return b, counts, displs
