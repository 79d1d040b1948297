"""Jobs that communicate, as a work model of the event engine (our extension: NETWORK.md 3.3
and 9.2; the dissertation never turns message delays into run times).

A started job whose request carries a :class:`~scheduler.comm_profile.CommProfile` (pattern, MTBS,
K) maps its ranks to its nodes (``Allocation.ranks``: row-major order of the nodes unless the
allocator maps them itself, NETWORK.md 8.23), and every path of its pattern runs K iterations
of ``send -> wait for the delivery -> compute Exp(MTBS)`` (the closed loop of
:class:`~scheduler.network.traffic.Traffic`, first message after one computation phase) on ONE
wormhole network shared with every other running job's paths. The job departs when its last
path has delivered its K-th message: its run time comes from its messages, so where it was
placed, and next to whom, changes it. A job without a profile, or whose pattern has no paths on
its shape (a 1x1 transpose), runs for its ``Start.runtime`` as in the plain simulator.

**Time.** Jobs live in the workload's time unit, the network in flit times: one job time unit
is ``unit_us`` microseconds, i.e. ``unit_us / flit_time`` flit times: the virtual clock of the
network driver (:class:`~scheduler.network.driver.Clock`).
The front end's default (``mcemu simulate --net-time-unit auto``) makes a job's
contention-free run time K x (MTBS + L x T_t) equal to the workload's mean service time, so
that an offered load reads as it does for jobs that do not communicate.

**How it runs on the engine** (its ``works_ahead`` protocol): ``next_event(now, horizon)``
advances the network through every event before ``horizon`` (the engine's next own event; a
start at that time adds traffic, and the network's events at an instant are taken after the
jobs' starts and departures at it), stopping earlier at the first job completion it finds (a
departure at that time starts other jobs). A completion is certain once the header of the
job's last message reaches its destination (the sink never blocks), L - 1 flit times before
the delivery, so it is always found before it is due; it is returned as the model's timer, and
``advance(t)`` at that MODEL event puts the job's DEPART on the heap at ``t``: the engine takes
it next, and the policy, the metrics and every observer see an ordinary departure. The network
is advanced at most to the driver's safe horizon per step (its next event + L - 1 flit times:
:meth:`~scheduler.network.driver.NetworkDriver.safe_until`), so every delivery is found before
the network reaches its time: a reply (the path's next message) or a start at an instant is in
before the network's events at that instant, whatever the cuts. The outcome
depends on the inputs only, not on how the engine cuts time (a test resumes a run at 400
stops and gets the same numbers).

**Measured per job** (microseconds unless said): mean message delay (over its messages: every
path sends K), mean contention (delay minus the contention-free ``(hops + L - 1) x T_t``),
run time (job units) and the contention-free run time it would have had with the same
computation phases on an empty network (per path: its run time minus its total contention;
the job's: the slowest path's), whose ratio is its slowdown. ``estimate`` is the closed-form
K x (MTBS + (longest path's hops + L - 1) x T_t).
"""
from __future__ import annotations

import math
import random
from bisect import insort

from emulator.sim.engine import DEPART
from emulator.sim.metrics import comm_metrics
from scheduler.comm_profile import CommProfile, comm_of, communicating, logical_shape, parse_comm
from scheduler.network.driver import Clock, NetworkDriver
from scheduler.network.traffic import Path, Traffic
from scheduler.network.wormhole import Wormhole
from scheduler.topology import parse_topology


class CommWorkError(ValueError):
    """A communicating job the model cannot run (a folded allocation), or the network asked to
    start traffic in its past (an event scheduled from outside behind the horizon)."""


class _Job:
    __slots__ = ("start", "at", "pids", "left", "comm", "hops")

    def __init__(self, start, at, pids, comm, hops):
        self.start, self.at, self.pids, self.comm, self.hops = start, at, pids, comm, hops
        self.left = len(pids)


