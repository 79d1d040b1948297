"""The interconnection network: channels and routes, the wormhole timing model, the one driver
that runs it on a caller's clock, traffic sources, message statistics, communication patterns
and placed jobs (dissertation chapters 3-6; NETWORK.md).

Pure like the rest of the core: time is an argument, nothing here reads a clock or does I/O.
The analytic contention models live beside the simulator in :mod:`.homogeneous`,
:mod:`.heterogeneous` and :mod:`.metrics`.

The placed jobs (:mod:`.layout`) are loaded when first named here: they import the policy stack
(48 of the 85 ms it takes the live pattern task, nodes.pattern, to start, and a job starts one
such task per node), which the model, the driver and the patterns do not need.
"""
import importlib

from scheduler.network.channels import Channels
from scheduler.network.driver import Clock, NetworkDriver
from scheduler.network.patterns import PATTERNS, pattern_pairs
from scheduler.network.stats import MessageStats, percentile
from scheduler.network.traffic import Path, PathLoop, PathStats, Traffic, path_stats
from scheduler.network.wormhole import Delivery, NetworkError, Wormhole

__all__ = ["Channels", "Clock", "Delivery", "MessageStats", "NetJob", "NetworkDriver", "NetworkError", "PATTERNS",
           "Path", "PathLoop", "PathStats", "Traffic", "Wormhole", "check_disjoint", "load_job_file", "parse_job",
           "path_stats", "pattern_pairs", "percentile"]
_LAYOUT = ("NetJob", "check_disjoint", "load_job_file", "parse_job")


def __getattr__(name):
    if name in _LAYOUT:
        return getattr(importlib.import_module("scheduler.network.layout"), name)
    raise AttributeError(f"module 'scheduler.network' has no attribute {name!r}")
