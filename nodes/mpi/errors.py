"""Errors of the MPI layer (nodes.mpi) and its transports, and the documented limits.

``MPIException`` is what a program sees as ``MPI.Exception``: mpi4py raises it for an MPI
error (the default error handler, ERRORS_RETURN, turned into an exception), with an error
class a program may test (``e.Get_error_class() == MPI.ERR_RANK``). The error classes keep
MPICH's numbers, so a program that prints one prints what it would under MPICH.

``TransportError`` is a transport's own failure (iface: the transport interface); the MPI
layer turns it into an ``MPIException`` of class ERR_OTHER that keeps its ``code``
("deadlock": the interconnect found the job deadlocked, the message names the ranks).
"""
from __future__ import annotations

# user bytes in one network message: 512 KiB, a frame under libzmq's 1 MiB. A longer MPI message
# goes as several such packets, one after the other (nodes.mpi.matching.Engine), as an MPI
# library cuts a long message into pieces; each is a worm of its own in the model.
PACKET = 1 << 19
MAX_MESSAGE = 1 << 26      # user bytes in one MPI message (pickled size for the object API): 64 MiB
ENVELOPE_MAX = 1024        # what the MPI layer's envelope may add to a message

SUCCESS = 0
ERR_BUFFER, ERR_COUNT, ERR_TYPE, ERR_TAG, ERR_COMM, ERR_RANK, ERR_ROOT = 1, 2, 3, 4, 5, 6, 7
ERR_GROUP, ERR_OP, ERR_TOPOLOGY, ERR_DIMS, ERR_ARG, ERR_UNKNOWN = 8, 9, 10, 11, 12, 13
ERR_TRUNCATE, ERR_OTHER, ERR_INTERN, ERR_IN_STATUS, ERR_PENDING, ERR_REQUEST = 14, 15, 16, 17, 18, 19
ERR_LASTCODE = 0x3FFFFFFF

_STRINGS = {
    SUCCESS: "No MPI error", ERR_BUFFER: "Invalid buffer pointer", ERR_COUNT: "Invalid count",
    ERR_TYPE: "Invalid datatype", ERR_TAG: "Invalid tag", ERR_COMM: "Invalid communicator",
    ERR_RANK: "Invalid rank", ERR_ROOT: "Invalid root", ERR_GROUP: "Invalid group",
    ERR_OP: "Invalid MPI_Op", ERR_TOPOLOGY: "Invalid topology", ERR_DIMS: "Invalid dimension argument",
    ERR_ARG: "Invalid argument", ERR_UNKNOWN: "Unknown error", ERR_TRUNCATE: "Message truncated",
    ERR_OTHER: "Other MPI error", ERR_INTERN: "Internal MPI error", ERR_IN_STATUS: "See the MPI_ERROR field in MPI_Status",
    ERR_PENDING: "Pending request", ERR_REQUEST: "Invalid MPI_Request",
}


def error_string(error_class: int) -> str:
    return _STRINGS.get(error_class, f"Unknown error class {error_class}")


class TransportError(RuntimeError):
    """A transport failed (``code``: "deadlock", "closed", ...; ``message`` says what)."""

    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code, self.message = code, message


class MPIException(RuntimeError):
    """``MPI.Exception``: an MPI error in this rank (``Get_error_class``: one of the ERR_*)."""

    def __init__(self, ierr: int = ERR_OTHER, detail: str = "", code: str | None = None):
        self.error_code = self.error_class = int(ierr)
        self.detail, self.code = detail, code
        super().__init__(f"{error_string(self.error_class)}: {detail}" if detail else error_string(self.error_class))

    def Get_error_class(self) -> int:
        return self.error_class

    def Get_error_code(self) -> int:
        return self.error_code

    def Get_error_string(self) -> str:
        return str(self)

    @property
    def error_string(self) -> str:
        return str(self)

    def __int__(self) -> int:
        return self.error_code

    def __eq__(self, other) -> bool:
        if isinstance(other, int):  # mpi4py compares an exception with an error code
            return self.error_code == other
        return self is other

    __hash__ = RuntimeError.__hash__


def from_transport(err: TransportError) -> MPIException:
    return MPIException(ERR_OTHER, err.message if err.code == "deadlock" else str(err), code=err.code)


class Unsupported(NotImplementedError, AttributeError):
    """A part of mpi4py this layer does not offer. An AttributeError too, so ``hasattr`` and
    ``getattr(MPI, name, default)`` (how programs probe for optional features) still work."""


def unsupported(name: str) -> Unsupported:
    return Unsupported(f"mpi4py's {name} is not supported by mcemu")


class UnsupportedMeta(type):
    """The metaclass of the MPI classes: a missing class attribute (``MPI.Comm.Get_parent``,
    ``MPI.Datatype.Create_struct``) is an Unsupported error naming it."""

    def __getattr__(cls, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        raise unsupported(f"{cls.__name__}.{name}")