class CommWork:
    """The work model (module docstring). ``unit_us``: microseconds per job time unit;
    ``flit_time`` (us) and ``length`` (flits) as :class:`Wormhole`; ``seed`` seeds the paths'
    computation phases (each path its own stream, :class:`Traffic`)."""

    works_ahead = True

    def __init__(self, topology, *, unit_us: float, flit_time: float = 0.05, length: int = 500,
                 seed: int = 0):
        if isinstance(unit_us, bool) or not isinstance(unit_us, (int, float)) or not (
                unit_us > 0 and math.isfinite(unit_us)):
            raise CommWorkError(f"the job time unit must be a positive number of microseconds, got {unit_us!r}")
        self.net = Wormhole(topology, flit_time=flit_time, length=length)
        self.unit_us = float(unit_us)
        # the job time unit in flit times: the driver's virtual clock
        self.driver = NetworkDriver(self.net, Clock.virtual(self.unit_us / self.net.flit_time))
        self.clock = self.driver.clock
        self.topology = self.net.channels.topology
        self.traffic = Traffic(self.driver, seed=seed)
        self.running: dict = {}  # job id -> _Job
        self.owner: list = []  # path id -> job id
        self.due: list = []  # sorted (departure time, seq, Start): completions found, not yet departed
        self._seq = 0
        self._seen = 0  # Traffic.finished entries taken
        self.records: dict = {}  # job id -> record, from its completion to its departure
        self.finished: list = []  # records of departed communicating jobs, in departure order
        self.departures = 0  # every departure (for the warm-up count)
        self.silent = 0  # started jobs that send nothing

    def bind(self, engine) -> None:
        self.engine = engine

    # ------------------------------------------------------------------ the engine's hooks

    def apply(self, starts, t) -> None:
        for s in starts:
            comm = comm_of(s.job.request)
            pairs = ()
            if comm is not None:
                w, h = logical_shape(s.job.request, self.topology)
                pairs = comm.pairs(w, h)
            if not pairs:
                self.silent += 1
                self.engine.schedule(t + s.runtime, DEPART, s)
                continue
            ranks = s.allocation.ranks
            if len(ranks) != w * h:
                raise CommWorkError(f"job {s.job.id}: {len(ranks)} nodes for {w * h} ranks (a folded "
                                    f"allocation runs several ranks on one node)")
            at = self.clock.flits(t)
            if at < self.net.now:
                raise CommWorkError(f"job {s.job.id} starts at {t} but the network is at "
                                    f"{self.clock.time(self.net.now)} (an event behind the engine's horizon)")
            add, route = self.traffic.add, self.net.channels.route
            pids, hops = [], 0
            for a, b in pairs:
                src, dst = ranks[a], ranks[b]
                pids.append(add(Path(src, dst, comm.mtbs, s.job.id), at=at, iterations=comm.iterations))
                hops = max(hops, len(route(src, dst)))
            self.owner.extend([s.job.id] * len(pids))
            self.running[s.job.id] = _Job(s, at, pids, comm, hops)

    def next_event(self, now, horizon):
        limit = self.clock.before(horizon)
        if self.due and self.due[0][0] < horizon:
            limit = self.clock.before(self.due[0][0])
        self._run(limit)
        return self.due[0][0] if self.due else None

    def advance(self, t) -> int:
        self._run(self.clock.before(t))
        due = self.due
        while due and due[0][0] <= t:  # at the MODEL event at t: taken next, before any other
            self.engine.schedule(t, DEPART, due.pop(0)[2])
        return 0

    def observe(self, t, kind, item, decisions):
        if kind == DEPART:
            self.departures += 1
            rec = self.records.pop(item.job.id, None)
            if rec is not None:
                rec["departure"] = self.departures
                self.finished.append(rec)
        return False

    # ------------------------------------------------------------------ the network

    def _run(self, limit: float) -> None:
        """Take the network's events up to flit time ``limit``, and no further than just
        before the first job completion found."""
        driver, traffic = self.driver, self.traffic
        finished = traffic.finished
        while True:
            until = driver.safe_until(limit)
            if until is None:
                return
            traffic.advance(until)
            while self._seen < len(finished):
                pid = finished[self._seen]
                self._seen += 1
                job = self.running[self.owner[pid]]
                job.left -= 1
                if not job.left:
                    end = self._complete(job)
                    limit = min(limit, self.clock.before(end))

    def _complete(self, job: _Job) -> float:
        """The job's last path is done: its record, its departure time (job units)."""
        sources, L1, ft = self.traffic.sources, self.net.length - 1, self.net.flit_time
        last = max(sources[p].last for p in job.pids)
        n = delay = contention = 0.0
        free = 0.0
        for p in job.pids:
            s = sources[p]
            n += len(s.delays)
            delay += sum(s.delays)
            contention += s.contention
            free = max(free, s.last - job.at - s.contention)
            s.delays = []  # the sums are kept; a long run need not keep every message
        start = job.start
        end = self.clock.time(last)
        del self.running[start.job.id]
        run = end - start.time
        free_run = self.clock.span(free)
        c = job.comm
        self.records[start.job.id] = {
            "id": start.job.id, "submit": start.job.submit, "start": start.time, "end": end,
            "nodes": start.allocation.size, "paths": len(job.pids), "messages": int(n),
            "mean_delay_us": round(delay / n * ft, 9), "mean_contention_us": round(contention / n * ft, 9),
            "run_time": run, "contention_free_run_time": free_run,
            "slowdown": run / free_run if free_run > 0 else math.nan,
            "estimate": c.iterations * (c.mtbs + (job.hops + L1) * ft) / self.unit_us,
            "mtbs_us": c.mtbs, "iterations": c.iterations, "pattern": c.pattern}
        self._seq += 1
        insort(self.due, (end, self._seq, start))  # a few at a time: a sorted list, not a queue
        return end

    # ------------------------------------------------------------------ results

    def counted(self, warmup: int = 0) -> list:
        """Records of the communicating jobs among the counted completions (after the first
        ``warmup`` departures of any job, as the simulator's metrics count them)."""
        return [r for r in self.finished if r["departure"] > warmup]

    def settings(self) -> dict:
        net = self.net
        return {"flit_time_us": net.flit_time, "length_flits": net.length, "time_unit_us": self.unit_us,
                "flit_times_per_unit": self.clock.per_unit,
                "routing": "XY" if self.topology.kind == "mesh" else "e-cube",
                "buffer_flits": 1, "virtual_channels": 0, "arbitration": "fcfs"}

    def metrics(self, warmup: int = 0) -> dict:
        """The run's communication metrics (emulator.sim.metrics.comm_metrics)."""
        m = comm_metrics(self.counted(warmup))
        m["messages_delivered"] = self.net.delivered
        m["silent_jobs"] = self.silent
        return m


