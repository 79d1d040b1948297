"""``mcemu sweep``: a user's own grid, run like a reproduction.

A sweep is the product of its axes -- topologies, allocators, disciplines, size reductions,
gang policies, loads, size and service distributions -- on a synthetic Poisson workload or on
an SWF trace, given as flags or as a TOML file (:mod:`.grid`). It becomes an
:class:`emulator.experiments.experiment.Experiment` and runs through the one replication
runner (emulator.experiments.runner.replicate: a local process pool or ``--dask``, resume from
``runs.jsonl``, the Rich progress bar, replications until a CI half-width or a cap). Each
point is one :func:`.point.sweep_point`; the outputs (:mod:`.output`) are ``results.csv``,
``figure.png`` (a metric against the swept axis, one series per policy, 95% error bars) and
``REPORT.md`` with the settings.

    from emulator.sweep import Sweep, run_sweep
    sweep = Sweep.from_dict({"scheduler": ["lazy", "fcfs"], "load": [0.3, 0.6], "time": 500, "seeds": 3})
    summary = run_sweep(sweep, "sweeps")
"""
from __future__ import annotations

from emulator.sweep.grid import Sweep, SweepError, load_toml
from emulator.sweep.output import run_sweep

__all__ = ["Sweep", "SweepError", "load_toml", "run_sweep"]
