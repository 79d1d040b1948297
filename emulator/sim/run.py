"""The one virtual-time run: :func:`run` (a :class:`~emulator.sim.spec.RunSpec`) -> :class:`RunResult`.

The stack is built by scheduler.stack, the jobs come from the spec's workload (the Poisson
generator of emulator.sim.workloads or an SWF log), and the work model named in the spec runs
them: ``fixed`` and ``comm`` on the discrete-event simulator (emulator.sim.simulator, with the
communication model of emulator.sim.comm_work for ``comm``), ``gang`` on the gang simulator
(emulator.sim.gang). The result's ``metrics`` follow the one schema of emulator.sim.metrics:
a name means one thing in every work model.

    from scheduler.stack import StackConfig
    from emulator.sim.spec import RunSpec, StopRule, WorkloadSpec
    res = run(RunSpec(StackConfig("hypercube:6", scheduler="lazy"), WorkloadSpec(load=0.5, seed=1),
                      StopRule(until=1000)))
"""
from __future__ import annotations

import dataclasses
import functools
import time
from dataclasses import dataclass, field

from emulator.sim.spec import Observers, RunSpec, RunSpecError, StopRule, WorkloadSpec, default_size
from scheduler.stack import build
from scheduler.topology import parse_topology


@dataclass
class RunResult:
    """``metrics``: the one schema (emulator.sim.metrics); ``workload``: what ran (the stream's
    rate and distributions, or the trace); ``stack``: the StackConfig as built (its allocator
    resolved); ``records``: JobRecords of the counted completions (``observe.records``);
    ``comm``: the communicating jobs' records; ``jobs``: the gang run's per-job dicts;
    ``network``: the comm model's settings; ``rejected``: jobs skipped; ``wall_seconds``:
    the run's wall clock (not deterministic)."""

    metrics: dict
    workload: dict
    stack: object
    records: list = field(default_factory=list)
    comm: list = field(default_factory=list)
    jobs: list = field(default_factory=list)
    network: dict | None = None
    rejected: list = field(default_factory=list)
    wall_seconds: float = 0.0
    job_list: list | None = None  # the finite job list a gang run or a fixed list ran


def run(spec: RunSpec) -> RunResult:
    """Run ``spec`` (see the module docstring). Unknown policies, sizes or trace files raise
    the errors of the stack, the workload generator and the SWF reader, before any event."""
    if not isinstance(spec, RunSpec):
        raise RunSpecError(f"run() takes a RunSpec, got {type(spec).__name__}")
    topo = parse_topology(spec.stack.topology)
    stack = build(spec.stack)
    return _MODELS[spec.work](spec, stack, topo)


# ---------------------------------------------------------------------------- the jobs


@functools.lru_cache(maxsize=4)
def read_trace(path: str, topology: str, time_unit: float) -> list:
    """An SWF log's jobs (cached: the replications of a point read it once per process)."""
    from emulator.sim import swf

    return swf.read_jobs(path, topology, time_unit=time_unit)


def scaled_jobs(jobs: list, topology, load: float) -> list:
    """The trace's jobs with submit times scaled about the first one so that the offered load,
    processor-time asked / (machine size x span of the submits), is ``load``."""
    if len(jobs) < 2:
        return jobs
    topo = parse_topology(topology)
    first, last = jobs[0].submit, max(j.submit for j in jobs)
    if last <= first:
        return jobs
    work = sum(topo.normalize(j.request).processors_needed * j.runtime for j in jobs)
    factor = (work / (topo.size * (last - first))) / load
    return [dataclasses.replace(j, submit=first + (j.submit - first) * factor) for j in jobs]


def _trace_jobs(w: WorkloadSpec, topo) -> tuple[list, dict]:
    jobs = read_trace(str(w.trace), str(topo), float(w.time_unit))
    jobs = list(jobs[:w.limit] if w.limit else jobs)
    info = {"trace": str(w.trace), "jobs": len(jobs)}
    if w.load is not None:
        jobs = scaled_jobs(jobs, topo, w.load)
        info["load"] = w.load
    return jobs, info


def workload(w: WorkloadSpec, topo, size: str | None = None):
    """The Poisson workload of ``w`` (emulator.sim.workloads.Workload); ``iatm`` stands in for
    the load when given; ``size`` overrides the spec's (a comm run's square jobs)."""
    from emulator.sim.workloads import Workload

    kw = dict(size_dist=size or w.size or default_size(topo), service_dist=w.service,
              service_mean=w.service_mean, demand=w.demand, seed=w.seed, size_params=w.size_params,
              service_params=w.service_params)
    load = w.load
    if w.iatm is not None:
        load = 1.0 / (w.iatm * Workload.build(topo, 1.0, **kw).rate)
    return Workload.build(topo, load, **kw)


def _describe(wl, seed) -> dict:
    return {"load": wl.load, "arrival_rate": wl.rate, "mean_job_size": wl.mean_size, "size_dist": wl.size_dist,
            "service": wl.service, "service_mean": wl.service_mean, "demand": wl.demand, "seed": seed}


