"""The Standard Workload Format (SWF 2.2, Parallel Workloads Archive): read logs, replay them
as jobs, write simulated schedules.

One job per line, 18 whitespace-separated numeric fields, -1 where unknown; header lines
start with ``;`` (``; MaxNodes: 128``). Files may be gzipped (recognized by their magic bytes
on reading, by a ``.gz`` suffix on writing).

Replaying a log (:func:`read_jobs`): a job's submit time is field 2, its size field 5
(allocated processors) or, when that is unknown, field 8 (requested processors), given as
``Request.processors(p)`` so that the topology rounds it to a cube or submesh; its run time
is field 4. Times are divided by ``time_unit`` (seconds per model time unit).

Readings chosen where the format leaves room:

- A run time of 0 is a real job that ran for under a second (the log's resolution); it is
  kept with ``min_runtime`` seconds (default 0.5, the middle of [0, 1)) and counted in
  ``clamped`` -- the NASA iPSC/860 log has 173 such jobs and every one of its 18,239 jobs must
  replay. A run time that is unknown (-1 or negative), an unknown submit time or an unknown
  size (fields 5 and 8 both <= 0) makes the job unusable: it is skipped and counted by reason
  in ``skipped``.
- A job larger than the machine is an error naming the job and its line, not a skip: a trace
  replayed on the wrong topology should fail loudly.
- The status field is not used to drop jobs: a failed or cancelled job that ran occupied its
  processors for its run time all the same.
- Jobs are returned in submit order (stable for equal submit times), as the simulator needs.
"""
from __future__ import annotations

import gzip
import io
import math
import os
import re
import warnings
import zlib
from dataclasses import dataclass, fields
from itertools import repeat
from operator import attrgetter
from typing import Iterable, Iterator

import numpy as np

from emulator.sim.engine import cycle_gc_paused
from scheduler.jobs import Job
from scheduler.topology import Request, RequestError, parse_topology

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


_PLAIN = b"0123456789- \t\n"  # what job lines of plain integers are made of


