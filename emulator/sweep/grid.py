"""A sweep's settings: read (TOML or flags), checked before any run, expanded to points.

Every key is optional; a list makes an axis, a single value is fixed. Keys (TOML file = flags):

    name = "lazy-vs-scan"                 # output folder DIR/NAME (default: the file's stem)
    topology = "hypercube:10"             # axes ...
    allocator = "buddy"
    scheduler = ["lazy", "scan-up", "fcfs"]
    reduction = "none"                    # rsr:T, limit:K, limit:greedy, limit:average, none
    gang = "none"                         # a gang policy ("none": no time sharing)
    load = [0.1, 0.3, 0.5, 0.7, 0.9]
    size = "uniform"                      # default: uniform on a cube, processors on a mesh
    service = "exponential"               # (the defaults: emulator.sim.spec.WorkloadSpec,
    service_mean = 5.0                    #  uniform service of mean 5.0, dependent demand)
    demand = "dependent"
    time = 2000                           # observation time per run; or completions = N
    warmup = 0                            # completions not counted (with completions)
    trace = "log.swf"                     # instead of the synthetic workload (time_unit, limit)
    seeds = 3                             # exactly 3 replications (or a list of seeds); else
    precision = 0.05                      # until the 95% half-width is within 5% of the mean,
    min_reps = 3                          # with at least min_reps and at most max_reps
    max_reps = 30
    stop_on = "mean_queueing_delay"       # the metrics of the stopping rule (default: metric)
    metric = "mean_queueing_delay"        # the figure's metric; metrics = [...] the CSV's
    x = "load"                            # the figure's x axis (default: load when swept)

    [params]                              # a policy's --param values: for every policy
    [params.lazy]                         # or only for the one named
    threshold = 20

A trace is replayed as logged (one deterministic run per point); with ``load`` its submit
times are scaled so that the offered load (processor-time asked / machine x span) is ``load``.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from emulator.experiments._points import BASIC, GANG_METRICS
from emulator.experiments.stats import rep_seed
from emulator.sim.spec import WorkloadSpec, default_size
from scheduler import allocators
from scheduler.stack import StackError, parse_params
from scheduler.topology import parse_topology

AXES = ("topology", "allocator", "scheduler", "reduction", "gang", "load", "size", "service", "service_mean",
        "demand")
POLICY_AXES = ("allocator", "scheduler", "reduction", "gang")
NUMERIC_AXES = ("load", "service_mean")
SETTINGS = ("name", "out", "time", "completions", "warmup", "trace", "time_unit", "limit", "seeds", "precision",
            "min_reps", "max_reps", "stop_on", "metric", "metrics", "x", "params")
TRACE_METRICS = BASIC + ("mean_wait", "mean_runtime", "makespan")
DEFAULT_CSV_METRICS = ("mean_queueing_delay", "mean_turnaround", "utilization", "throughput")


class SweepError(ValueError):
    """A sweep that cannot run: malformed TOML, an unknown key or policy, a bad value."""


def load_toml(path) -> dict:
    """The settings of a TOML grid file; a missing or malformed file is a one-line SweepError."""
    p = Path(path)
    try:
        with p.open("rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise SweepError(f"{p}: no such file") from None
    except tomllib.TOMLDecodeError as e:
        raise SweepError(f"{p}: malformed TOML: {' '.join(str(e).split())}") from None
    except OSError as e:
        raise SweepError(f"{p}: {e.strerror or e}") from None
    data.setdefault("name", p.stem)
    return data


def _num(key, v, *, positive=True, integer=False):
    ok = isinstance(v, int) if integer else isinstance(v, (int, float))
    if isinstance(v, bool) or not ok or not math.isfinite(v) or (positive and v <= 0):
        what = "an integer" if integer else "a number"
        raise SweepError(f"{key} must be {what}{' > 0' if positive else ''}, got {v!r}")
    return v


def _axis(key, v) -> list:
    vals = list(v) if isinstance(v, (list, tuple)) else [v]
    if not vals:
        raise SweepError(f"{key}: an empty list sweeps nothing")
    if len(set(map(repr, vals))) != len(vals):
        raise SweepError(f"{key} repeats a value: {vals!r}")
    for x in vals:
        if key in NUMERIC_AXES:
            _num(key, x)
        elif not isinstance(x, str) or not x:
            raise SweepError(f"{key} values must be names, got {x!r}")
    return [float(x) if key in NUMERIC_AXES else x for x in vals]


@dataclass
class Sweep:
    name: str
    axes: dict  # axis -> [values] (the given ones)
    until: float | None = None
    completions: int | None = None
    warmup: int = 0
    trace: str | None = None
    time_unit: float = 1.0
    limit: int | None = None
    seeds: tuple | None = None  # explicit seeds (a list in the settings)
    reps: tuple = (3, 30)  # (min, max)
    precision: float = 0.05
    stop_on: tuple = ()
    metric: str = "mean_queueing_delay"
    metrics: tuple = ()
    x: str = "load"
    params: dict = field(default_factory=dict)  # for every policy
    policy_params: dict = field(default_factory=dict)  # name -> {param: value}
    settings: dict = field(default_factory=dict)  # as given, for the report

    # ------------------------------------------------------------------ reading

    @classmethod
    def from_dict(cls, data: dict, out_name: str = "sweep") -> "Sweep":
        unknown = sorted(set(data) - set(AXES) - set(SETTINGS))
        if unknown:
            raise SweepError(f"unknown setting {unknown[0]!r}; known: {', '.join(AXES + SETTINGS)}")
        name = data.get("name", out_name)
        if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
            raise SweepError(f"name must be a folder name, got {name!r}")
        axes = {k: _axis(k, data[k]) for k in AXES if k in data}
        s = cls(name=name, axes=axes, settings=dict(data))
        if "time" in data:
            s.until = float(_num("time", data["time"]))
        if "completions" in data:
            s.completions = _num("completions", data["completions"], integer=True)
        if "warmup" in data:
            s.warmup = _num("warmup", data["warmup"], positive=False, integer=True)
            if s.warmup < 0:
                raise SweepError("warmup must be >= 0")
        if "trace" in data:
            if not isinstance(data["trace"], str):
                raise SweepError(f"trace must be a file name, got {data['trace']!r}")
            s.trace = str(Path(data["trace"]).expanduser().resolve())
            if not Path(s.trace).is_file():
                raise SweepError(f"trace {data['trace']}: no such file")
            s.settings["trace"] = s.trace  # sweep.toml runs again from any folder
        if "time_unit" in data:
            s.time_unit = float(_num("time_unit", data["time_unit"]))
        if "limit" in data:
            s.limit = _num("limit", data["limit"], integer=True)
        s._replications(data)
        s._params(data.get("params", {}))
        s._metrics(data)
        return s

    def _replications(self, data):
        if "seeds" in data:
            v = data["seeds"]
            if isinstance(v, list):
                if not v or any(isinstance(x, bool) or not isinstance(x, int) or x < 0 for x in v):
                    raise SweepError(f"seeds must be a count or a list of integers >= 0, got {v!r}")
                self.seeds = tuple(v)
                n = len(v)
            else:
                n = _num("seeds", v, integer=True)
            self.reps = (n, n)
            for k in ("min_reps", "max_reps", "precision"):
                if k in data:
                    raise SweepError(f"{k} does not apply with seeds (a fixed number of replications)")
            return
        lo = _num("min_reps", data.get("min_reps", 3), integer=True)
        hi = _num("max_reps", data.get("max_reps", max(30, lo)), integer=True)
        if hi < lo:
            raise SweepError(f"max_reps ({hi}) is below min_reps ({lo})")
        self.reps = (lo, hi)
        self.precision = float(_num("precision", data.get("precision", 0.05)))

    def _params(self, table):
        if isinstance(table, list):  # --param KEY=VALUE from the command line
            try:
                table = parse_params(table)
            except StackError as e:
                raise SweepError(str(e)) from None
        if not isinstance(table, dict):
            raise SweepError(f"params must be a table, got {table!r}")
        for k, v in table.items():
            if isinstance(v, dict):
                self.policy_params[k] = dict(v)
            else:
                self.params[k] = v

    def _metrics(self, data):
        gang_only = self.gang_values() and not self.discipline_runs()
        self.metric = data.get("metric", "mean_turnaround" if self.gang_values() else "mean_queueing_delay")
        known = set(GANG_METRICS if gang_only else TRACE_METRICS if self.trace else BASIC)
        if self.discipline_runs() and self.gang_values():
            known &= set(GANG_METRICS)  # a mixed sweep: what both kinds of run measure
        default = [self.metric] + [x for x in DEFAULT_CSV_METRICS + GANG_METRICS[:2] if x != self.metric and x in known]
        m = data.get("metrics", default[:4])
        stop = data.get("stop_on", [self.metric])
        self.metrics = tuple([m] if isinstance(m, str) else m)
        self.stop_on = tuple([stop] if isinstance(stop, str) else stop)
        for what, names in (("metric", [self.metric]), ("metrics", self.metrics), ("stop_on", self.stop_on)):
            for n in names:
                if n not in known:
                    raise SweepError(f"{what}: unknown metric {n!r}; known here: {', '.join(sorted(known))}")
        if self.metric not in self.metrics:
            self.metrics = (self.metric,) + self.metrics
        swept = [k for k in AXES if len(self.axes.get(k, ())) > 1]
        default_x = "load" if "load" in swept else next((k for k in swept if k in NUMERIC_AXES), swept[0] if swept else "load")
        self.x = data.get("x", default_x)
        if self.x not in AXES:
            raise SweepError(f"x must be one of the axes {', '.join(AXES)}, got {self.x!r}")

    # ------------------------------------------------------------------ the grid

    def gang_values(self) -> list:
        return [g for g in self.axes.get("gang", []) if g != "none"]

    def discipline_runs(self) -> bool:
        gangs = self.axes.get("gang")
        return not gangs or "none" in gangs

    def _policies(self) -> list[dict]:
        allocs = self.axes.get("allocator", [None])  # None: the topology's (scheduler.allocators.DEFAULTS)
        out = []
        if self.discipline_runs():
            for a, s, r in itertools.product(allocs, self.axes.get("scheduler", ["fcfs"]),
                                             self.axes.get("reduction", ["none"])):
                out.append({"allocator": a, "scheduler": s, "reduction": None if r == "none" else r, "gang": None})
        elif "scheduler" in self.axes or "reduction" in self.axes:
            raise SweepError("scheduler and reduction do not apply to gang runs: add \"none\" to gang to "
                             "sweep disciplines too")
        for a, g in itertools.product(allocs, self.gang_values()):
            out.append({"allocator": a, "scheduler": None, "reduction": None, "gang": g})
        return out

    def policy_params_of(self, pol: dict) -> dict:
        name = pol["gang"] or pol["scheduler"]
        return {**self.params, **self.policy_params.get(name, {})}

    def points(self) -> list[dict]:
        """Every point's parameters (plain JSON: the key in runs.jsonl, the row in results.csv)."""
        if self.trace is None and self.until is None and self.completions is None:
            raise SweepError("give time (observation time per run) or completions (per run), or a trace")
        unknown = sorted(set(self.policy_params) - {p["gang"] or p["scheduler"] for p in self._policies()})
        if unknown:
            raise SweepError(f"params.{unknown[0]}: no such policy in this sweep")
        loads = self.axes.get("load", [None] if self.trace else [0.5])
        out = []
        for topo, pol, load, svc, mean, demand in itertools.product(
                self.axes.get("topology", ["hypercube:10"]), self._policies(), loads,
                self.axes.get("service", [WorkloadSpec.service]), self.axes.get("service_mean", [WorkloadSpec.service_mean]),
                self.axes.get("demand", [WorkloadSpec.demand])):
            for size in self.axes.get("size", [default_size(parse_topology(topo))]):
                p = {"topology": topo, **pol, "dparams": self.policy_params_of(pol)}
                p["allocator"] = p["allocator"] or allocators.default(topo)
                if self.trace:
                    p.update(trace=self.trace, time_unit=self.time_unit, limit=self.limit, load=load)
                else:
                    p.update(load=load, size=size, service=svc, service_mean=mean, demand=demand,
                             until=self.until, completions=self.completions, warmup=self.warmup)
                if self.seeds is not None:
                    p["seeds"] = list(self.seeds)  # other seeds: other runs (runs.jsonl keys)
                out.append({k: v for k, v in p.items() if v is not None or k in ("scheduler", "reduction", "gang")})
                if self.trace:
                    break  # a trace has no size distribution
        return out

    def seed_for(self, rep: int) -> int:
        return self.seeds[rep] if self.seeds is not None else rep_seed(self.name, rep)


__all__ = ["AXES", "POLICY_AXES", "Sweep", "SweepError", "load_toml"]
