"""``mcemu demo --network``: the demo's job stream made of communicating jobs, on a cluster with
``--network wormhole`` in dilated time (so the monitor's channel view, on from the start, moves
at a pace a person can follow).

The arrivals and shapes are the demo's workload (emulator.sim.workloads: Poisson arrivals,
square submeshes of side 1 to ``max_side``); every other job is a *pattern job* (the ready-made
pattern task, nodes.pattern, exactly as ``mcemu submit --pattern`` makes it: emulator.cli.net
``pattern_job``) and the others are *program jobs*: the mpi4py examples of docs/examples
(ring, cpi, jacobi, transpose, mandelbrot), each with arguments that fit its number of ranks.
A pattern that does not fit a shape gives way to the next one in turn; a job of one node (no
pattern has a path there) runs a program instead.
"""
from __future__ import annotations

import shlex
import sys
from pathlib import Path
from types import SimpleNamespace

from emulator.cli import UsageError

NET_DEFAULTS = {"topology": "mesh:8x8", "scheduler": "fcfs", "time_unit": 1.0,
                "load": 0.3, "service_mean": 5.0, "max_side": 4, "dilation": 1000.0}
PATTERNS = ("transpose", "stencil", "ring", "diagonal", "permutation")
# a pattern job's messages: few enough to end in seconds at the default dilation (a message of
# the model's L flits lasts about 25 ms of wall time), spaced so that neighbours' paths contend
PATTERN_MTBS, PATTERN_ITERATIONS = 25.0, 50
PROGRAM_RUNTIME = 10.0  # the policies' estimate (time units) of a program job; it really runs until it exits
EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


def example_args(name: str, n: int) -> str:
    """Arguments of the example ``name`` that fit ``n`` ranks and end in seconds."""
    return {"ring": "3", "cpi": "200000", "jacobi": f"{8 * n} 50", "transpose": f"{8 * n}",
            "mandelbrot": "48 32 100"}[name]


PROGRAMS = ("jacobi", "cpi", "transpose", "ring", "mandelbrot")


def program_command(name: str, n: int) -> str:
    prog = EXAMPLES / f"{name}.py"
    if not prog.exists():
        raise UsageError(f"demo --network: the example programs are not here ({prog} is missing)")
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(prog))} {example_args(name, n)}"


def network_jobs(topology: str, load: float, seconds: float, time_unit: float, n_jobs: int | None,
                 seed: int) -> list[dict]:
    """The stream: {"at", "request", "runtime", "name", "kind", ...}; even positions pattern
    jobs ("pattern": the first one tried), odd ones program jobs ("command")."""
    from emulator.sim import workloads  # lazy: numpy, see emulator.cli.monitor
    from scheduler.topology import parse_topology

    topo = parse_topology(topology)
    if topo.kind != "mesh":
        raise UsageError(f"demo --network needs a mesh (its channel view), got {topology}")
    side = min(NET_DEFAULTS["max_side"], topo.width, topo.height)
    w = workloads.make_workload(topo, load, "square-var", "uniform", service_mean=NET_DEFAULTS["service_mean"],
                                seed=seed, size_params={"max_side": side})
    stream = list(w.jobs(n_jobs) if n_jobs else w.jobs(None, until=seconds / time_unit))
    out, kinds = [], {"pattern": 0, "program": 0}
    first = stream[0].submit if stream else 0.0  # the stream starts at once: a short demo shows both kinds
    for i, j in enumerate(stream):
        job = {"at": j.submit - first, "request": j.request.to_dict(), "runtime": PROGRAM_RUNTIME, "seq": i}
        if i % 2 == 0 and j.request.processors_needed > 1:
            job.update(kind="pattern", pattern=PATTERNS[kinds["pattern"] % len(PATTERNS)], name=f"pat{i + 1}")
        else:
            prog = PROGRAMS[kinds["program"] % len(PROGRAMS)]
            job.update(kind="program", program=prog, name=f"mpi{i + 1}-{prog}")
        kinds[job["kind"]] += 1
        out.append(job)
    return out


def prepare(client, j: dict) -> tuple[dict, float, str, str]:
    """(request, runtime, name, command) of job ``j`` on the running cluster: a pattern job
    through ``pattern_job`` (its logical grid, its run time estimate), the first of PATTERNS from
    its own that fits; a program job (or a pattern job that no pattern fits) runs its example."""
    from emulator.cli.net import pattern_job  # lazy: see emulator.cli.monitor

    if j["kind"] == "pattern":
        start = PATTERNS.index(j["pattern"])
        for k in range(len(PATTERNS)):
            p = PATTERNS[(start + k) % len(PATTERNS)]
            a = SimpleNamespace(pattern=p, mtbs=PATTERN_MTBS, iterations=PATTERN_ITERATIONS, warmup=None,
                                seed=j["seq"], group=None, runtime=None)
            req = dict(j["request"])
            try:
                command, runtime = pattern_job(a, req, client)
            except UsageError:
                continue
            return req, runtime, f"{j['name']}-{p}", command
    prog = j.get("program") or PROGRAMS[j["seq"] % len(PROGRAMS)]
    name = j["name"] if j["kind"] == "program" else f"mpi{j['seq'] + 1}-{prog}"
    return j["request"], j["runtime"], name, program_command(prog, ranks(j["request"]))


def ranks(request: dict) -> int:
    from scheduler.topology import Request

    return Request.from_dict(request).processors_needed


def network_summary(rows: list[dict]) -> dict:
    """Pattern and program jobs (by name) submitted, completed and failed, and the messages of all."""
    out = {}
    for kind, prefix in (("patterns", "pat"), ("programs", "mpi")):
        mine = [r for r in rows if (r.get("name") or "").startswith(prefix)]
        out[kind] = {"submitted": len(mine), "completed": sum(r["state"] == "completed" for r in mine),
                     "failed": sum(r["state"] == "failed" for r in mine)}
    out["messages"] = sum(((r.get("comm") or {}).get("count") or 0) for r in rows)
    return out


__all__ = ["NET_DEFAULTS", "network_jobs", "network_summary", "prepare"]
