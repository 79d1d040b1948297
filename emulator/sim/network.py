"""Steady traffic of placed jobs over the wormhole model: what ``mcemu net simulate`` runs.

The jobs do not arrive or leave here: every path of every job runs its closed loop
(:mod:`scheduler.network.traffic`) until each path has delivered ``messages`` measured
messages after a warm-up of ``warmup`` messages (default a tenth of ``messages``; the text
states none, NETWORK.md 1.2 item 11). A path that reaches its count keeps sending, so the
others still see its traffic. Channel utilizations are over the measured window: from the
moment the last path finished its warm-up to the end.

The per-job mean is the mean over the job's paths of their mean delays: the dissertation's
"mean communication delay of the inside/outside job" (ch. 5-6; NETWORK.md 1.2 item 10).
"""
from __future__ import annotations

import math
from typing import Callable, Iterable

from scheduler.network.driver import NetworkDriver
from scheduler.network.layout import NetJob, check_disjoint
from scheduler.network.traffic import Traffic, path_stats
from scheduler.network.wormhole import NetworkError, Wormhole


def network_settings(net: Wormhole) -> dict:
    """The model's settings as the JSON states them (NETWORK.md 1.2; ours marked there)."""
    topo = net.channels.topology
    return {"topology": str(topo), "routing": "XY" if topo.kind == "mesh" else "e-cube",
            "flit_time_us": net.flit_time, "length_flits": net.length, "startup_us": net.us(net.startup),
            "buffer_flits": 1, "virtual_channels": 0, "arbitration": "fcfs",
            "sink": "never blocks", "contention_free_us": f"(hops + {net.length} - 1) x {net.flit_time}"
            + (f" + {net.us(net.startup)} (start-up)" if net.startup else "")}


def simulate_network(net: Wormhole, jobs: Iterable[NetJob], *, messages: int = 2000,
                     warmup: int | None = None, seed: int = 0,
                     progress: Callable[[float], None] | None = None) -> dict:
    """Run the jobs' traffic on ``net`` (fresh) and return the JSON document of
    ``mcemu net simulate``: settings, per path, per job, per channel."""
    jobs = list(jobs)
    if not jobs:
        raise NetworkError("no jobs: give at least one --job or --job-file")
    check_disjoint(jobs)
    if not (isinstance(messages, int) and messages >= 1):
        raise NetworkError(f"--messages must be a positive integer, got {messages!r}")
    warmup = messages // 10 if warmup is None else warmup
    driver = NetworkDriver(net)  # in flit times: the traffic's own
    traffic = Traffic(driver, seed=seed, warmup=warmup)
    owners = []
    for job in jobs:
        for path in job.paths:
            traffic.add(path, at=0.0)
            owners.append(job.name)
    t_warm, base = _measure(traffic, warmup, messages, progress)
    t_end = net.now
    paths = _path_rows(traffic, owners)
    return {"network": network_settings(net), "seed": seed, "messages_per_path": messages,
            "warmup_messages_per_path": warmup,
            "window_us": [net.us(t_warm if t_warm is not None else 0.0), net.us(t_end)],
            "simulated_messages": net.delivered, "jobs": _job_rows(jobs, paths), "paths": paths,
            "channels": _channel_rows(net, traffic.routes, net.utilization(base, t_warm, t_end))}


def _measure(traffic: Traffic, warmup: int, messages: int, progress) -> tuple:
    """Run until every path has ``messages`` measured messages; the start of the measured
    window (when the last path finished its warm-up) and the channels' busy times then."""
    net, sources = traffic.net, traffic.sources
    n = len(sources)
    measuring = n  # paths still in their warm-up
    short = n  # paths with fewer than `messages` measured messages
    t_warm = 0.0 if warmup == 0 else None
    base = net.busy_snapshot() if warmup == 0 else None
    goal = warmup + messages
    events_done = 0
    while short:
        got = traffic.advance()
        if not got:
            if net.next_time() is None:  # pragma: no cover - closed loops never run dry
                break
            continue
        for d in got:
            s = sources[d.tag]
            if s.delivered == warmup and warmup:
                measuring -= 1
                if not measuring:
                    t_warm, base = net.now, net.busy_snapshot()
            if s.delivered == goal:
                short -= 1
        events_done += len(got)
        if progress is not None and not events_done & 0x3FF:
            progress(1.0 - short / n)
    return t_warm, base


def _path_rows(traffic: Traffic, owners: list) -> list[dict]:
    net = traffic.net
    topo = net.channels.topology
    coords = (lambda v: list(topo.xy(v))) if topo.kind == "mesh" else (lambda v: v)
    rows = []
    for pid, owner in enumerate(owners):
        st = path_stats(traffic, pid)
        rows.append({"job": owner, "source": st.path.src, "destination": st.path.dst,
                     "source_at": coords(st.path.src), "destination_at": coords(st.path.dst),
                     "hops": st.hops, "mtbs_us": st.path.mtbs, "messages": st.messages,
                     "mean_delay_us": st.mean, "p95_delay_us": st.p95,
                     "mean_contention_us": st.contention, "p95_contention_us": st.p95_contention,
                     "mean_starting_contention_us": st.starting,
                     "contention_free_us": net.us(traffic.driver.free(st.hops))})
    return rows


def _job_rows(jobs: list, paths: list[dict]) -> list[dict]:
    """Per job: the mean over its paths of their means (module docstring)."""
    rows = []
    for job in jobs:
        mine = [p for p in paths if p["job"] == job.name]
        rows.append({
            "name": job.name, "pattern": job.pattern, "shape": f"{job.shape[0]}x{job.shape[1]}",
            "nodes": list(job.nodes), "paths": len(mine),
            "mtbs_us": job.mtbs[0] if len(set(job.mtbs)) == 1 else list(job.mtbs),
            "mean_delay_us": _mean(p["mean_delay_us"] for p in mine),
            "mean_contention_us": _mean(p["mean_contention_us"] for p in mine),
            "messages": sum(p["messages"] for p in mine)})
    return rows


def _channel_rows(net: Wormhole, routes: list, util: list[float]) -> list[dict]:
    """Every channel some path crosses: how many paths, its utilization over the window."""
    used: dict[int, int] = {}
    for route in routes:
        for c in route:
            used[c] = used.get(c, 0) + 1
    ch = net.channels
    return [{"channel": ch.name(c), "from": ch.ends(c)[0], "to": ch.ends(c)[1], "paths": k, "utilization": util[c]}
            for c, k in sorted(used.items())]


def _mean(values) -> float:
    v = list(values)
    return sum(v) / len(v) if v else math.nan


__all__ = ["network_settings", "simulate_network"]
