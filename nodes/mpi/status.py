"""``MPI.Status``: what a completed receive (or a probe) matched."""
from __future__ import annotations

from nodes.mpi.constants import ANY_SOURCE, ANY_TAG, DATATYPES, UNDEFINED
from nodes.mpi.errors import SUCCESS, UnsupportedMeta, unsupported

_BYTE = DATATYPES["BYTE"]


class Status(metaclass=UnsupportedMeta):
    """``source``, ``tag``, ``error`` and the message's length in bytes (``count``); for an
    object message the length is its pickled size, as in mpi4py."""

    __slots__ = ("source", "tag", "error", "count", "cancelled")

    def __init__(self, status: "Status | None" = None):
        if status is not None:
            self.source, self.tag, self.error, self.count = status.source, status.tag, status.error, status.count
        else:
            self.source, self.tag, self.error, self.count = ANY_SOURCE, ANY_TAG, SUCCESS, 0
        self.cancelled = False

    def _set(self, source: int, tag: int, nbytes: int) -> None:
        self.source, self.tag, self.count, self.error = source, tag, nbytes, SUCCESS

    def Get_source(self) -> int:
        return self.source

    def Get_tag(self) -> int:
        return self.tag

    def Get_error(self) -> int:
        return self.error

    def Get_count(self, datatype=_BYTE) -> int:
        """Elements of ``datatype`` received (UNDEFINED when the bytes are not a whole number)."""
        size = datatype.Get_size()
        return self.count // size if size and self.count % size == 0 else UNDEFINED

    Get_elements = Get_count

    def Is_cancelled(self) -> bool:
        return False

    def Set_source(self, source: int) -> None:
        self.source = source

    def Set_tag(self, tag: int) -> None:
        self.tag = tag

    def Set_error(self, error: int) -> None:
        self.error = error

    def __getattr__(self, name: str):
        raise unsupported(f"Status.{name}")

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.Status source={self.source} tag={self.tag} count={self.count}>"