def _jobs(spec: RunSpec, topo, *, finite: bool, size: str | None = None) -> tuple:
    """(jobs, workload info): the trace's, the fixed list of ``count``, the finite list of a
    gang run (the first ``completions`` jobs or those submitted before ``until``), or the stream
    up to ``until`` (endless with a completion count)."""
    w, s = spec.workload, spec.stop
    if w.trace is not None:
        return _trace_jobs(w, topo)
    wl = workload(w, topo, size)
    info = _describe(wl, w.seed)
    if w.count is not None:
        jobs = wl.job_list(w.count)
    elif finite:
        jobs = list(wl.jobs(s.completions, s.until))
    else:
        return (wl.jobs(until=s.until) if s.until else wl.jobs()), info
    info["jobs"] = len(jobs)
    return jobs, info


# ---------------------------------------------------------------------------- work models


def _simulate(spec: RunSpec, stack, jobs, model=None):
    from emulator.sim.simulator import Simulation

    o, s = spec.observe, spec.stop
    sim = Simulation(stack.policy, jobs, until=s.until, completions=s.completions, warmup=s.warmup,
                     keep_records=o.records, keep_nodes=o.nodes, samples=o.samples, progress=o.progress,
                     trace=o.trace, model=model)
    t0 = time.perf_counter()
    res = sim.run()
    return res, time.perf_counter() - t0


def _fixed(spec: RunSpec, stack, topo) -> RunResult:
    jobs, info = _jobs(spec, topo, finite=False)
    res, wall = _simulate(spec, stack, jobs)
    return RunResult(res.metrics, info, stack.config, res.records, rejected=res.rejected, wall_seconds=wall,
                     job_list=jobs if isinstance(jobs, list) else None)


def comm_profiles(spec: RunSpec) -> list:
    """The comm model's profiles as ``[(CommProfile, share)]`` (``--comm`` specs parsed)."""
    from scheduler.comm_profile import parse_comm

    return [parse_comm(p) if isinstance(p, str) else tuple(p) for p in spec.option("comm")]


def comm_size(spec: RunSpec, topo, profiles) -> str:
    """The size distribution of a comm run: the spec's, else the topology's, except square-var
    on a mesh when a profile's pattern needs square jobs."""
    if spec.workload.size:
        return spec.workload.size
    if topo.kind == "mesh" and not all(c.fits(2, 3) for c, _ in profiles):
        return "square-var"
    return default_size(topo)


def _unit(spec: RunSpec, profiles) -> tuple[float, str]:
    """Microseconds of the network per job time unit, and the rule that gave it."""
    from emulator.sim.comm_work import auto_unit

    unit, w = spec.option("net_time_unit"), spec.workload
    if not (isinstance(unit, str) and unit.strip().lower() == "auto"):
        return float(unit), "given (--net-time-unit)"
    if w.trace is not None:
        return w.time_unit * 1e6, "auto: the trace's --time-unit seconds"
    us = auto_unit(profiles, w.service_mean, length=spec.option("message_length"), flit_time=spec.option("flit_time"))
    return us, "auto: the profiles' mean contention-free run time K x (MTBS + L x T_t) is --service-mean units"


def _comm(spec: RunSpec, stack, topo) -> RunResult:
    from emulator.sim.comm_work import CommWork, comm_jobs

    profiles = comm_profiles(spec)
    jobs, info = _jobs(spec, topo, finite=False, size=comm_size(spec, topo, profiles))
    us, rule = _unit(spec, profiles)
    seed = spec.workload.seed
    model = CommWork(topo, unit_us=us, flit_time=spec.option("flit_time"), length=spec.option("message_length"),
                     seed=seed)
    net = {**model.settings(), "time_unit_rule": rule,
           "profiles": [{"comm": str(c), "share": s} for c, s in profiles]}
    res, wall = _simulate(spec, stack, comm_jobs(jobs, profiles, topo, seed=seed), model)
    return RunResult(res.metrics, info, stack.config, res.records, res.comm, network=net, rejected=res.rejected,
                     wall_seconds=wall)


def _gang(spec: RunSpec, stack, topo) -> RunResult:
    from emulator.sim import gang as gang_sim

    jobs, info = _jobs(spec, topo, finite=True)
    opt = spec.option
    t0 = time.perf_counter()
    res = gang_sim.simulate(stack.policy, jobs, switch_cost=opt("switch_cost"), reload_time=opt("reload_time"),
                            reload_rate=opt("reload_rate"), closed=opt("closed"),
                            short_threshold=opt("short_threshold"),
                            max_time=spec.stop.until if opt("cut_at_until") else None)
    return RunResult(res.metrics, info, stack.config, jobs=res.jobs, wall_seconds=time.perf_counter() - t0,
                     job_list=jobs)


_MODELS = {"fixed": _fixed, "comm": _comm, "gang": _gang}


__all__ = ["Observers", "RunResult", "RunSpec", "RunSpecError", "StopRule", "WorkloadSpec", "comm_profiles",
           "read_trace", "run", "scaled_jobs", "workload"]
