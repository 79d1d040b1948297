"""``python -m mpi4py.futures <pyfile> | -m <mod> | -c <cmd> | - [arg] ...``: rank 0 of
COMM_WORLD runs the code as mpi4py's launcher does (mpi4py.run: an uncaught error ends the
job), inside the shared pool whose workers are the other ranks (futures._core.SharedPoolCtx)."""
import os
import sys

from mpi4py.futures._core import SharedPoolCtx
from mpi4py import run
from mpi4py.run import guarded, run_command_line


def usage(error: str | None = None):
    python = os.path.basename(sys.executable)
    run.usage(error, f"usage: {python} -m mpi4py.futures <pyfile> [arg] ...\n"
                     f"   or: {python} -m mpi4py.futures -m <module> [arg] ...\n"
                     f"   or: {python} -m mpi4py.futures -c <string> [arg] ...")


def checked(args: list) -> list:
    """mpi4py.futures' checks of its command line (it takes no options)."""
    if not args:
        usage("No path specified for execution")
    elif args[0] in ("-h", "--help"):
        usage()
    elif args[0] in ("-m", "-c") and len(args) < 2:
        usage(f"Argument expected for option: {args[0]}")
    elif args[0] not in ("-", "-m", "-c") and args[0].startswith("-"):
        usage(f"Unknown option: {args[0]}")
    elif args[0] not in ("-", "-m", "-c") and not os.path.exists(args[0]):
        usage(f"Path does not exist: {args[0]}")
    return args


def serve_or_run() -> None:
    with SharedPoolCtx() as context:
        if context is not None:
            run_command_line(checked(sys.argv[1:]))


def main() -> None:
    guarded(serve_or_run)


if __name__ == "__main__":
    main()
