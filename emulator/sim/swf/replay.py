"""A log replayed as jobs (:func:`read_jobs`, the readings of the package docstring), with a
fast path for the usual log: numpy parses its job lines and its jobs are made column by column
(issue 18); anything unusual goes the general way, through :func:`emulator.sim.swf.log.read_swf`,
which says what is wrong."""
from __future__ import annotations

import gzip
import io
import math
import os
import warnings
import zlib
from itertools import repeat
from operator import attrgetter

import numpy as np

from emulator.sim.engine import cycle_gc_paused
from emulator.sim.swf.log import JobList, SwfError, _read_header, read_swf
from scheduler.jobs import Job
from scheduler.topology import Request, RequestError, parse_topology

_PLAIN = b"0123456789- \t\n"  # what job lines of plain integers are made of


def _fast_columns(path, wanted):
    """``(comments, columns, lines)`` of a log made of a header (comment and blank lines)
    and then job lines of 18 plain integers each (an optional minus and ASCII digits: values
    ``int`` reads as :func:`iter_swf` does), the fields ``wanted`` (0-based) as int64 arrays,
    without a record object per line; None when anything is unusual (another token or
    character, a comment or blank line among the jobs, a carriage return, a malformed line, a
    bad gzip stream), so that :func:`read_swf` reads the log and says what is wrong. The
    lines (a range: the job lines follow one another) and comments are :func:`iter_swf`'s.

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
        return comments, [np.zeros(0, np.int64) for _ in wanted], range(skip + 1, skip + 1)
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
    return comments, [table[:, i] for i in wanted], range(skip + 1, skip + 1 + n)  # views, not copies


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


_JOB_META = Job.__dict__["meta"]  # Job's slot for its meta


class _LogColumns:
    """What a replayed log knows of its jobs beyond what they are -- line, user, requested time --
    as columns, from which a job's ``meta`` is made when first read (:class:`_Logged`). Its
    job numbers (distinct) find a job's row; its lines follow one another."""

    __slots__ = ("ids", "lines", "users", "req_times", "_rows")

    def __init__(self, ids: list, lines: range, users, req_times):
        self.ids, self.lines, self.users, self.req_times, self._rows = ids, lines, users, req_times, None

    def meta(self, job_id) -> dict:
        if self._rows is None:  # the first meta read: rows by job number
            self._rows = dict(zip(self.ids, range(len(self.ids))))
        i = self._rows[job_id]
        return _meta(self.lines[i], int(self.users[i]), float(self.req_times[i]))


class _Logged(Job):
    """A job of a replayed log (:func:`_plain_jobs`) whose ``meta`` -- the same dict
    :func:`_meta` gives -- is made when first read.

    Issue 18: a dict per job, made and kept whether anyone reads it or not (the simulator
    does not), was a tenth of a NASA replay's time and a third of its memory. Reading, setting,
    ``dataclasses.replace`` and copies behave as for a Job; a copy or a pickle is a plain
    Job."""

    __slots__ = ("_log",)

    @property
    def meta(self) -> dict:
        try:
            return _JOB_META.__get__(self, _Logged)
        except AttributeError:  # not read yet
            meta = self._log.meta(self.id)
            _JOB_META.__set__(self, meta)
            return meta

    @meta.setter
    def meta(self, value) -> None:
        _JOB_META.__set__(self, value)

    def __reduce__(self):
        return Job, (self.id, self.submit, self.request, self.runtime, self.name, self.meta)


def _logged_jobs(ids, submits, requests, runtimes, log, _new=object.__new__, _cls=_Logged) -> list:
    """``_Logged`` jobs of values Job would take as they are (floats, finite, submit >= 0,
    run time > 0: checked column-wise by the caller), without a call per job (issue 18: half
    the cost of Job())."""
    jobs = []
    append = jobs.append
    for job_id, submit, request, runtime in zip(ids, submits, requests, runtimes):
        job = _new(_cls)
        job.id = job_id
        job.submit = submit
        job.request = request
        job.runtime = runtime
        job.name = ""
        job._log = log
        append(job)
    return jobs


def _plain_jobs(columns, lines, topo, time_unit, min_runtime, path) -> JobList | None:
    """:func:`_replay`'s jobs, column by column (issue 18: a third of its time was the tests
    and arithmetic of its loop), for int64 columns where no job is skipped, too large or
    repeated, the usual log; None otherwise (the loop says what)."""
    job_nos, submits, runs, procs, req_procs, req_times, users = columns
    sizes = np.where(procs > 0, procs, req_procs)
    ids = job_nos.tolist()
    if len(ids) and ((submits < 0) | (runs < 0) | (sizes <= 0) | (sizes > topo.size)).any():
        return None
    if not (job_nos[1:] > job_nos[:-1]).all() and len(set(ids)) != len(ids):  # numbered in order, or distinct
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
    with np.errstate(over="ignore"):  # a time no longer finite is Job's to refuse (below), as int / float gives inf
        run_times, submit_times = np.where(zero, min_runtime, runs) / time_unit, submits / time_unit
        req_times = req_times / time_unit
    jobs = JobList()
    jobs.clamped = job_nos[zero].tolist()
    job_requests = np.array(requests, dtype=object)[which.reshape(-1)].tolist()  # a job's Request, by its size
    if np.isfinite(submit_times).all() and np.isfinite(run_times).all() and (run_times > 0).all():
        log = _LogColumns(ids, lines, users.copy(), req_times)
        jobs.extend(_logged_jobs(ids, submit_times.tolist(), job_requests, run_times.tolist(), log))
    else:  # Job says what is wrong (a time unit so small that a time is no longer finite)
        jobs.extend(map(Job, ids, submit_times.tolist(), job_requests, run_times.tolist(), repeat("", len(ids)),
                        map(_meta, lines, users.tolist(), req_times.tolist())))
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
        jobs.append(Job(job_no, submit / time_unit, req, run / time_unit, "", _meta(lineno, user, req_time / time_unit)))
    jobs.sort(key=_submit)  # stable: equal submit times keep file order
    return JobList(jobs, header=header, clamped=clamped, skipped=skipped, time_unit=time_unit,
                   path=os.fspath(path))
