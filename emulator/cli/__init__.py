"""``mcemu``: one console script, one sub-command per DESIGN "Command line" row.

Each group of commands lives in its own module exposing ``add_commands(subparsers)``; each
sub-parser sets ``func(args) -> int``. ``main(argv) -> int`` never raises for a user error:
it prints a one-line message on stderr and returns 2.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import select
import signal
import sys
import threading


COMMAND_MODULES = ["emulator.cli.policies", "emulator.cli.simulate", "emulator.cli.cluster", "emulator.cli.run",
                   "emulator.cli.monitor", "emulator.cli.reproduce", "emulator.cli.sweep",
                   "emulator.cli.net"]
# The module whose ``add_commands`` registers each command: ``main`` builds only the parser of
# the command asked for, so `mcemu queue` imports the jobs' module and not the simulator, the
# monitor or the cluster's lifecycle (scripts/bench_cli.py; tests/test_cli_habits.py checks
# this table against the whole parser). A command missing here still works, at the whole
# parser's cost.
COMMAND_MODULE = {
    "policies": "emulator.cli.policies", "simulate": "emulator.cli.simulate",
    **dict.fromkeys(("up", "down", "nodes", "node"), "emulator.cli.cluster"),
    **dict.fromkeys(("submit", "queue", "cancel", "workload", "wait"), "emulator.cli.jobs"),
    "keys": "emulator.cli.keys", "run": "emulator.cli.run", "monitor": "emulator.cli.monitor",
    "demo": "emulator.cli.monitor", "reproduce": "emulator.cli.reproduce", "sweep": "emulator.cli.sweep",
    "net": "emulator.cli.net",
}


class UsageError(Exception):
    """A user error the CLI reports in one line (exit status 2)."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; given a ``command`` of COMMAND_MODULE, only its module's commands."""
    parser = argparse.ArgumentParser(
        prog="mcemu",
        description="mcemu: a live emulator and a discrete-event simulator of hypercube and "
                    "2-D mesh multicomputers, for processor allocation and job scheduling.",
        epilog="`mcemu COMMAND --help` for one command; `mcemu demo` to see it run.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in [COMMAND_MODULE[command]] if command in COMMAND_MODULE else COMMAND_MODULES:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name == name:  # that command group is not built yet
                continue
            raise
        mod.add_commands(sub)
    return parser


def print_json(obj) -> None:
    import json  # lazy, as the rest: a command that prints a table does not need it

    from emulator.jsonable import jsonable

    # strict JSON: infinities as "inf", NaN as null (a power with no delay is infinite)
    json.dump(jsonable(obj), sys.stdout, indent=2, sort_keys=False, default=str)
    sys.stdout.write("\n")


@contextlib.contextmanager
def exit_on_termination():
    """SIGTERM and SIGHUP raise SystemExit while the block runs, so that the ``finally``
    clauses stopping what a command started (a demo's cluster, a benchmark's) run: the
    default action ends the process without them, and ``timeout mcemu demo`` or a closed
    terminal left every node running. A second signal ends the process at once. Signals a
    command handles itself (``mcemu up`` in the foreground), or that were ignored when the
    process started, are left alone; so is a caller that is not the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {}

    def on_signal(signum, frame):
        signal.signal(signum, signal.SIG_DFL)
        raise SystemExit(128 + signum)

    for s in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(s) is signal.SIG_DFL:
            before[s] = signal.signal(s, on_signal)
    try:
        yield
    finally:
        for s, h in before.items():
            signal.signal(s, h)


SIGPIPE_STATUS = 128 + 13  # what a shell reports for a tool ended by SIGPIPE: `mcemu queue | head -1`


def _file_id(st) -> tuple:
    return st.st_dev, st.st_ino


def _stdout_id():
    try:
        return _file_id(os.fstat(1))
    except OSError:
        return None


def _stdout_gone(before) -> bool:
    """Whether standard output is a pipe nobody reads any more: the pipe reports POLLERR once
    its reader is closed; or Rich found it so and put /dev/null in its place (its Console's
    ``on_broken_pipe``, then SystemExit(1)). ``before``: standard output's ``_stdout_id`` when
    the command started."""
    now = _stdout_id()
    if now is not None and now != before:
        return now == _file_id(os.stat(os.devnull))
    try:
        p = select.poll()
        p.register(1, select.POLLOUT)
        return any(ev & select.POLLERR for _, ev in p.poll(0))
    except (OSError, ValueError):
        return False


def _quiet_on_closed_stdout() -> int:
    """A command whose reader went away ends quietly, as a Unix tool does: nothing on stderr,
    status 141; what is left in the buffer goes to /dev/null (not an "Exception ignored" at exit)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    return SIGPIPE_STATUS


def main(argv: list[str] | None = None) -> int:
    """Run one command; its exit status. A user error is one line on stderr and status 2; a
    closed standard output (``mcemu nodes | head -1``) is status 141 and nothing on stderr:
    handled here, for every command (and ``--help``), and nowhere else."""
    before = _stdout_id()
    try:
        code = _main(argv, before)
        sys.stdout.flush()  # a closed pipe shows here when the output fit in the buffer
        return code
    except (BrokenPipeError, SystemExit):
        if not _stdout_gone(before):
            raise
        return _quiet_on_closed_stdout()


def _main(argv, before) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv[0] if argv else None)
    args, extra = parser.parse_known_args(argv)
    if extra:  # the command's usage, not mcemu's: argparse's own error names the top parser
        (_subparser(parser, getattr(args, "command", None)) or parser).error(
            f"unrecognized arguments: {' '.join(extra)}")
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        with exit_on_termination():
            return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except Exception as e:
        if not isinstance(e, (UsageError, ValueError, KeyError, OSError)) and not _refused(e):
            raise
        if isinstance(e, BrokenPipeError) and _stdout_gone(before):
            raise  # main's: quiet
        msg = e.args[0] if isinstance(e, KeyError) and e.args and not str(e).startswith("unknown") else e
        print(f"mcemu {args.command}: error: {msg}", file=sys.stderr)
        return 2


def _subparser(parser, name):
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            return a.choices.get(name)
    return None


def _refused(e: Exception) -> bool:
    """A daemon's refusal (emulator.live.client.ClientError) that a command did not word itself:
    one line too. Not imported for this: a command that raised one has loaded the client."""
    client = sys.modules.get("emulator.live.client")
    return client is not None and isinstance(e, client.ClientError)


def entry() -> None:
    sys.exit(main(sys.argv[1:]))
