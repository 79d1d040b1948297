"""The SWF format (see the package docstring): its fields, a log's records and header, and
reading a log as it is, line by line, with an error naming the line of anything malformed."""
from __future__ import annotations

import gzip
import io
import math
import os
import re
import zlib
from dataclasses import dataclass, fields
from typing import Iterator


FIELDS = (
    "job", "submit", "wait", "run", "procs", "cpu", "mem", "req_procs", "req_time", "req_mem",
    "status", "user", "group", "executable", "queue", "partition", "preceding", "think",
)
FIELD_TITLES = (
    "job number", "submit time", "wait time", "run time", "allocated processors",
    "average CPU time", "used memory", "requested processors", "requested time",
    "requested memory", "status", "user id", "group id", "executable number", "queue number",
    "partition number", "preceding job number", "think time",
)


_HEADER = re.compile(r"\s?([A-Za-z][\w-]*):(.*)$")


class SwfError(ValueError):
    """A malformed SWF file or a job the machine cannot hold; names the file and line."""


@dataclass(slots=True)
class SwfRecord:
    """One SWF line; -1 means unknown."""

    job: int
    submit: float = -1
    wait: float = -1
    run: float = -1
    procs: int = -1
    cpu: float = -1
    mem: float = -1
    req_procs: int = -1
    req_time: float = -1
    req_mem: float = -1
    status: int = -1
    user: int = -1
    group: int = -1
    executable: int = -1
    queue: int = -1
    partition: int = -1
    preceding: int = -1
    think: float = -1

    def values(self) -> tuple:
        return tuple(getattr(self, f) for f in FIELDS)

    def line(self) -> str:
        return " ".join(_fmt(v) for v in self.values())


assert tuple(f.name for f in fields(SwfRecord)) == FIELDS


@dataclass
class SwfLog:
    """A parsed file: ``header`` maps keys of ``; Key: value`` lines to their text (repeated
    keys and continuation lines are joined with newlines), ``comments`` keeps every header
    line verbatim (without the ``;``), ``records`` the jobs with their line numbers."""

    header: dict
    comments: list
    records: list  # list[SwfRecord]
    lines: list  # line number of each record

    def _int(self, key: str) -> int | None:
        v = self.header.get(key)
        try:
            return int(v.split()[0]) if v else None
        except ValueError:
            return None

    @property
    def max_nodes(self) -> int | None:
        return self._int("MaxNodes")

    @property
    def max_procs(self) -> int | None:
        return self._int("MaxProcs")


class JobList(list):
    """The jobs of a replayed log (a plain ``list[Job]``) plus what the replay had to do:
    ``clamped`` (job numbers whose run time 0 became ``min_runtime``), ``skipped`` (reason ->
    job numbers of unusable jobs), the file's ``header``, ``time_unit``."""

    def __init__(self, jobs=(), *, header=None, clamped=None, skipped=None, time_unit=1.0, path=None):
        super().__init__(jobs)
        self.header = header or {}
        self.clamped = clamped or []
        self.skipped = skipped or {}
        self.time_unit = time_unit
        self.path = path

    @property
    def skipped_count(self) -> int:
        return sum(len(v) for v in self.skipped.values())

    def summary(self) -> dict:
        return {"path": self.path, "jobs": len(self), "clamped_zero_runtime": len(self.clamped),
                "skipped": {k: len(v) for k, v in self.skipped.items()}, "time_unit": self.time_unit}


# --------------------------------------------------------------------------- reading


def _open_text(path) -> io.TextIOBase:
    path = os.fspath(path)
    with open(path, "rb") as f:
        magic = f.read(2)
    if magic == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="replace")
    return open(path, "r", encoding="utf-8", errors="replace")


def _number(tok: str):
    try:
        return int(tok)
    except ValueError:
        v = float(tok)  # ValueError for junk, caught by the caller
        if not math.isfinite(v):
            raise ValueError(tok)
        return int(v) if v.is_integer() and abs(v) < 2**53 else v


def _parse_line(text: str, path, lineno: int) -> SwfRecord:
    toks = text.split()
    if len(toks) != 18:
        raise SwfError(f"{path}:{lineno}: an SWF job line needs 18 fields, found {len(toks)}: {text.strip()[:80]!r}")
    try:
        return SwfRecord(*map(int, toks))  # the common case: every field an integer
    except ValueError:
        pass
    vals = []
    for i, tok in enumerate(toks):
        try:
            vals.append(_number(tok))
        except ValueError:
            raise SwfError(f"{path}:{lineno}: field {i + 1} ({FIELD_TITLES[i]}) is not a number: {tok!r}") from None
    for i in (0, 4, 7, 10, 11, 12, 13, 14, 15, 16):
        if not isinstance(vals[i], int):
            raise SwfError(f"{path}:{lineno}: field {i + 1} ({FIELD_TITLES[i]}) must be an integer, got {toks[i]!r}")
    return SwfRecord(*vals)


def iter_swf(path) -> Iterator[tuple[int, str | SwfRecord]]:
    """Yield ``(line number, header text)`` for comment lines and ``(line number, record)``
    for job lines; blank lines are ignored. Malformed lines raise :class:`SwfError`."""
    lineno = 0
    try:
        with _open_text(path) as f:
            for lineno, raw in enumerate(f, 1):
                s = raw.strip()
                if not s:
                    continue
                if s.startswith(";"):
                    yield lineno, s[1:]
                else:
                    yield lineno, _parse_line(s, path, lineno)
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:  # a truncated or corrupt .gz
        raise SwfError(f"{path}:{lineno + 1}: not a readable gzip file: {e}") from None


def _read_header(comments) -> dict:
    """The ``; Key: value`` header of a log from its comment lines, in order."""
    header: dict = {}
    last_key = None
    for item in comments:
        indent = len(item) - len(item.lstrip())
        m = _HEADER.match(item) if indent <= 1 else None
        if m:
            key, value = m.group(1), m.group(2).strip()
            header[key] = f"{header[key]}\n{value}" if key in header else value
            last_key = key
        elif indent > 1 and last_key is not None and item.strip():
            header[last_key] = f"{header[last_key]}\n{item.strip()}"  # continuation line
        else:
            last_key = None
    return header


def read_swf(path) -> SwfLog:
    comments, records, lines = [], [], []
    for lineno, item in iter_swf(path):
        if isinstance(item, str):
            comments.append(item)
        else:
            records.append(item)
            lines.append(lineno)
    return SwfLog(_read_header(comments), comments, records, lines)


def _fmt(v) -> str:
    if isinstance(v, bool):
        v = int(v)
    if isinstance(v, int):
        return str(v)
    v = float(v)
    if v.is_integer() and abs(v) < 2**53:
        return str(int(v))
    return repr(v)  # shortest text that reads back to the same float
