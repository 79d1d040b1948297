"""The Workload: a topology, a load, a size and a service distribution and a seed, turned into a
stream of :class:`scheduler.jobs.Job` (Poisson arrivals at the papers' lambda), and the
``generate`` / ``make_workload`` / ``fixed_jobs`` shortcuts."""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from emulator.sim.spec import WorkloadSpec as _W, default_size
from emulator.sim.workloads.common import SERVICE_DISTRIBUTIONS, SIZE_DISTRIBUTIONS, WorkloadError, _positive
from emulator.sim.workloads.service import ServiceDistribution
from emulator.sim.workloads.sizes import SizeDistribution
from scheduler.jobs import Job
from scheduler.topology import Topology, parse_topology

BLOCK = 4096  # jobs drawn per numpy block; fixed so that a seed's stream never depends on it


def arrival_rate(system_size: float, mean_size: float, mean_service: float, load: float) -> float:
    """lambda = system size / (mean job size x mean service) x load (lazy 4, RSR 4.1)."""
    return system_size / (_positive(mean_size, "mean job size") * _positive(mean_service, "mean service")) \
        * _positive(load, "load")


def _accepts(factory) -> set[str]:
    ps = inspect.signature(factory).parameters
    return {n for n, p in ps.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)} - {"topology", "mean", "self"}


def _split_params(size_name: str, service_name: str, params: dict) -> tuple[dict, dict]:
    sz, sv = _accepts(SIZE_DISTRIBUTIONS.get(size_name)), _accepts(SERVICE_DISTRIBUTIONS.get(service_name))
    a, b = {}, {}
    for k, v in params.items():
        if k in sz and k in sv:
            raise WorkloadError(f"option {k!r} fits both {size_name!r} and {service_name!r}; "
                                f"pass size_params/service_params")
        if k in sz:
            a[k] = v
        elif k in sv:
            b[k] = v
        else:
            raise WorkloadError(
                f"unknown workload option {k!r}; size {size_name!r} takes {sorted(sz) or 'none'}, "
                f"service {service_name!r} takes {sorted(sv) or 'none'}")
    return a, b


def _seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise WorkloadError(f"seed must be an integer >= 0, got {seed!r}")
    return int(seed)


