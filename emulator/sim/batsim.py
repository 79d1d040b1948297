"""A simulated schedule as Batsim's ``jobs.csv`` (``mcemu simulate --jobs-out FILE``), so that
evalys (``JobSet.from_csv``), pandas and the plotting scripts written for Batsim draw Gantt
charts and compute their metrics from an mcemu run.

One row per job that completed in the run (the counted completions, ``SimResult.records``:
jobs still waiting or running when the observation time ends, and warm-up completions, are
not written), with Batsim's column names in its order (docs: batsim.readthedocs.io, "Jobs"
output; its ``profile`` column included as Batsim writes it):

    job_id, workload_name, profile, submission_time, requested_number_of_resources,
    requested_time, success, final_state, starting_time, execution_time, finish_time,
    waiting_time, turnaround_time, stretch, allocated_resources, consumed_energy, metadata

``allocated_resources`` is Batsim's interval set (node ids, ranges and singletons separated
by a space: ``0-3 8``); ``requested_number_of_resources`` is the processors the job asked for
(a job folded by size reduction runs on fewer); ``requested_time`` is the job's run time (mcemu
has no walltime); ``stretch`` is turnaround / execution time; ``consumed_energy`` is -1 (no
energy model, as Batsim writes without one); times in seconds (model time x ``time_unit``).
"""
from __future__ import annotations

import csv
import os
from typing import Iterable

COLUMNS = ("job_id", "workload_name", "profile", "submission_time", "requested_number_of_resources",
           "requested_time", "success", "final_state", "starting_time", "execution_time", "finish_time",
           "waiting_time", "turnaround_time", "stretch", "allocated_resources", "consumed_energy", "metadata")


def interval_set(nodes: Iterable[int]) -> str:
    """Batsim's interval-set text of node ids: ``[0, 1, 2, 3, 8]`` -> ``"0-3 8"``."""
    ids = sorted(set(int(n) for n in nodes))
    parts, i = [], 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        parts.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return " ".join(parts)


def _t(v: float) -> str:
    return repr(float(v))


def write_jobs_csv(path, records: Iterable, *, workload_name: str = "w0", time_unit: float = 1.0,
                   profile: str = "delay") -> int:
    """Write ``records`` (:class:`emulator.sim.metrics.JobRecord`, with ``nodes``: a run with
    ``keep_nodes``) to ``path`` in submission order; returns the number of rows. The file is
    written beside its name and renamed, so a failed write leaves no half file."""
    recs = sorted(records, key=lambda r: (r.submit, str(r.id)))
    tmp = f"{os.fspath(path)}.tmp"
    try:
        with open(tmp, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(COLUMNS)
            for r in recs:
                submit, start, end = r.submit * time_unit, r.start * time_unit, r.end * time_unit
                run = end - start
                w.writerow([r.id, workload_name, profile, _t(submit), r.asked, _t(r.runtime * time_unit), 1,
                            "COMPLETED_SUCCESSFULLY", _t(start), _t(run), _t(end), _t(start - submit),
                            _t(end - submit), _t((end - submit) / run) if run > 0 else "", interval_set(r.nodes),
                            -1, ""])
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise
    return len(recs)


__all__ = ["COLUMNS", "interval_set", "write_jobs_csv"]
