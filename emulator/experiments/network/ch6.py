"""Dissertation chapter 6 (job partitioning and placement, §6.1-6.2) as ``mcemu reproduce``
experiments. Importing this module registers them:

* ``net-fig6-2`` (Figs 6.2 + 6.3), ``net-fig6-4``, ``net-fig6-5``: path level, in
  :mod:`.ch6_paths` and :mod:`.ch6_competitors` (stair-layered competing paths, simulation
  and chapter 5's analysis);
* ``net-fig6-8`` (Figs 6.8 + 6.9, Scenario A, R2), ``net-fig6-11`` (Scenario B, R3),
  ``net-fig6-13`` (where to cut, R4): job level, in :mod:`.ch6_rates`, :mod:`.ch6_levels` and
  :mod:`.ch6_cut` (shared settings in :mod:`.ch6_jobs`), on the layouts of
  :mod:`.ch6_layouts` (whose docstring states the reconstruction and its readings).

The two-job layouts (NETWORK.md 6.2, rebuilt from the congestion counts of §6.2.4) are built
as job-file dicts by :func:`scenario_a`, :func:`scenario_b` and :func:`interleaved_jobs`, for
``net_point`` or ``mcemu net simulate --job-file`` (wrap them as ``{"jobs": [...]}``) on
:data:`JOB_MESH`.
"""
from __future__ import annotations

# importing registers the experiments, in the chapter's order
from emulator.experiments.network import ch6_paths  # noqa: F401, I001
from emulator.experiments.network import ch6_competitors  # noqa: F401
from emulator.experiments.network import ch6_rates  # noqa: F401
from emulator.experiments.network import ch6_levels  # noqa: F401
from emulator.experiments.network import ch6_cut  # noqa: F401
from emulator.experiments.network.ch6_layouts import (  # noqa: F401
    A_PIECES, B_PIECES, FIRST_CUT, JOB_MESH, MIDDLE_CUT, ORDERED, REMOVED, SWAPPED, choose_removed_path,
    crossing_counts, inside_congestion, interactions, interleaved_jobs, job_dict, job_nodes, piece_columns,
    removal_mismatch, scenario_a, scenario_b, transpose_paths,
)
from emulator.experiments.network.ch6_competitors import competitors_mtbs  # noqa: F401
from emulator.experiments.network.ch6_paths import LAYOUTS, STAIR_MESH, layout_mtbs, stair_spec  # noqa: F401

__all__ = ["A_PIECES", "B_PIECES", "FIRST_CUT", "JOB_MESH", "LAYOUTS", "MIDDLE_CUT", "ORDERED", "REMOVED", "STAIR_MESH",
           "SWAPPED", "choose_removed_path", "competitors_mtbs", "crossing_counts", "inside_congestion", "interactions",
           "interleaved_jobs", "job_dict", "job_nodes", "layout_mtbs", "piece_columns", "removal_mismatch",
           "scenario_a", "scenario_b", "stair_spec", "transpose_paths"]
