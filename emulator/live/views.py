"""What the daemon reports: ``status``, the monitor's periodic ``snapshot``, the rows of
``mcemu queue`` and ``mcemu nodes``. Read-only views of a ProcessorManager, made JSON- and
msgpack-safe (string map keys: the protocol decodes with ``strict_map_key``).
"""
from __future__ import annotations

import os
from bisect import bisect_right

from emulator.live import protocol as P
from emulator.live.jobs import ACTIVE

SCAN = 4000  # job records one page looks at at most (a page of active jobs among many ended ones)


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
    if m.stack.gang and not m.stack.down:  # nothing held: no scan of every record
        return {}
    return m.stack.held([j.job for j in m.jobs.values() if j.state == "queued"] if m.stack.gang else ())


def queue(m, jobs=None, all=False, viewer=None) -> dict:
    """Every row of ``mcemu queue`` at once (a test's or a tool's; the daemon pages: ``page``)."""
    out = page(m, jobs, all, viewer, after=0, limit=None, scan=None)
    del out["next"]
    return out


def page(m, jobs=None, all=False, viewer=None, after: int = 0, limit: int | None = P.QUEUE_PAGE,
         scan: int | None = SCAN) -> dict:
    """The rows of ``mcemu queue`` for the jobs of id above ``after``: at most ``limit`` rows
    and ``scan`` records looked at (None: no bound), so a page costs the daemon's loop a
    bounded slice whatever the number of jobs; ``next`` is the ``after`` of the next page
    (None: this was the last). A queued job the discipline holds shows ``"state": "held"``
    and its ``"reason"`` (like the REASON column of Slurm's squeue: ``ReqNodeNotAvail: ...``).
    Every row names its ``owner``; a ``viewer`` who is not the admin sees no command of
    others' jobs. Rows are the book's (emulator.live.manager.ViewedBook), copied where changed."""
    ids = sorted(j for j in set(jobs) if j in m.jobs) if jobs else m.book.ids
    i = bisect_right(ids, after)
    stop = len(ids) if scan is None else min(len(ids), i + scan)
    rows, book, recs = [], m.book, m.jobs
    while i < stop and (limit is None or len(rows) < limit):
        jr = recs[ids[i]]
        i += 1
        if jobs or all or jr.state in ACTIVE:
            rows.append(book.row(jr))
    hide = viewer is not None and not viewer.admin
    held = _held(m)
    for k, r in enumerate(rows):
        hidden = hide and r["owner"] != viewer.name and r["command"] is not None
        if hidden or (held and r["state"] == "queued" and r["id"] in held):
            r = rows[k] = dict(r)
            if hidden:
                r["command"] = "(hidden: another principal's job)"
                r["cwd"] = None  # a path of another principal's, as telling as its command
            if r["state"] == "queued" and r["id"] in held:
                r["state"], r["reason"] = "held", held[r["id"]]
    if m.stack.gang:
        rows = [dict(r) for r in rows]
        m.slots.annotate_queue(rows)
    return {"now": m.now(), "jobs": rows, "gang": m.stack.gang, "next": ids[i - 1] if i < len(ids) else None}


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
    running = [j for j in m.jobs.values() if j.state == "running"]
    # a node allocated without a task (``-n 5`` on a 3x2 submesh) is busy for the policy: shown so
    held = {n for j in running for n in j.spare}
    states = [m.node_state(i) for i in range(m.topology.size)]
    return {"nodes": [("busy" if i in held and s == "idle" else s) for i, s in enumerate(states)],
            "running": {str(j.id): j.allocated for j in running},
            "queued": [j.id for j in m.jobs.values() if j.state == "queued"],
            "discipline": _jsonable(m.slots.discipline_view()), "topology": str(m.topology),
            "gang": _jsonable(m.slots.snapshot()), "config": m.cfg}


__all__ = ["SCAN", "node_rows", "page", "queue", "snapshot", "status"]
