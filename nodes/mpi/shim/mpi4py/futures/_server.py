"""The workers' side of mpi4py.futures: a rank that serves takes tasks from the pool's root
until the root says stop (a None), runs each and sends back ``(result, None)`` or ``(None,
exception)``. A task's exception goes back as mpi4py's does: without its traceback objects,
with a ``RemoteTraceback`` as its ``__cause__`` holding the worker's formatted traceback. What
the protocol and the wrapping do is mpi4py 4.1's (futures/_core.py, Lisandro Dalcin;
BSD-2-Clause, its text in ../LICENSE-mpi4py.rst); the loop is blocking (mcemu's MPI is single-threaded, nothing else runs here)."""
from __future__ import annotations

import os
import runpy
import sys
import traceback
import types

from mpi4py import MPI

MAIN_RUN_NAME = "__worker__"
_server = {"comm": None}  # the workers' intracomm while this rank serves (get_comm_workers)


class RemoteTraceback(Exception):
    pass


RemoteTraceback.__module__ = "mpi4py.futures._core"  # where mpi4py has it: a traceback names it so


def _unwrap_exc(exc, tb):
    exc.__cause__ = RemoteTraceback(tb)
    return exc


class _ExceptionWrapper(Exception):
    def __reduce__(self):
        return _unwrap_exc, self.args


def _wrapped(exc: BaseException, workers) -> _ExceptionWrapper:
    """The exception as it travels: the root unpickles it with the worker's traceback as text."""
    body = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    info = f"### Worker {workers.Get_rank()} of {workers.Get_size()} on {MPI.Get_processor_name()}\n"
    exc.__cause__ = exc.__context__ = exc.__traceback__ = None
    return _ExceptionWrapper(exc, f'\n{info}"""\n{body}"""')


def _call(task, workers):
    func, args, kwargs = task
    try:
        return func(*args, **kwargs), None
    except BaseException as exc:  # noqa: BLE001  (the task's error is the caller's, as in mpi4py)
        return None, _wrapped(exc, workers)


def serve(comm, root: int, workers) -> None:
    """Run the tasks that ``root`` sends on ``comm`` until it sends None; ``workers``: the
    intracomm of the serving ranks (what a task gets from get_comm_workers)."""
    status = MPI.Status()
    _server["comm"] = workers
    try:
        while True:
            try:
                task = comm.recv(None, root, MPI.ANY_TAG, status)
            except BaseException as exc:  # noqa: BLE001  (a task that cannot be unpickled here)
                reply = (None, _wrapped(exc, workers))
            else:
                if task is None:
                    return
                reply = _call(task, workers)
            try:
                comm.send(reply, root, status.tag)
            except BaseException as exc:  # noqa: BLE001  (a result that cannot be pickled)
                comm.send((None, _wrapped(exc, workers)), root, status.tag)
    finally:
        _server["comm"] = None


def get_comm_workers():
    """The intracomm of the worker ranks, inside a task (mpi4py's get_comm_workers)."""
    if _server["comm"] is None:
        raise RuntimeError("communicator is not accessible")
    return _server["comm"]


def initialize(initializer, initargs=(), initkwargs=None) -> bool:
    """A worker's initializer, run as a task: False when it raised (the executor is then broken)."""
    try:
        initializer(*initargs, **(initkwargs or {}))
    except BaseException:  # noqa: BLE001  (mpi4py's rule: any failure breaks the executor)
        return False
    return True


# -- the root's __main__ on the workers: what its tasks' functions are pickled against ----------

def sync_data(options: dict) -> dict:
    """What the workers need to import the root's ``__main__`` (and mpi4py's path, wdir, env
    and globals options); on the root ``__worker__`` names the same module, so that objects a
    worker's main module made unpickle here."""
    main = sys.modules["__main__"]
    sys.modules.setdefault(MAIN_RUN_NAME, main)
    data = {k: v for k, v in options.items() if k in ("path", "wdir", "env", "globals")}
    if options.get("main", True):
        spec = getattr(main, "__spec__", None)
        data["mod_name"] = getattr(spec, "name", None)
        path = getattr(main, "__file__", None)
        # python -m mpi4py.futures -c CMD: a __file__ of "-c", which mpi4py 4.1 sends and its
        # workers fail to import; here they have no main module, as under plain python -c
        data["mod_path"] = path if path and os.path.isfile(path) else None
    return data


def sync(data: dict) -> None:
    """A worker takes the root's options and imports its main module as ``__worker__``, which
    ``sys.modules["__main__"]`` then names (its ``if __name__ == "__main__"`` part does not run)."""
    sys.path.extend(data.get("path", ()))
    if "wdir" in data:
        os.chdir(data["wdir"])
    os.environ.update(data.get("env", {}))
    name, path = data.get("mod_name"), data.get("mod_path")
    if name or path or data.get("globals"):
        _import_main(name, path, data.get("globals"))


def _import_main(mod_name, mod_path, init_globals) -> None:
    module = types.ModuleType(MAIN_RUN_NAME)
    module.__dict__.update(init_globals or {})
    module.__name__ = MAIN_RUN_NAME

    class TempModule(runpy._TempModule):  # runpy fills our module, which outlives the run
        def __init__(self, name):
            super().__init__(name)
            self.module = module

    saved, main = runpy._TempModule, sys.modules["__main__"]
    runpy._TempModule = TempModule
    try:
        sys.modules["__main__"] = sys.modules[MAIN_RUN_NAME] = module
        if mod_name:
            runpy.run_module(mod_name, run_name=MAIN_RUN_NAME, alter_sys=True)
        elif mod_path:
            if not getattr(sys.flags, "safe_path", sys.flags.isolated):
                sys.path[0] = os.path.realpath(os.path.dirname(mod_path))
            runpy.run_path(mod_path, run_name=MAIN_RUN_NAME)
        sys.modules["__main__"] = sys.modules[MAIN_RUN_NAME] = module
    except BaseException:
        sys.modules["__main__"] = main
        raise
    finally:
        runpy._TempModule = saved
