"""mpi4py.util.pkl5: communicators whose object API pickles with protocol 5 and sends the
out-of-band buffers apart, which lets mpi4py move pickles above MPI's 2 GiB count limit.
mcemu's object API pickles with protocol 5 already and cuts a message into 512 KiB packets
itself, so these wrappers are the wrapped communicator's own calls (point-to-point and
collectives alike); the limit is mcemu's: one message (a pickle) is at most 64 MiB
(nodes.mpi.errors.MAX_MESSAGE; a larger one raises MPI.Exception ERR_COUNT, nothing sent).
As in mpi4py, ``irecv`` is not offered on them (RuntimeError) and ``Request`` is MPI.Request;
``Intercomm`` and ``Message`` (matched probes) are not offered by mcemu."""
from mpi4py import MPI

from nodes.mpi.errors import unsupported

__all__ = ["Request", "Message", "Comm", "Intracomm", "Intercomm"]

Request = MPI.Request


class Comm(MPI.Comm):
    """Communicator: ``pkl5.Comm(comm)`` is another handle of ``comm``."""

    def irecv(self, buf=None, source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG):
        raise RuntimeError("unsupported")  # mpi4py's pkl5 has no non-blocking receive either


class Intracomm(Comm, MPI.Intracomm):
    """Intracommunicator."""


class Intercomm(Comm):
    def __init__(self, comm=None):
        raise unsupported("mpi4py.util.pkl5.Intercomm (intercommunicators)")


class Message:
    def __init__(self, message=None):
        raise unsupported("mpi4py.util.pkl5.Message (matched probes)")

    @classmethod
    def probe(cls, comm, source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=None):
        raise unsupported("mpi4py.util.pkl5.Message.probe (matched probes)")

    iprobe = probe
