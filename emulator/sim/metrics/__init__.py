"""The metrics of DESIGN ("Metrics"): the formulas, the simulator's observer and the gang
summary. The live monitor (emulator.monitor.model) and the experiments' points
(emulator.experiments._points) use the same formulas.

Over an observation time T: ``generated`` G, ``completed`` C, ``allocated`` A, total queueing
delay R, total service demand S; ``mean_queueing_delay`` M = R/A; ``utilization`` U =
node-time used / node-time available (allocated nodes, clipped to the window);
``throughput`` X = C/T; ``power`` X/M; ``measured_load`` S/(N T), S counting each admitted
job's runtime times the nodes its request is rounded to (lazy 4.2: the measured rate differs
from the input rate by the round-off to cubes), so without folding it matches U in steady
state; ``mean_turnaround`` (wait + execution after folding, over completed jobs);
``external_fragmentation`` (dissertation 8.2: the idle share of the machine, averaged over
the moments an event left jobs waiting and started none -- the scheduler "is not able to
allocate any jobs"); ``ls_ratio`` (mean wait of jobs whose allocated size is above the median
size over the mean wait of the others, dissertation 8.2; jobs equal to the median count as
small); ``per_size`` means; ``delay_over_time`` (M of the jobs allocated so far, sampled
through the run: lazy Figure 8); ``mean_jobs_in_system`` (time average, for Little's law).

One observation window per run, for every metric. Without a warm-up it is [0, T] (lazy 4.2)
or, for a run to N completions or to the end of a trace, [0, the last event]. With a warm-up
of W completions (RSR paper 4.1: 50,500 completions, the first 500 not counted) the window
starts at the W-th completion, with ``--time T`` as with ``--jobs N``: G, C, A, R, S, M, U,
X, power, the measured load, the turnaround, per-size means, L/S, the fragmentation and the
jobs in system all count only what happens in it (a job allocated in the warm-up is not in
A or R; one that completes after it is in C and in the turnaround means; U clips the
node-time to the window). ``observation_time`` is the window's length and ``window`` states
it: ``{"start", "end", "warmup_completions", "ends_by"}`` (``ends_by``: "time",
"completions" or "drained"). ``delay_over_time`` alone is cumulative from 0 (lazy Figure 8
plots M of every job allocated so far).

One schema, one meaning per name (issue 29). Every run (emulator.sim.run: the work models
fixed, gang and comm) reports its metrics in one dict; a name means the same quantity in every
work model, and a quantity only one model has carries a name of its own:

* ``throughput``: completed / observation time (the window above), fixed and comm runs. A gang
  run, whose job list is run to completion, reports ``jobs_per_makespan`` = completed / time of
  the last completion (``makespan``) instead.
* ``mean_slowdown``: the mean over jobs of turnaround / run time (gang runs: the time-sharing
  penalty of Zhou, Brent and Qu). Jobs that communicate report ``mean_comm_slowdown``: the mean
  over the communicating jobs of run time / contention-free run time, what the network's
  contention cost them (NETWORK.md 3.3).
* ``completed``, ``mean_turnaround``: completions counted and their mean turnaround (wait +
  execution), in every work model.
* the fixed and comm models add the window's metrics above; the comm model adds
  ``comm_completed``, ``mean_message_delay``, ``mean_message_contention``, ``mean_comm_run_time``,
  ``mean_contention_free_run_time``, ``mean_comm_slowdown``, ``messages`` (:func:`comm_metrics`);
  the gang model adds ``mean_turnaround_short``/``_long``, ``short_threshold``, ``makespan``,
  ``jobs_per_makespan``, ``jobs_per_level``, its switch counts and costs (:func:`gang_metrics`).

Renamed in issue 29 (the old names had a second meaning): the gang summary's ``throughput``
is ``jobs_per_makespan``; the comm summary's ``mean_slowdown`` is ``mean_comm_slowdown``.

Three modules: :mod:`.formulas` (the formulas, the per-job sums, a completed job's record),
:mod:`.observer` (:class:`SimMetrics`, the simulator's observer) and :mod:`.summaries` (jobs
that communicate, gang runs); their public names are here.
"""
from __future__ import annotations

from emulator.sim.metrics.formulas import (JobRecord, busy_node_time, ls_ratio, ls_ratio_of, mean,
                                           mean_queueing_delay, measured_load, per_size_means, power, throughput,
                                           time_average, turnaround_by_asked, utilization)
from emulator.sim.metrics.observer import SimMetrics
from emulator.sim.metrics.summaries import comm_metrics, gang_metrics

__all__ = ["JobRecord", "SimMetrics", "busy_node_time", "comm_metrics", "gang_metrics", "ls_ratio", "ls_ratio_of", "mean",
           "mean_queueing_delay", "measured_load", "per_size_means", "power", "throughput", "time_average",
           "turnaround_by_asked", "utilization"]
