"""What the daemon reports: ``status``, the monitor's periodic ``snapshot``, the rows of
``mcemu queue`` and ``mcemu nodes``. Read-only views of a ProcessorManager, made JSON- and
msgpack-safe (string map keys: the protocol decodes with ``strict_map_key``).
"""
from __future__ import annotations

import os

from emulator.live.jobs import ACTIVE


def _jsonable(x):
    """A copy with string map keys and plain values (anything else as its text)."""
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in x]
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    return str(x)


def node_rows(m) -> list[dict]:
    out = []
    for nr in m.nodes:
        row = m.registry.row(nr, m.node_state(nr.id))
        m.slots.annotate_node(nr, row)
        out.append(row)
    return out


def _held(m) -> dict:
    """Job id -> reason of the waiting jobs that cannot be allocated while the down nodes are
    out (scheduler.stack.Stack.held: a discipline holds them; a gang policy's are probed)."""
    return m.stack.held([j.job for j in m.jobs.values() if j.state == "queued"] if m.stack.gang else ())


def queue(m, jobs=None, all=False, viewer=None) -> dict:
    """``mcemu queue``: a queued job the discipline holds shows ``"state": "held"`` and its
    ``"reason"`` (like the REASON column of Slurm's squeue: ``ReqNodeNotAvail: ...``). Every
    row names its ``owner``; a ``viewer`` who is not the admin sees no command of others' jobs."""
    if jobs:
        sel = [m.jobs[j] for j in jobs if j in m.jobs]
    elif all:
        sel = list(m.jobs.values())
    else:
        sel = [j for j in m.jobs.values() if j.state in ACTIVE]
    now = m.now()
    rows = [j.view() for j in sel]
    if viewer is not None and not viewer.admin:
        for r in rows:
            if r["owner"] != viewer.name and r["command"] is not None:
                r["command"] = "(hidden: another principal's job)"
    held = _held(m)
    if held:
        for r in rows:
            if r["state"] == "queued" and r["id"] in held:
                r["state"], r["reason"] = "held", held[r["id"]]
    m.slots.annotate_queue(rows)
    return {"now": now, "jobs": rows, "gang": m.stack.gang}


def status(m) -> dict:
    counts: dict[str, int] = {}
    for j in m.jobs.values():
        counts[j.state] = counts.get(j.state, 0) + 1
    held = len(_held(m))
    if held:  # held jobs are queued jobs the discipline cannot start while nodes are down
        counts["queued"] -= held
        counts["held"] = held
    states: dict[str, int] = {}
    for nr in m.nodes:
        s = m.node_state(nr.id)
        states[s] = states.get(s, 0) + 1
    return {"pid": os.getpid(), "config": m.cfg, "now": m.now(), "t0": m.t0,
            "endpoints": m.endpoints, "jobs": counts, "nodes": states,
            "size": m.topology.size, "connected": len(m.by_ident),
            "discipline": _jsonable(m.slots.discipline_view()),
            "gang": _jsonable(m.slots.snapshot()),
            "gang_switches": m.slots.switch_stats(),
            "rt": os.sched_getscheduler(0) in (os.SCHED_RR, os.SCHED_FIFO)}


def snapshot(m) -> dict:
    """The monitor's periodic picture: every node's state, the jobs, the policy's queues."""
    return {"nodes": [m.node_state(i) for i in range(m.topology.size)],
            "running": {str(j.id): j.nodes for j in m.jobs.values() if j.state == "running"},
            "queued": [j.id for j in m.jobs.values() if j.state == "queued"],
            "discipline": _jsonable(m.slots.discipline_view()), "topology": str(m.topology),
            "gang": _jsonable(m.slots.snapshot()), "config": m.cfg}


__all__ = ["node_rows", "queue", "snapshot", "status"]
