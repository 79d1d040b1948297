"""The namespace a program sees as ``mpi4py.MPI`` (nodes/mpi/shim makes ``from mpi4py import
MPI`` this module inside a job). What mpi4py has and this does not raises
NotImplementedError naming it (a module ``__getattr__``; the classes have their own).
"""
from __future__ import annotations

import sys as _sys

from nodes.mpi import errors as _errors
from nodes.mpi import timing as _timing
from nodes.mpi.comm import Comm
from nodes.mpi.constants import *  # noqa: F401,F403  (PROC_NULL, ANY_SOURCE, Datatype, Op, SUM ...)
from nodes.mpi.constants import DATATYPES as _DATATYPES, THREAD_SINGLE as _THREAD
from nodes.mpi.constants import _typedict  # noqa: F401  (mpi4py's, by numpy dtype.char)
from nodes.mpi.errors import (  # noqa: F401
    ERR_ARG, ERR_BUFFER, ERR_COMM, ERR_COUNT, ERR_DIMS, ERR_GROUP, ERR_IN_STATUS, ERR_INTERN, ERR_LASTCODE,
    ERR_OP, ERR_OTHER, ERR_PENDING, ERR_RANK, ERR_REQUEST, ERR_ROOT, ERR_TAG, ERR_TOPOLOGY, ERR_TRUNCATE,
    ERR_TYPE, ERR_UNKNOWN, SUCCESS)
from nodes.mpi.group import Group
from nodes.mpi.intracomm import Intracomm
from nodes.mpi.matching import engine as _engine
from nodes.mpi.request import REQUEST_NULL, Prequest, Request  # noqa: F401
from nodes.mpi.status import Status  # noqa: F401
from nodes.mpi.topo import Cartcomm, Compute_dims  # noqa: F401

Exception = _errors.MPIException
Topocomm = Cartcomm

# virtual time counts the program's CPU time, not this library's (nodes.mpi.timing)
_timing.exclude(Comm, Intracomm, Cartcomm, Request, Prequest)

globals().update(_DATATYPES)

COMM_WORLD = Intracomm("world", "COMM_WORLD")
COMM_SELF = Intracomm("self", "COMM_SELF")
COMM_NULL = Comm("null", "COMM_NULL")
GROUP_NULL = Group()
GROUP_EMPTY = Group()


def _initialize_at_import() -> bool:
    """mpi4py's ``rc.initialize``, which a program sets before ``from mpi4py import MPI`` to call
    ``MPI.Init`` itself: the shim's (nodes/mpi/shim), or True where this module is imported
    without it."""
    return bool(getattr(getattr(_sys.modules.get("mpi4py"), "rc", None), "initialize", True))


# "initialized" is only what Is_initialized says: the transport connects at the first call that
# needs it, Init or not (MPICH fails a call before Init; a program that did not care ran here)
_state = {"finalized": False, "initialized": _initialize_at_import()}


def _init() -> None:
    if _state["initialized"]:  # MPICH's refusal, under mpi4py an MPI.Exception of class ERR_OTHER
        raise _errors.MPIException(_errors.ERR_OTHER, "Cannot call MPI_INIT or MPI_INIT_THREAD more than once")
    _state["initialized"] = True


def Init() -> None:
    _init()


# THREAD_SINGLE, where MPICH gives mpi4py's THREAD_MULTIPLE: nothing in this layer guards its
# state against calls from two threads, and a program that tests the level before it starts
# threads must not be told it may (docs/ARCHITECTURE.md: a rank progresses inside MPI calls)
def Init_thread(required: int = _THREAD) -> int:
    _init()
    return _THREAD


def Query_thread() -> int:
    return _THREAD


def Is_thread_main() -> bool:
    return True


def Is_initialized() -> bool:
    """False only before ``Init`` where ``mpi4py.rc.initialize`` was False; true after Finalize."""
    return _state["initialized"]


def Is_finalized() -> bool:
    return _state["finalized"]


def Finalize() -> None:
    """Close the transport (what it still holds is delivered); idempotent."""
    if not _state["finalized"]:
        _state["finalized"] = True
        _engine().close()


def Wtime() -> float:
    """The rank's clock in seconds: virtual time on a --net-time virtual cluster."""
    return _engine().t.wtime()


def Wtick() -> float:
    return 1e-9


def Get_processor_name() -> str:
    return _engine().t.processor_name()


def Get_version() -> tuple:
    return VERSION, SUBVERSION  # noqa: F405


def Get_library_version() -> str:
    return "mcemu MPI (mpi4py's interface over the emulated multicomputer's interconnect)"


def Get_error_class(errorcode: int) -> int:
    return errorcode


def Get_error_string(errorcode: int) -> str:
    return _errors.error_string(errorcode)


def Attach_buffer(buf):
    """Buffered sends need no buffer here (every send is eager); kept for Detach_buffer."""
    _state["buffer"] = buf


def Detach_buffer():
    return _state.pop("buffer", None)


def Pcontrol(level: int) -> None:
    pass


def __getattr__(name: str):
    raise _errors.unsupported(f"MPI.{name}")


