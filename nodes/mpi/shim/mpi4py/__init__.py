"""mcemu's stand-in for mpi4py inside a job of the emulated multicomputer: ``mpi4py.MPI`` is
nodes.mpi.MPI (mpi4py's interface over the cluster's interconnect). It is found first because
the node agent (or ``python -m nodes.mpi.local``) puts nodes/mpi/shim first on PYTHONPATH;
outside a job a real mpi4py, if installed, is found as usual."""
from types import SimpleNamespace

__version__ = "3.1.6+mcemu"
__all__ = ["MPI", "rc"]

# mpi4py.rc: programs set these flags before importing MPI; here they change nothing
rc = SimpleNamespace(initialize=True, threads=True, thread_level="multiple", finalize=None,
                     fast_reduce=True, recv_mprobe=True, irecv_bufsz=32768, errors="exception")


def get_include() -> str:
    raise NotImplementedError("mpi4py's get_include is not supported by mcemu")


def get_config() -> dict:
    return {}


def profile(*args, **kwargs) -> None:
    raise NotImplementedError("mpi4py's profile is not supported by mcemu")