def comm_jobs(jobs, profiles, topology, seed: int = 0):
    """The job stream with a profile on every job (lazily, in order): a job's own
    ``meta["comm"]`` (a CommProfile or a ``--comm`` spec) if it has one, else one of
    ``profiles`` (``[(CommProfile, share)]``), drawn by share from a stream of its own (seeded
    by ``seed``), so that the jobs are those of the same run without communication. A profile
    that does not fit a job's shape is an error naming the job."""
    topology = parse_topology(topology)
    profiles = list(profiles)
    rng = random.Random(f"comm:{seed}")
    total = sum(s for _, s in profiles)
    for job in jobs:
        comm = job.meta.get("comm") if job.meta else None
        if isinstance(comm, str):
            comm = parse_comm(comm)[0]
        if comm is None and profiles:
            comm = profiles[0][0]
            if len(profiles) > 1:
                x, acc = rng.random() * total, 0.0
                for comm, share in profiles:
                    acc += share
                    if x < acc:
                        break
        yield communicating(job, comm, topology) if isinstance(comm, CommProfile) else job


def auto_unit(profiles, service_mean: float, *, length: int = 500, flit_time: float = 0.05) -> float:
    """Microseconds per job time unit such that the profiles' mean contention-free run time
    K x (MTBS + L x T_t) is ``service_mean`` units (``--net-time-unit auto``)."""
    total = sum(s for _, s in profiles)
    us = sum(s * c.iterations * (c.mtbs + length * flit_time) for c, s in profiles) / total
    return us / service_mean


__all__ = ["CommWork", "CommWorkError", "auto_unit", "comm_jobs"]