def _fast_columns(path, wanted):
    """``(comments, columns, lines)`` of a log made of a header (comment and blank lines)
    and then job lines of 18 plain integers each (an optional minus and ASCII digits: values
    ``int`` reads as :func:`iter_swf` does), the fields ``wanted`` (0-based) as int64 arrays,
    without a record object per line; None when anything is unusual (another token or
    character, a comment or blank line among the jobs, a carriage return, a malformed line, a
    bad gzip stream), so that :func:`read_swf` reads the log and says what is wrong. The
    lines and comments are :func:`iter_swf`'s.

    Issue 18: the job lines are parsed by numpy's ``loadtxt`` in one call, from the file's
    bytes, into int64 columns (no string per line: in a fresh process the memory they took
    cost as much as the parsing). Once only digits, minus and the separators are left, what
    it accepts is what ``int`` accepts with the same value: it refuses a token such as ``-``,
    ``1-2`` or ``--1``, a value outside int64 and a line whose field count differs from the
    first line's (the first line's count is checked here). It skips blank lines: a row count
    other than the line count sends the log to :func:`read_swf`."""
    try:
        with open(os.fspath(path), "rb") as f:
            data = f.read()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
    except (EOFError, gzip.BadGzipFile, zlib.error):
        return None
    if b"\r" in data:  # iter_swf's universal newlines would end a line there: read it that way
        return None
    comments, skip, start, size = [], 0, 0, len(data)
    while start < size:  # the header, line by line as iter_swf reads it
        end = data.find(b"\n", start)
        end = size if end < 0 else end
        s = data[start:end].decode("utf-8", errors="replace").strip()
        if s and s[0] != ";":
            break  # the first job line
        if s:
            comments.append(s[1:])
        skip += 1
        start = end + 1
    end = size
    while end > start and data[end - 1] in b" \t\n":  # what follows the last job line (not a copy)
        end -= 1
    if end <= start:
        return comments, [np.zeros(0, np.int64) for _ in wanted], []
    if data.translate(None, _PLAIN) != data[:start].translate(None, _PLAIN):
        return None  # a character other than digits, minus and the separators after the header
    n = data.count(b"\n", start, end) + 1
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a warning (numpy's deprecations) is a refusal too
            table = np.loadtxt(io.BytesIO(data), dtype=np.int64, comments=None, skiprows=skip, ndmin=2)
    except (ValueError, OverflowError, Warning):
        return None
    if table.shape != (n, 18):
        return None
    return comments, list(table.T[list(wanted)]), list(range(skip + 1, skip + 1 + n))


_submit = attrgetter("submit")


def read_jobs(path, topology, *, time_unit: float = 1.0, min_runtime: float = 0.5) -> JobList:
    """The jobs of an SWF log for replay on ``topology`` (see the module docstring)."""
    topo = parse_topology(topology)
    if isinstance(time_unit, bool) or not isinstance(time_unit, (int, float)) or not math.isfinite(time_unit) or time_unit <= 0:
        raise SwfError(f"time unit must be a number of seconds > 0, got {time_unit!r}")
    if isinstance(min_runtime, bool) or not isinstance(min_runtime, (int, float)) or not math.isfinite(min_runtime) or min_runtime <= 0:
        raise SwfError(f"min_runtime must be a number of seconds > 0, got {min_runtime!r}")
    with cycle_gc_paused():  # tens of thousands of new objects, no cycles among them
        return _replay(path, topo, time_unit, min_runtime)


def _meta(lineno, user, requested_time) -> dict:
    """A replayed job's ``meta``: its line, and its user and requested time when known."""
    meta = {"swf_line": lineno}
    if user >= 0:
        meta["user"] = user
    if requested_time > 0:
        meta["requested_time"] = requested_time
    return meta


def _plain_jobs(columns, lines, topo, time_unit, min_runtime, path) -> JobList | None:
    """:func:`_replay`'s jobs, column by column (issue 18: a third of its time was the tests
    and arithmetic of its loop), for int64 columns where no job is skipped, too large or
    repeated, the usual log; None otherwise (the loop says what)."""
    job_nos, submits, runs, procs, req_procs, req_times, users = columns
    sizes = np.where(procs > 0, procs, req_procs)
    ids = job_nos.tolist()
    if len(ids) and ((submits < 0) | (runs < 0) | (sizes <= 0) | (sizes > topo.size)).any() \
            or len(set(ids)) != len(ids):
        return None
    distinct, first, which = np.unique(sizes, return_index=True, return_inverse=True)
    requests = [None] * len(distinct)
    for i in np.argsort(first, kind="stable").tolist():  # one Request per size, checked in file order
        requests[i] = req = Request.processors(int(distinct[i]))
        try:
            topo.normalize(req)
        except RequestError as e:
            j = int(first[i])
            raise SwfError(f"{path}:{lines[j]}: job {int(job_nos[j])} cannot run on {topo}: {e}") from None
    zero = runs == 0
    # the floats int / float gives: int64 -> float64 (exact below 2**53), IEEE division
    run_times = (np.where(zero, min_runtime, runs) / time_unit).tolist()
    jobs = JobList()
    jobs.clamped = job_nos[zero].tolist()
    metas = [{"swf_line": lineno, "user": user, "requested_time": req_time}  # the usual job
             if user >= 0 and req_time > 0 else _meta(lineno, user, req_time)
             for lineno, user, req_time in zip(lines, users.tolist(), (req_times / time_unit).tolist())]
    jobs.extend(map(Job, ids, (submits / time_unit).tolist(), [requests[i] for i in which.reshape(-1).tolist()],
                    run_times, repeat("", len(ids)), metas))
    if (submits[1:] < submits[:-1]).any():  # a log is usually in submit order already
        jobs.sort(key=_submit)  # stable: equal submit times keep file order
    return jobs


def _replay(path, topo, time_unit, min_runtime) -> JobList:
    wanted = (0, 1, 3, 4, 7, 8, 11)  # job, submit, run, procs, req_procs, req_time, user
    fast = _fast_columns(path, wanted)  # the same values, faster (issue 18); None: read_swf says why
    if fast is not None:
        comments, columns, lines = fast
        header = _read_header(comments)
        jobs = _plain_jobs(columns, lines, topo, time_unit, min_runtime, path)
        if jobs is not None:
            return JobList(jobs, header=header, clamped=jobs.clamped, time_unit=time_unit, path=os.fspath(path))
        columns = [c.tolist() for c in columns]
    else:
        log = read_swf(path)
        header, lines = log.header, log.lines
        columns = [[r.values()[i] for r in log.records] for i in wanted]
    skipped: dict[str, list] = {}
    clamped: list = []
    requests: dict = {}
    jobs = []
    size = topo.size
    job_nos, submits, runs, procs, req_procs, req_times, users = columns
    if len(set(job_nos)) != len(job_nos):  # issue 18: a set, not a dictionary lookup per job
        seen: dict = {}
        for job_no, lineno in zip(job_nos, lines):
            if job_no in seen:
                raise SwfError(f"{path}:{lineno}: job number {job_no} repeats (first on line {seen[job_no]})")
            seen[job_no] = lineno
    sizes = [a if a > 0 else b for a, b in zip(procs, req_procs)]
    for job_no, submit, run, p, req_time, user, lineno in zip(job_nos, submits, runs, sizes, req_times, users, lines):
        if submit < 0 or run < 0 or p <= 0 or p > size:  # one test for the usual job
            if submit < 0:
                skipped.setdefault("unknown submit time", []).append(job_no)
                continue
            if run < 0:
                skipped.setdefault("unknown run time", []).append(job_no)
                continue
            if p <= 0:
                skipped.setdefault("unknown size", []).append(job_no)
                continue
            raise SwfError(f"{path}:{lineno}: job {job_no} asks for {p} processors; {topo} has {topo.size}")
        req = requests.get(p)
        if req is None:  # one Request (and one check) per distinct size: logs reuse a few sizes
            req = Request.processors(int(p))
            try:
                topo.normalize(req)
            except RequestError as e:
                raise SwfError(f"{path}:{lineno}: job {job_no} cannot run on {topo}: {e}") from None
            requests[p] = req
        if run == 0:
            run = min_runtime
            clamped.append(job_no)
        if user >= 0 and req_time > 0:  # the usual job: the dictionary in one piece
            meta = {"swf_line": lineno, "user": user, "requested_time": req_time / time_unit}
        else:
            meta = {"swf_line": lineno}
            if user >= 0:
                meta["user"] = user
            if req_time > 0:
                meta["requested_time"] = req_time / time_unit
        jobs.append(Job(job_no, submit / time_unit, req, run / time_unit, "", meta))
    jobs.sort(key=_submit)  # stable: equal submit times keep file order
    return JobList(jobs, header=header, clamped=clamped, skipped=skipped, time_unit=time_unit,
                   path=os.fspath(path))


# --------------------------------------------------------------------------- writing


def _fmt(v) -> str:
    if isinstance(v, bool):
        v = int(v)
    if isinstance(v, int):
        return str(v)
    v = float(v)
    if v.is_integer() and abs(v) < 2**53:
        return str(int(v))
    return repr(v)  # shortest text that reads back to the same float


def to_record(item, *, time_unit: float = 1.0, index: int = 0) -> SwfRecord:
    """An :class:`SwfRecord` from what a run produces: an SwfRecord, a mapping of field names,
    a simulator job record (:class:`emulator.sim.metrics.JobRecord`, or anything with ``id,
    submit, start, end, asked, given``: wait, run, allocated and requested processors filled
    in), or a :class:`Job` (not yet run: wait unknown)."""
    u = time_unit
    if isinstance(item, SwfRecord):
        return item
    if isinstance(item, dict):
        bad = set(item) - set(FIELDS)
        if bad:
            raise SwfError(f"unknown SWF field(s) {sorted(bad)}; fields are {', '.join(FIELDS)}")
        return SwfRecord(**item)
    jid = getattr(item, "id", index)
    jnum = jid if isinstance(jid, int) and not isinstance(jid, bool) else index
    if isinstance(item, Job):
        p = item.request.processors_needed
        return SwfRecord(jnum, item.submit * u, -1, item.runtime * u, p, req_procs=p, status=-1)
    try:
        submit, start, end, given, asked = item.submit, item.start, item.end, item.given, item.asked
    except AttributeError:
        raise SwfError(f"cannot write {item!r} as an SWF line: give an SwfRecord, a dict of "
                       f"fields, a simulator record (JobRecord) or a Job") from None
    return SwfRecord(jnum, submit * u, (start - submit) * u, (end - start) * u, given,
                     req_procs=asked, status=1)


def write_swf(path, records: Iterable, header: dict | Iterable[str] | None = None, *,
              time_unit: float = 1.0, integer_times: bool = False) -> int:
    """Write one SWF line per record (see :func:`to_record`), in submit order, after the
    header (a mapping written as ``; Key: value`` lines, or ready-made comment lines).
    Times are model units x ``time_unit`` seconds; ``integer_times`` rounds them to whole
    seconds for tools that want integers. A ``.gz`` path is gzipped. Returns the job count."""
    if isinstance(time_unit, bool) or not isinstance(time_unit, (int, float)) or not math.isfinite(time_unit) or time_unit <= 0:
        raise SwfError(f"time unit must be a number of seconds > 0, got {time_unit!r}")
    recs = [to_record(r, time_unit=time_unit, index=i + 1) for i, r in enumerate(records)]
    if integer_times:
        for r in recs:
            for f in ("submit", "wait", "run", "req_time", "think", "cpu"):
                v = getattr(r, f)
                if v != -1:
                    setattr(r, f, int(round(v)))
    recs.sort(key=lambda r: r.submit)
    out = []
    if header is None:
        header = {}
    if isinstance(header, dict):
        h = {"Version": "2.2", **{str(k): v for k, v in header.items()}}
        for k, v in h.items():
            first, *rest = str(v).split("\n")
            out.append(f"; {k}: {first}")
            out.extend(f";{' ' * (len(k) + 3)}{line}" for line in rest)
    else:
        out.extend(line if line.startswith(";") else f";{line}" for line in header)
    out.extend(r.line() for r in recs)
    text = "\n".join(out) + "\n"
    p = os.fspath(path)
    if os.path.isdir(p):
        raise SwfError(f"cannot write {p}: it is a directory")
    tmp = p + ".part"
    try:
        if p.endswith(".gz"):
            with gzip.open(tmp, "wt", encoding="utf-8") as f:
                f.write(text)
        else:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(text)
        os.replace(tmp, p)  # a half-written log never takes the place of a good one
    except BaseException:
        try:
            os.remove(tmp)  # nor is it left lying beside it
        except OSError:
            pass
        raise
    return len(recs)


def write_schedule(path, records: Iterable, *, topology=None, time_unit: float = 1.0,
                   note: str | None = None, integer_times: bool = False) -> int:
    """Write a simulated schedule (the simulator's job records, ``SimResult.records``:
    :class:`emulator.sim.metrics.JobRecord`) with a header naming the
    machine (``MaxNodes``/``MaxProcs`` from ``topology``), the time unit and ``note``."""
    header: dict = {"Computer": "mcemu"}
    if topology is not None:
        topo = parse_topology(topology)
        header.update({"Installation": str(topo), "MaxNodes": topo.size, "MaxProcs": topo.size})
    header["TimeUnit"] = f"{time_unit:g} seconds per model time unit"
    if note:
        header["Note"] = note
    return write_swf(path, records, header, time_unit=time_unit, integer_times=integer_times)


__all__ = ["SwfRecord", "SwfLog", "SwfError", "JobList", "FIELDS", "read_swf", "iter_swf",
           "read_jobs", "write_swf", "write_schedule", "to_record"]
