"""Synthetic workloads: Poisson arrivals, job sizes and service times (DESIGN "Workloads").

A workload is a stream of :class:`scheduler.jobs.Job` in submit order, drawn in numpy blocks
so that a 10,000-time-unit run never holds all its jobs in memory.

Arrivals (lazy paper section 4; RSR paper 4.1): a Poisson process of rate
``lambda = system size / (mean job size x mean service) x load``, where the mean job size is
the mean number of processors a job asks for (lazy 4: "mean job size of 10 processes" on a
6-cube, i.e. the mean of 2^k for k uniform over 0..5, 63/6 = 10.5). The paper's worked example
reads ``2^6 / (10 x 5) x 0.3 = 0.32``; the formula gives 0.384 (0.32 would be load 0.25), so the
printed result is an arithmetic slip and we follow the formula, which the RSR paper repeats.

Sizes on an n-cube are dimensions 0..n-1: the lazy paper lists p_0..p_9 for a 10-cube and
the RSR paper draws "between 0 and 7 dimensions" on an 8-cube. The lazy captions' "mean job
size = 5-cube" is loose: the symmetric normal (p_0 = p_9) has mean dimension 4.5.

Demand (lazy 4.1): *dependent* -- the residence time is drawn from the service distribution
whatever the size (dissertation 7.2 calls this "uncorrelated"); *independent* -- a total
demand x is drawn from the same family with mean ``mean job size x mean residence time`` and
the residence time is ``x / processors``. For a processor-count request "processors" is the
count asked for (before the topology rounds it to a cube or submesh).

Determinism: one seed gives one job stream. Arrival times, sizes and service times come from
three independent generators spawned from the seed, so the stream does not depend on the
allocator or discipline, changing only the service distribution keeps the same arrival times
and sizes (common random numbers), and the first N jobs of a longer stream are the N jobs of
a shorter one.
"""
from __future__ import annotations

# every name stays importable from emulator.sim.workloads, as when it was one module
from emulator.sim.workloads.common import SERVICE_DISTRIBUTIONS, SIZE_DISTRIBUTIONS, WorkloadError
from emulator.sim.workloads.sizes import (  # noqa: F401
    NormalCubes, RectRestricted, RectUnrestricted, SizeDistribution, SquarePow2, SquareVar, UniformCubes,
    UniformProcessors, normal_probabilities, size_names,
)
from emulator.sim.workloads.service import (  # noqa: F401
    ExponentialService, HyperexpService, ServiceDistribution, TruncNormalService, UniformService,
)
from emulator.sim.workloads.workload import (  # noqa: F401
    BLOCK, Workload, arrival_rate, fixed_jobs, generate, make_workload,
)

__all__ = [
    "SIZE_DISTRIBUTIONS", "SERVICE_DISTRIBUTIONS", "Workload", "WorkloadError", "generate", "make_workload",
    "fixed_jobs", "arrival_rate", "normal_probabilities", "size_names", "SizeDistribution",
    "ServiceDistribution",
]
