"""Recovery: a daemon started on a journal that was not closed continues the cluster.

The journal (emulator.live.journal) holds every input the daemon gave its policy, in order,
with its model time. The policy objects are deterministic functions of these inputs, so
``replay`` feeds them through the very code that handles them live
(``PolicyPort.apply`` and ``ProcessorManager._started`` with ``replaying`` set: no message is sent, no
``start`` is journaled again), which rebuilds the allocator, the discipline or gang policy,
the down set, which nodes every running job holds, and the current gang slot. The journal's
``jobs`` table then supplies what the inputs cannot (exit codes, usage, reasons).

Nodes that were in service get ``grace`` seconds to register again and report their tasks:
alive ones are re-adopted, finished ones are counted once, and a task a node does not report
is re-sent to the same node incarnation (the agent ignores a task it already ran) and is lost
on a new incarnation (emulator.live.node_handlers ``on_register``). Which process is a node's
current incarnation is the last ``incarnation`` (or ``node_up``) event of it: every change is
journaled, so a restart the daemon already faulted is never counted again after a recovery.

A journal closed by a clean stop (``mcemu down``) is history: ``open_journal`` moves it aside
and the new daemon starts a new cluster, with new settings if asked. Its job ids go on after the
highest the home ever used (``last_job`` in the new journal's meta), as Slurm's do: a job id
names its output files and its trace directory in the home, and a new job 1 found job 1's.
"""
from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from emulator.live import home as homemod
from emulator.live.journal import Journal

log = logging.getLogger("mcemu.daemon")


def open_journal(home: Path, fsync: bool = False) -> tuple[Journal, dict]:
    """The journal of ``home`` and its meta data ({} for a new cluster)."""
    jpath = homemod.journal_path(home)
    journal = Journal(jpath, fsync=fsync)
    meta = journal.get_meta()
    if not meta.get("closed"):
        return journal, meta
    last = max(int(meta.get("last_job", 0)), journal.max_job_id())
    journal.db.close()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    os.replace(jpath, jpath.with_name(f"journal.{stamp}.{os.getpid()}.db"))
    for suffix in ("-wal", "-shm"):
        try:
            os.unlink(str(jpath) + suffix)
        except FileNotFoundError:
            pass
    journal = Journal(jpath, fsync=fsync)
    if last:
        journal.set_meta(last_job=last)
    return journal, {}


def pending_meta(home: Path) -> dict:
    """The meta data of the cluster a daemon started on ``home`` would continue: {} when the
    journal is missing, was closed by a clean stop (history, see ``open_journal``) or holds no
    cluster yet (only the ids carried over: its daemon died before it served)."""
    meta = Journal.read_meta(homemod.journal_path(home))
    return {} if meta.get("closed") or "config" not in meta else meta


def replay(m, grace: float) -> int:
    """Rebuild manager ``m``'s state from its journal; returns the number of events."""
    m.replaying = True
    incarnations = {}
    n_events = 0
    try:
        for kind, t, job, node, data in m.journal.events():
            n_events += 1
            m.port.last_t = max(m.port.last_t, t)
            if kind == "start":
                continue  # a decision, not an input: the replay makes it again
            if kind == "incarnation":  # a fact about a node, not a policy input
                incarnations[node] = (data.get("pid"), data.get("host"))
                continue
            if kind in ("depart", "fail", "cancel", "requeue") and job in m.jobs:
                for n in m.jobs[job].nodes:
                    m.nodes[n].jobs.discard(job)
            if kind == "node_up" and data:
                incarnations[node] = (data.get("pid"), data.get("host"))
            m._started(m.port.apply(kind, t, job, node, data), t)
    finally:
        m.replaying = False
    _restore_job_rows(m)
    m.book.next_id = max(m.book.next_id, m.journal.max_job_id() + 1,
                         int(m.journal.get_meta().get("last_job", 0)) + 1)
    m.registry.expect_back(incarnations, m.clock(), grace)
    if n_events:
        running = sum(1 for j in m.jobs.values() if j.state == "running")
        queued = sum(1 for j in m.jobs.values() if j.state == "queued")
        log.info("recovered from journal: %d events, %d queued, %d running", n_events, queued, running)
    return n_events


def _restore_job_rows(m) -> None:
    """The jobs table is the authority for what the replay cannot know (exit codes, ...)."""
    for row in m.journal.jobs():
        jr = m.jobs.get(row["id"])
        if jr is None:
            continue
        if jr.state == "running" and row["state"] == "running" and row["attempt"] != jr.attempt:
            log.warning("journal replay: job %s attempt %s != %s", jr.id, jr.attempt, row["attempt"])
        for k in ("state", "faults", "end", "exit", "usage", "reason", "comm", "failure"):
            setattr(jr, k, row.get(k))
        if jr.state == "running":
            jr.nodes = sorted(jr.nodes)


__all__ = ["open_journal", "replay"]