@dataclass(frozen=True)
class Workload:
    """One configured workload: ``rate`` is lambda, ``mean_size`` the mean processors asked
    for; the stream's total demand (runtime x processors asked) over N T then measures
    ``load`` up to sampling noise, for dependent and independent demand alike. The
    simulator's ``measured_load`` counts the nodes a request is rounded to (lazy 4.2), so
    with processor-count requests on cubes or submeshes it is higher by the round-off."""

    topology: Topology
    load: float
    size_distribution: SizeDistribution
    service_distribution: ServiceDistribution  # residence time (dependent demand), mean = service_mean
    demand: str = _W.demand
    seed: int = 0
    mean_size_override: float | None = None  # a paper's round "mean job size" for lambda

    @classmethod
    def build(cls, topology, load: float, size_dist: str | None = None, service_dist: str = _W.service,
              service_mean: float = _W.service_mean, demand: str = _W.demand, seed: int = 0,
              size_params: dict | None = None, service_params: dict | None = None,
              mean_size: float | None = None, **params) -> "Workload":
        """``mean_size`` replaces the exact mean processors in lambda only (the lazy paper's
        6-cube example uses a round 10 for the 10.5 of its uniform sizes)."""
        topo = parse_topology(topology)
        size_dist = size_dist or default_size(topo)  # the defaults: emulator.sim.spec.WorkloadSpec
        if mean_size is not None:
            mean_size = _positive(mean_size, "mean job size")
        _positive(load, "load")
        if demand not in ("dependent", "independent"):
            raise WorkloadError(f"demand must be 'dependent' or 'independent', got {demand!r}")
        a, b = _split_params(size_dist, service_dist, params)
        try:
            sizes = SIZE_DISTRIBUTIONS.create(size_dist, topo, **{**a, **(size_params or {})})
            service = SERVICE_DISTRIBUTIONS.create(service_dist, service_mean, **{**b, **(service_params or {})})
        except TypeError as e:  # a wrong option passed in size_params/service_params
            raise WorkloadError(str(e)) from None
        return cls(topo, float(load), sizes, service, demand, _seed(seed), mean_size)

    @property
    def size_dist(self) -> str:
        return self.size_distribution.registry_name

    @property
    def service(self) -> str:
        return self.service_distribution.registry_name

    @property
    def mean_size(self) -> float:
        if self.mean_size_override is not None:
            return self.mean_size_override
        return self.size_distribution.mean_processors

    @property
    def mean_service(self) -> float:
        return self.service_distribution.mean

    service_mean = mean_service

    @property
    def rate(self) -> float:
        return arrival_rate(self.topology.size, self.mean_size, self.mean_service, self.load)

    @property
    def demand_distribution(self) -> ServiceDistribution:
        """What a job's total service demand (dependent) or residence time is drawn from."""
        if self.demand == "independent":
            return self.service_distribution.scaled(self.mean_size)
        return self.service_distribution

    def describe(self) -> dict:
        return {"topology": str(self.topology), "load": self.load, "rate": self.rate,
                "mean_size": self.mean_size, "mean_service": self.mean_service,
                "demand": self.demand, "seed": self.seed,
                "size": self.size_distribution.describe(), "service": self.service_distribution.describe()}

    def _rngs(self):
        return [np.random.default_rng(s) for s in np.random.SeedSequence(self.seed).spawn(3)]

    def jobs(self, n: int | None = None, until: float | None = None, *, first_id: int = 1,
             at: float | None = None) -> Iterator[Job]:
        """Jobs in submit order: ``n`` of them, those submitted before ``until``, or (neither)
        an endless stream. ``at``: submit every job at that time instead (a batch)."""
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
            raise WorkloadError(f"job count must be an integer >= 0, got {n!r}")
        if until is not None:
            _positive(until, "until")
        if at is not None and (not isinstance(at, (int, float)) or not math.isfinite(at) or at < 0):
            raise WorkloadError(f"batch time must be >= 0, got {at!r}")
        return self._stream(n, until, first_id, at)

    def _stream(self, n, until, first_id, at):
        arr_rng, size_rng, svc_rng = self._rngs()
        mean_gap = 1.0 / self.rate
        dist = self.demand_distribution
        independent = self.demand == "independent"
        sizes = self.size_distribution
        request, cache = sizes.request, sizes._cache
        last, jid, left = 0.0, first_id, n
        while left is None or left > 0:
            gaps = arr_rng.standard_exponential(BLOCK) * mean_gap
            times = last + np.cumsum(gaps)
            last = float(times[-1])
            codes, procs = sizes.sample(size_rng, BLOCK)
            run = dist.sample(svc_rng, BLOCK)
            if independent:
                run = run / procs
            m = BLOCK if left is None else min(BLOCK, left)
            if until is not None:
                m = min(m, int(np.searchsorted(times, until, side="left")))
            submit = times[:m].tolist() if at is None else [float(at)] * m
            for t, c, r in zip(submit, codes[:m].tolist(), run[:m].tolist()):
                req = cache.get(c)
                yield Job(jid, t, req if req is not None else request(c), r)
                jid += 1
            if left is not None:
                left -= m
            if until is not None and last >= until:
                return

    def job_list(self, n: int, **kw) -> list[Job]:
        return list(self.jobs(n, **kw))


def generate(topology, load: float, size_dist: str | None = None, service_dist: str = _W.service,
             service_mean: float = _W.service_mean, demand: str = _W.demand, seed: int = 0,
             jobs: int | None = None, until: float | None = None, **params) -> Iterator[Job]:
    """Stream the jobs of a Poisson workload (see the module docstring). ``params`` go to the
    size or the service distribution, whichever takes them (e.g. ``cx=4, alpha=0.95``)."""
    w = Workload.build(topology, load, size_dist, service_dist, service_mean, demand, seed, **params)
    return w.jobs(jobs, until)


def make_workload(topology, load: float, size_dist: str | None = None, service: str = _W.service,
                  service_mean: float = _W.service_mean, demand: str = _W.demand, seed: int = 0,
                  **params) -> Workload:
    """:meth:`Workload.build` with the command line's names (``--service``)."""
    return Workload.build(topology, load, size_dist, service, service_mean, demand, seed, **params)


def fixed_jobs(topology, n: int, size_dist: str | None = None, service_dist: str = _W.service,
               service_mean: float = _W.service_mean, demand: str = _W.demand, seed: int = 0,
               load: float | None = None, **params) -> list[Job]:
    """A fixed list of ``n`` jobs for completion-time runs (lazy Figure 9: a fixed set of jobs,
    the same order for every discipline). ``load=None`` submits all at time 0 (a batch);
    with a load they arrive as the Poisson stream of that load, as in the paper's Figure 9
    ("generated at various input rates"). Sizes and times are those of ``generate`` with the
    same seed, whichever arrival pattern is chosen."""
    w = Workload.build(topology, 1.0 if load is None else load, size_dist, service_dist,
                       service_mean, demand, seed, **params)
    return w.job_list(n, at=0.0 if load is None else None)
