"""SWF written: records of any kind (:func:`to_record`), a log (:func:`write_swf`), a simulated
schedule with a header naming the machine (:func:`write_schedule`)."""
from __future__ import annotations

import gzip
import math
import os
from typing import Iterable

from emulator.sim.swf.log import FIELDS, SwfError, SwfRecord
from scheduler.jobs import Job
from scheduler.topology import parse_topology


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
