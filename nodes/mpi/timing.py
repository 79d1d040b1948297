"""The MPI library's own CPU time is not the program's: what a rank's virtual clock leaves out.

SMPI's rule (SimGrid: the computation between MPI calls is benchmarked, the calls themselves
are timed by the network model): on a ``--net-time virtual`` cluster a rank's clock advances
by the CPU time of the program's own code, times ``--cpu-scale``, and by its messages' delays.
The Python work of this MPI layer (pickling, matching, the collectives' bookkeeping) would
otherwise be a large, host-dependent share of a small program's "computation": a 64x64 Jacobi
sweep on 16 ranks is mostly library time.

:func:`exclude` wraps the public methods of the MPI classes: the outermost call pauses the
transport's clock (``pause``: the program's CPU time so far joins the clock) and resumes it on
return (``resume``: counting starts again). Transports without a clock (the local and the
singleton transports, in wall time) have no ``pause`` and are left alone.
"""
from __future__ import annotations

import functools
import os

from nodes.mpi import matching
from nodes.mpi.errors import MPIException

_FULL = os.environ.get("MCEMU_MPI_TRACEBACK") == "full"
_depth = 0  # nested MPI calls (a collective's point-to-point calls): only the outermost pauses


def _wrap(fn):
    @functools.wraps(fn)
    def timed(*args, **kw):
        global _depth
        if _depth:
            return fn(*args, **kw)
        eng = matching._engine
        t = eng.t if eng is not None else None
        pause = getattr(t, "pause", None)
        if pause is not None:
            pause()
        _depth += 1
        try:
            return fn(*args, **kw)
        except MPIException as e:
            # mpi4py's calls are compiled: a program's traceback of an MPI error ends at its own call
            # and the error, not in a dozen frames of this library's matching and collectives
            # (MCEMU_MPI_TRACEBACK=full keeps them, for whoever debugs this library)
            if _FULL:
                raise
            raise e.with_traceback(None)
        finally:
            _depth -= 1
            if pause is not None:
                t.resume()
    timed.__wrapped_mpi__ = True
    # the frame a traceback shows is the call's ("in Comm.Recv"), as mpi4py's "in mpi4py.MPI.Comm.Recv"
    timed.__code__ = timed.__code__.replace(co_name=fn.__qualname__, co_qualname=fn.__qualname__)
    return timed


def exclude(*classes) -> None:
    """Wrap the public methods that each class defines itself (module docstring)."""
    for cls in classes:
        for name, fn in list(vars(cls).items()):
            if name.startswith("_") or not callable(fn) or isinstance(fn, (staticmethod, classmethod, type)):
                continue
            if getattr(fn, "__wrapped_mpi__", False):
                continue
            setattr(cls, name, _wrap(fn))


__all__ = ["exclude"]
