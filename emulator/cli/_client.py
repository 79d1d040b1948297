"""What the commands that talk to a running daemon share (emulator.cli.cluster, emulator.cli.jobs,
the monitor): ``--key`` (``use_key``), the client (``connect``), the client options of a
sub-parser (``client_options``), the tables they print (``table``, ``ranges``, ``printable``) and a
job's final states (``FINISHED``).

Lazy imports, measured on top of `mcemu --help`'s: the client (zmq, msgpack) 19 ms, the key
files 3 ms at start-up of every mcemu command that builds the whole parser (so imports this
module); Rich (18 ms with its rendering) only for a table too wide for the terminal: scripts
and tests poll `mcemu nodes` / `queue` (scripts/bench_cli.py).
"""
from __future__ import annotations

import itertools
import os
import shutil
import sys
import unicodedata

from emulator.cli import UsageError

FINISHED = ("completed", "failed", "cancelled")  # a job's final states; anything else (queued, held, running) is not


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
    """Rows of values (None: empty), each cell ``printable`` and plain text (a ``[red]`` in a
    name is shown, not read as Rich markup). Full rows, one line each, in columns two spaces
    apart (like squeue): on a pipe always, on a terminal when they fit its width; a terminal
    too narrow for them gets Rich's fitting (wrapped cells), the only case that imports Rich."""
    cells = [[printable(v) for v in r] for r in rows]
    widths = [max([_width(c)] + [_width(r[i]) for r in cells]) for i, c in enumerate(columns)]
    tty = sys.stdout.isatty()
    if tty and sum(widths) + 2 * (len(widths) - 1) > shutil.get_terminal_size().columns:
        return _rich_table(title, columns, cells)
    bold = tty and "NO_COLOR" not in os.environ
    out = [] if title is None else [title]
    head = _line(columns, widths)
    out.append(f"\x1b[1m{head}\x1b[0m" if bold else head)
    out += [_line(r, widths) for r in cells]
    sys.stdout.write("\n".join(out) + "\n")


def _width(s: str) -> int:
    """Terminal cells: 2 for an East Asian wide character."""
    if s.isascii():
        return len(s)
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)


def _line(cells, widths) -> str:
    return "  ".join(c + " " * (w - _width(c)) for c, w in zip(cells, widths)).rstrip()


def _rich_table(title, columns, cells) -> None:
    from rich.console import Console  # lazy: see the module docstring
    from rich.table import Table
    from rich.text import Text

    t = Table(title=title, title_justify="left", box=None, pad_edge=False, header_style="bold")
    for c in columns:
        t.add_column(c)
    for r in cells:
        t.add_row(*[Text(c) for c in r])
    Console().print(t)


def ranges(ids) -> str:
    """Node ids as ranges: 0-3,5,7-8."""
    runs = ([n for _, n in g] for _, g in itertools.groupby(enumerate(sorted(ids)), lambda p: p[1] - p[0]))
    return ",".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)
