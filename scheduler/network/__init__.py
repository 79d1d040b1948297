"""The interconnection network: channels and routes, the wormhole timing model, the one driver
that runs it on a caller's clock, traffic sources, message statistics, communication patterns
and placed jobs (dissertation chapters 3-6; NETWORK.md).

Pure like the rest of the core: time is an argument, nothing here reads a clock or does I/O.
The analytic contention models live beside the simulator in :mod:`.homogeneous`,
:mod:`.heterogeneous` and :mod:`.metrics`.
"""
from scheduler.network.channels import Channels
from scheduler.network.driver import Clock, NetworkDriver
from scheduler.network.layout import NetJob, check_disjoint, load_job_file, parse_job
from scheduler.network.patterns import PATTERNS, pattern_pairs
from scheduler.network.stats import MessageStats, percentile
from scheduler.network.traffic import Path, PathLoop, PathStats, Traffic, path_stats
from scheduler.network.wormhole import Delivery, NetworkError, Wormhole

__all__ = ["Channels", "Clock", "Delivery", "MessageStats", "NetJob", "NetworkDriver", "NetworkError", "PATTERNS",
           "Path", "PathLoop", "PathStats", "Traffic", "Wormhole", "check_disjoint", "load_job_file", "parse_job",
           "path_stats", "pattern_pairs", "percentile"]
