"""The Standard Workload Format (SWF 2.2, Parallel Workloads Archive): read logs, replay them
as jobs, write simulated schedules.

Three modules: :mod:`.log` (the format: fields, records, reading a log as it is),
:mod:`.replay` (a log as jobs for the simulator, :func:`read_jobs`, with its fast path for the
usual log) and :mod:`.write` (records and simulated schedules written as SWF).

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

from emulator.sim.swf.log import FIELD_TITLES, FIELDS, JobList, SwfError, SwfLog, SwfRecord, iter_swf, read_swf
from emulator.sim.swf.replay import read_jobs
from emulator.sim.swf.write import to_record, write_schedule, write_swf

__all__ = ["SwfRecord", "SwfLog", "SwfError", "JobList", "FIELDS", "FIELD_TITLES", "read_swf", "iter_swf",
           "read_jobs", "write_swf", "write_schedule", "to_record"]
