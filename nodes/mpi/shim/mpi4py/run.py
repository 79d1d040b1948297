"""``python -m mpi4py [options] <pyfile> | -m <mod> | -c <cmd> | - [arg] ...``: runs the code
as mpi4py's launcher does (runpy), inside a job as well as out of one. An uncaught exception
ends the job, as mpi4py's MPI_Abort does there: its traceback is printed and the rank exits
non-zero at once (it does not wait in MPI_Finalize for ranks that will never come), and the
cluster then ends the job's other ranks."""
import os
import sys

USAGE = """usage: python -m mpi4py [options] <pyfile> [arg] ...
   or: python -m mpi4py [options] -m <mod> [arg] ...
   or: python -m mpi4py [options] -c <cmd> [arg] ...
   or: python -m mpi4py [options] - [arg] ...
options:
  --version            show version number and exit
  -h|--help            show this help message and exit
  -rc <key=value,...>  set 'mpi4py.rc.key=value'"""


def usage(error: str | None = None, text: str = USAGE):
    """``text`` (after ``error`` on stderr, exit 1; alone on stdout, exit 0): the launchers' usage."""
    if error:
        print(error, text, sep="\n", file=sys.stderr)
        sys.exit(1)
    print(text)
    sys.exit(0)


def parse(args: list) -> list:
    """Apply the options (mpi4py's, less those that ask about the MPI library); what is left
    is the command line to run."""
    from mpi4py import __version__, rc
    args = list(args)
    while args and args[0].startswith("-") and args[0] not in ("-m", "-c", "-"):
        opt = args.pop(0)
        if opt in ("-h", "-help", "--help"):
            usage()
        elif opt in ("-version", "--version"):
            print(f"mpi4py {__version__}")
            sys.exit(0)
        elif opt in ("-rc", "--rc") or opt.startswith("--rc="):
            if "=" not in opt and not args:
                usage(f"Argument expected for option: {opt}")
            value = opt.partition("=")[2] if "=" in opt else args.pop(0)
            for entry in value.split(","):
                key, _, val = entry.partition("=")
                if not key or not val:
                    usage(f"Cannot parse rc option: {entry}")
                setattr(rc, key, _literal(val))
        else:
            usage(f"Unknown option: {opt}")
    if not args:
        usage("No path specified for execution")
    if args[0] in ("-m", "-c") and len(args) < 2:
        usage(f"Argument expected for option: {args[0]}")
    return args


def _literal(text: str):
    from ast import literal_eval
    try:
        return literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def run_command_line(args: list) -> None:
    """Run ``args`` (``pyfile``, ``-m mod``, ``-c cmd`` or ``-``, then the program's arguments)
    as ``__main__``, with ``sys.argv`` what the program would see under ``python``."""
    import runpy
    sys.argv[:] = args
    if args[0] in ("-c", "-"):
        source = sys.argv.pop(1) if args[0] == "-c" else sys.stdin.read()
        code = compile(source, "<string>" if args[0] == "-c" else "<stdin>", "exec", 0, True)
        runpy._run_module_code(code, None, "__main__", script_name=args[0])
    elif args[0] == "-m":
        del sys.argv[0]
        runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
    else:
        if not sys.flags.isolated:
            sys.path[0] = os.path.realpath(os.path.dirname(sys.argv[0]))
        runpy.run_path(sys.argv[0], run_name="__main__")


def _end(status: int, traceback: bool) -> None:
    """End this rank with ``status`` at once (MPI_Abort), the exception's traceback first."""
    if traceback:
        import traceback as tb
        tb.print_exc()
    from nodes.mpi import MPI
    MPI.COMM_WORLD.Abort(status)


def main(argv: list | None = None) -> None:
    args = parse(sys.argv[1:] if argv is None else argv)
    guarded(run_command_line, args)


def guarded(fn, *args) -> None:
    """Call ``fn(*args)`` as mpi4py's launcher runs a program (mpi4py.futures' launcher too):
    what it leaves uncaught ends the job (module docstring)."""
    try:
        fn(*args)
    except SystemExit as e:  # sys.exit(0) (or None) ends the rank normally; any other status, the job
        if e.code is None or e.code == 0:
            raise
        if not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
        _end(e.code if isinstance(e.code, int) else 1, traceback=False)
    except KeyboardInterrupt:
        _end(130, traceback=True)  # SIGINT + 128, as mpi4py's
    except BaseException:  # noqa: BLE001  (any uncaught error ends the job, as mpi4py's)
        _end(1, traceback=True)
