"""What the commands that talk to a running daemon share (emulator.cli.cluster, emulator.cli.jobs,
the monitor): ``--key`` (``use_key``), the client (``connect``), the client options of a
sub-parser (``client_options``) and the tables they print (``table``, ``ranges``, ``printable``).

Lazy imports, measured on top of `mcemu --help`'s: the client (zmq, msgpack) 19 ms, rich 14 ms,
the key files 3 ms at start-up of every mcemu command (each builds the whole parser, so imports
this module; scripts and tests poll `mcemu nodes` / `queue`).
"""
from __future__ import annotations

import itertools
import os
import sys

from emulator.cli import UsageError


def use_key(args) -> None:
    """``--key FILE``: the credential every tcp connection of this command uses (checked now,
    one line if it is not one; emulator.live.keys), passed on as ``MCEMU_KEY``."""
    key = getattr(args, "key", None)
    if key:
        from emulator.live import keys as keysmod  # lazy: see the module docstring

        try:
            keysmod.credential(key)
        except keysmod.KeyFileError as e:
            raise UsageError(f"--key: {e}") from None
        os.environ["MCEMU_KEY"] = key


def connect(args):
    """A client of the daemon of ``--connect`` (default: MCEMU_HOME's), ``--key`` and ``--timeout``."""
    from emulator.live.client import Client  # lazy: see the module docstring

    use_key(args)
    return Client(getattr(args, "connect", None) or None, timeout=args.timeout)


def client_options(p, json=True) -> None:
    """``--json``, ``--connect``, ``--key``, ``--timeout``: the options of a command that asks the daemon."""
    if json:
        p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("--connect", help="daemon endpoint (default: MCEMU_HOME's ipc socket)")
    p.add_argument("--key", help="credential file for a tcp daemon (`mcemu keys issue`; default: MCEMU_KEY)")
    p.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for the daemon")


def printable(v) -> str:
    """A value from the daemon (a job's name, its reason, a node's host) as a terminal may show
    it: control and other non-printing characters (an escape sequence, a newline, a bidi
    override) written as Python escapes (``\\x1b``, ``\\n``, ``\\u202e``), so that text another
    user gave, in a journal of any age, can neither drive the reader's terminal nor break a
    table's rows. The CLI's tables and the monitor show names through it."""
    s = "" if v is None else str(v)
    if s.isprintable():
        return s
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in s)


def table(title, columns, rows):
    """Rows of values (None: empty), each cell printable() and plain text: a ``[red]`` in a name
    is shown, not read as Rich markup."""
    from rich.console import Console  # lazy: see the module docstring
    from rich.table import Table
    from rich.text import Text

    t = Table(title=title, title_justify="left", box=None, pad_edge=False, header_style="bold")
    for c in columns:
        t.add_column(c)
    for r in rows:
        t.add_row(*[Text(printable(v)) for v in r])
    # a pipe gets full rows (like squeue), a terminal gets rich's fitting
    Console(width=None if sys.stdout.isatty() else 200).print(t)


def ranges(ids) -> str:
    """Node ids as ranges: 0-3,5,7-8."""
    runs = ([n for _, n in g] for _, g in itertools.groupby(enumerate(sorted(ids)), lambda p: p[1] - p[0]))
    return ",".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)
