"""``mcemu``: one console script, one sub-command per DESIGN "Command line" row.

Each group of commands lives in its own module exposing ``add_commands(subparsers)``; each
sub-parser sets ``func(args) -> int``. ``main(argv) -> int`` never raises for a user error:
it prints a one-line message on stderr and returns 2.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import signal
import sys
import threading

from emulator.jsonable import jsonable

COMMAND_MODULES = ["emulator.cli.policies", "emulator.cli.simulate", "emulator.cli.cluster", "emulator.cli.run",
                   "emulator.cli.monitor", "emulator.cli.reproduce", "emulator.cli.sweep",
                   "emulator.cli.net"]


class UsageError(Exception):
    """A user error the CLI reports in one line (exit status 2)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcemu",
        description="mcemu: a live emulator and a discrete-event simulator of hypercube and "
                    "2-D mesh multicomputers, for processor allocation and job scheduling.",
        epilog="`mcemu COMMAND --help` for one command; `mcemu demo` to see it run.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name == name:  # that command group is not built yet
                continue
            raise
        mod.add_commands(sub)
    return parser


def print_json(obj) -> None:
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


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        with exit_on_termination():
            return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except (UsageError, ValueError, KeyError, OSError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args and not str(e).startswith("unknown") else e
        print(f"mcemu {args.command}: error: {msg}", file=sys.stderr)
        return 2


def entry() -> None:
    sys.exit(main(sys.argv[1:]))
