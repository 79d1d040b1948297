"""The monitor's data: a :class:`MonitorState` fed with what the daemon says, and the frozen
view dict the renderer paints (``MonitorState.view(now)``).

Pure: no sockets, no clock, no terminal. The loop (emulator.monitor.app) feeds it

* ``apply_status(status)`` once (topology, policies, time unit, the discipline snapshot),
* ``apply_jobs(rows)`` with job records from the daemon's ``queue`` reply (the only place
  a job's submit time, run time and request are known),
* ``apply_event(topic, msg)`` with every PUB event (``job``, ``node``, ``snapshot``).

Metrics follow DESIGN ("Metrics") with the simulator's formulas (emulator.sim.metrics), over
the observation time T = model time since the cluster's t0: utilization = node-time of
started jobs / (N T), mean queueing delay = R / A over allocated jobs, throughput = C / T,
power = X / M (infinite when no allocated job waited, as in the simulator), mean turnaround
over completed jobs (None while there is nothing to average). External fragmentation is
the dissertation's "share of idle nodes at the moments the scheduler could allocate nothing
while a job waited"; live we cannot see those moments, so it is sampled at
every snapshot event (about 1 per second) at which jobs wait (the daemon sends a snapshot
after its scheduling pass, so at that moment the discipline placed nothing more), and
averaged over those samples (the view says "sampled").
The utilization history (the sparkline) is the exact busy share per bucket of model time,
integrated from the jobs' start and end times, so a monitor attached late still shows it.
"""
from __future__ import annotations

import math
import re
from collections import deque

from emulator.cli._client import printable  # a name is shown escaped: another user gave it
from emulator.monitor.grid import grid_layout
from emulator.sim import metrics as formulas
from scheduler.topology import parse_topology

FINAL = ("completed", "failed", "cancelled")
RANK = {"queued": 0, "running": 1, "started": 1, "suspended": 1, "completed": 2, "failed": 2, "cancelled": 2}
HISTORY_BUCKETS = 60
HISTORY_SECONDS = 180.0  # wall-clock span of the sparkline (the last three minutes)


class JobView:
    __slots__ = ("id", "name", "state", "attempt", "nodes", "submit", "start", "end", "runtime",
                 "exec_time", "request", "allocation", "known")

    def __init__(self, jid: int):
        self.id = jid
        self.name = ""
        self.state = "queued"
        self.attempt = 0
        self.nodes: list[int] = []
        self.submit = self.start = self.end = None
        self.runtime = self.exec_time = None
        self.request = self.allocation = None
        self.known = False  # its record (submit, run time, request) came from the daemon


class MonitorState:
    def __init__(self, topology: str, config: dict | None = None, history_seconds: float = HISTORY_SECONDS,
                 buckets: int = HISTORY_BUCKETS):
        self.topology = parse_topology(topology)
        self.layout = grid_layout(self.topology)
        self.size = self.topology.size
        self.config = dict(config or {})
        self.time_unit = float(self.config.get("time_unit") or 1.0)
        self.node_state = ["idle"] * self.size
        self.jobs: dict[int, JobView] = {}
        self.discipline: dict = {}
        self.gang: dict | None = None
        self.now = 0.0
        self.last_snapshot: float | None = None
        self.snapshots = 0
        self.shutdown = False
        self.history_seconds = history_seconds
        self.buckets = buckets
        # running aggregates over jobs that left the running state for good (each counted once)
        self._closed: set[int] = set()
        self._node_time = 0.0
        self._recent: deque = deque()  # (end, start, width) of closed runs, for the sparkline
        self._frag_sum = 0.0
        self._frag_n = 0

    # ------------------------------------------------------------------ inputs

    @classmethod
    def from_status(cls, status: dict, **kw) -> "MonitorState":
        cfg = status.get("config") or {}
        s = cls(cfg.get("topology") or status.get("topology"), cfg, **kw)
        s.apply_status(status)
        return s

    def apply_status(self, status: dict) -> None:
        self.config.update(status.get("config") or {})
        self.time_unit = float(self.config.get("time_unit") or self.time_unit)
        if status.get("discipline") is not None:
            self.discipline = status["discipline"]
        if status.get("gang") is not None:
            self.gang = status["gang"]
        self._advance(status.get("now"))

    def apply_nodes(self, nodes: list[dict]) -> None:
        for n in nodes:
            if 0 <= n["node"] < self.size:
                self.node_state[n["node"]] = n["state"]

    def _job(self, jid) -> JobView:
        jid = int(jid)
        j = self.jobs.get(jid)
        if j is None:
            j = self.jobs[jid] = JobView(jid)
        return j

    def apply_jobs(self, rows: list[dict]) -> None:
        """Job records from the daemon's ``queue`` reply: static fields always; state, times
        and nodes only when the record is not behind what the events already told."""
        for r in rows:
            j = self._job(r["id"])
            j.known = True
            j.name = printable(r.get("name")) or j.name
            j.submit = r.get("submit", j.submit)
            j.runtime = r.get("runtime", j.runtime)
            j.exec_time = r.get("exec_time", j.runtime)
            j.request = r.get("request_text") or j.request
            if (r.get("attempt", 0), RANK.get(r["state"], 0)) >= (j.attempt, RANK.get(j.state, 0)):
                j.attempt = r.get("attempt", 0)
                j.allocation = r.get("allocation")
                j.nodes = list(r.get("nodes") or [])
                j.start, j.end = r.get("start"), r.get("end")
                j.state = r["state"]
            self._maybe_close(j)

    def apply_event(self, topic, msg: dict) -> None:
        topic = topic.decode() if isinstance(topic, (bytes, bytearray)) else topic
        self._advance(msg.get("t"))
        if topic == "job":
            self._on_job(msg)
        elif topic == "node":
            n = msg["node"]
            if 0 <= n < self.size:
                self.node_state[n] = msg["state"]
        elif topic == "snapshot":
            self._on_snapshot(msg.get("data") or {})

    def _on_job(self, m: dict) -> None:
        j = self._job(m["job"])
        info = m.get("info") or {}
        state, t = m["state"], m["t"]
        j.name = printable(info.get("name")) or j.name
        if state == "started":  # every task of the job runs: nothing changes for the view
            return
        if state == "requeued":
            j.state, j.nodes, j.start, j.allocation = "queued", [], None, None
            return
        att = info.get("attempt", j.attempt)
        if state == "running" and (j.state != "running" or att > j.attempt):
            j.start = t
            j.end = None
            j.nodes = list(info.get("nodes") or [])
            j.allocation = None  # the record is fetched for the allocation text
        if state == "queued" and j.submit is None:
            j.submit = t
        if state in FINAL:
            j.end = t
            if info.get("nodes") is not None and state != "cancelled":
                j.nodes = list(info["nodes"])
        if state in FINAL and j.state == "queued":
            j.nodes = []
        j.attempt = att
        j.state = state
        self._maybe_close(j)

    def _on_snapshot(self, d: dict) -> None:
        if d.get("shutdown"):
            self.shutdown = True
            return
        self.snapshots += 1
        if isinstance(d.get("nodes"), list) and len(d["nodes"]) == self.size:
            self.node_state = list(d["nodes"])
        if d.get("discipline") is not None:
            self.discipline = d["discipline"]
        gang = d.get("gang")
        if gang is None and isinstance(self.discipline, dict) and "office" in self.discipline:
            gang = self.discipline
        self.gang = gang
        if d.get("config"):
            self.config.update(d["config"])
        running = {int(k): list(v) for k, v in (d.get("running") or {}).items()}
        for jid, nodes in running.items():
            j = self._job(jid)
            if j.state != "running":
                j.state, j.nodes = "running", nodes
                if j.start is None:
                    j.start = self.now
        queued = [int(x) for x in d.get("queued") or ()]
        for jid in queued:
            j = self._job(jid)
            if j.state not in ("queued",) and j.state not in FINAL:
                j.state, j.nodes, j.start = "queued", [], None
        # a job we believe runs or waits but the daemon lists neither way: an event was
        # lost (e.g. before the SUB socket joined); its record is fetched again (missing())
        if "queued" in d:
            qset = set(queued)
            for j in self.jobs.values():
                if (j.state == "running" and j.id not in running) or (j.state == "queued" and j.id not in qset):
                    j.known = False
        # external fragmentation, sampled (see the module docstring)
        if queued:
            up = sum(1 for s in self.node_state if s != "down")
            idle = sum(1 for s in self.node_state if s == "idle")
            if up:
                self._frag_sum += idle / up
                self._frag_n += 1
        self.last_snapshot = self.now

    def _advance(self, t) -> None:
        if isinstance(t, (int, float)) and math.isfinite(t) and t > self.now:
            self.now = float(t)

    def _maybe_close(self, j: JobView) -> None:
        if j.state in FINAL and j.id not in self._closed:
            self._closed.add(j.id)
            if j.start is not None and j.end is not None and j.nodes:
                self._node_time += len(j.nodes) * max(0.0, j.end - j.start)
                self._recent.append((j.end, j.start, len(j.nodes)))

    def missing(self, limit: int = 512) -> list[int]:
        """Jobs whose record the loop should fetch (``queue(jobs=...)``)."""
        out = []
        for j in self.jobs.values():
            if not j.known or (j.state == "running" and j.allocation is None):
                out.append(j.id)
                if len(out) >= limit:
                    break
        return out

    # ------------------------------------------------------------------ the view

    def metrics(self, now: float | None = None) -> dict:
        now = max(self.now, now or 0.0)
        counts = {"waiting": 0, "running": 0, "completed": 0, "failed": 0, "cancelled": 0}
        busy_time = self._node_time
        waits, turns = [], []
        for j in self.jobs.values():
            st = j.state
            key = "waiting" if st == "queued" else ("running" if st in ("running", "suspended") else st)
            if key in counts:
                counts[key] += 1
            if j.start is not None and j.submit is not None:
                waits.append(max(0.0, j.start - j.submit))
            if st == "completed" and j.end is not None and j.submit is not None:
                turns.append(j.end - j.submit)
            if st in ("running", "suspended") and j.start is not None:
                busy_time += len(j.nodes) * max(0.0, now - j.start)
        T = now
        util = formulas.utilization(busy_time, self.size, T)
        mqd = formulas.mean_queueing_delay(sum(waits), len(waits)) if waits else None
        thr = formulas.throughput(counts["completed"], T)
        busy_now = sum(len(j.nodes) for j in self.jobs.values() if j.state in ("running", "suspended"))
        return {
            "time": T,
            "generated": len(self.jobs),
            "allocated": len(waits),
            **counts,
            "utilization": min(1.0, util),
            "utilization_now": min(1.0, busy_now / self.size),
            "mean_queueing_delay": mqd,
            "mean_turnaround": formulas.mean(sum(turns), len(turns), None),
            "throughput": thr,
            "power": formulas.power(thr, mqd) if mqd is not None else None,
            "external_fragmentation": formulas.mean(self._frag_sum, self._frag_n, None),
            "fragmentation_samples": self._frag_n,
        }

    def history(self, now: float | None = None) -> list[float]:
        """Busy share of the machine in each of ``buckets`` equal slices of the last
        ``history_seconds`` of wall clock (oldest first); slices before t=0 are omitted."""
        now = max(self.now, now or 0.0)
        span = self.history_seconds / self.time_unit
        w = span / self.buckets
        lo = now - span
        while self._recent and self._recent[0][0] < lo:
            self._recent.popleft()
        acc = [0.0] * self.buckets
        runs = [(e, s, n) for e, s, n in self._recent]
        runs += [(now, j.start, len(j.nodes)) for j in self.jobs.values()
                 if j.state in ("running", "suspended") and j.start is not None]
        for end, start, n in runs:
            a, b = max(start, lo), min(end, now)
            if b <= a:
                continue
            i0, i1 = int((a - lo) / w), min(self.buckets - 1, int((b - lo) / w))
            for i in range(max(0, i0), i1 + 1):
                s0 = lo + i * w
                ov = min(b, s0 + w) - max(a, s0)
                if ov > 0:
                    acc[i] += n * ov
        first = 0 if lo >= 0 else min(self.buckets, int(-lo / w))
        out = []
        for i in range(first, self.buckets):
            s0 = lo + i * w
            width = min(w, now - max(0.0, s0)) if s0 + w > now else w
            out.append(min(1.0, acc[i] / (self.size * width)) if width > 0 else 0.0)
        return out

    def _fresh_discipline(self) -> dict:
        """The last discipline snapshot (up to a second old) without the jobs that job
        events since then showed starting or ending, so queues and grid agree."""
        d = self.discipline or {}
        gone = {j.id for j in self.jobs.values() if j.state != "queued"}
        if not gone:
            return d
        blocked = d.get("blocked")
        if isinstance(blocked, str):  # "head job 12 (2x8) does not fit": stale once 12 has started
            m = re.search(r"\bjob (\d+)", blocked)
            if m and int(m.group(1)) in gone:
                d = {**d, "blocked": None}
        if isinstance(d.get("held"), list):  # held jobs that have started or ended since
            d = {**d, "held": [h for h in d["held"] if not isinstance(h, dict) or h.get("id") not in gone]}
        if not isinstance(d.get("queues"), list):
            return d
        qs = []
        for q in d["queues"]:
            if isinstance(q, dict) and isinstance(q.get("jobs"), list):
                q = {**q, "jobs": [x for x in q["jobs"] if x not in gone]}
            qs.append(q)
        return {**d, "queues": qs}

    def view(self, now: float | None = None, paused: bool = False, stale: bool = False) -> dict:
        """The frozen, JSON-able picture the renderer paints; ``now`` is the model time of
        the frame (the loop interpolates between events with the wall clock)."""
        now = max(self.now, now or 0.0)
        suspended = set()
        if self.gang:
            suspended = {int(r["id"]) for r in self.gang.get("jobs") or () if r.get("state") == "suspended"}
        # down from the daemon; busy, suspended or idle from the jobs (events are newer than
        # the last snapshot's node list)
        cells = [["down" if s == "down" else "idle", None] for s in self.node_state]
        running = []
        for j in sorted(self.jobs.values(), key=lambda j: (j.start or 0.0, j.id)):
            if j.state not in ("running", "suspended"):
                continue
            susp = j.state == "suspended" or j.id in suspended
            for n in j.nodes:
                if 0 <= n < self.size:
                    c = cells[n]
                    if susp and c[0] == "busy" and c[1] is not None:
                        continue  # gang: the node shows the task it runs, not one kept in
                    c[1] = j.id
                    if c[0] != "down":
                        c[0] = "suspended" if susp else "busy"
            elapsed = now - j.start if j.start is not None else None
            remaining = None
            if elapsed is not None and j.exec_time is not None:
                remaining = max(0.0, j.exec_time - elapsed)
            running.append({"id": j.id, "name": j.name, "request": j.request, "allocation": j.allocation,
                            "nodes": len(j.nodes), "elapsed": elapsed, "remaining": remaining,
                            "state": "suspended" if susp else "running"})
        for c in cells:  # a busy node whose job we do not know yet
            if c[0] == "suspended" and c[1] is None:
                c[0] = "busy"
        counts: dict[str, int] = {}
        for s, _ in cells:
            counts[s] = counts.get(s, 0) + 1
        m = self.metrics(now)
        m["history"] = self.history(now)
        m["history_seconds"] = self.history_seconds
        cfg = self.config
        return {
            "title": {"topology": str(self.topology), "allocator": cfg.get("allocator"),
                      "scheduler": cfg.get("scheduler"), "reduction": cfg.get("reduction"),
                      "gang": (self.gang or {}).get("policy") or cfg.get("gang"),
                      "time_unit": self.time_unit, "now": now, "paused": paused, "stale": stale,
                      "shutdown": self.shutdown},
            "machine": {**self.layout, "nodes": cells, "counts": counts},
            "discipline": self._fresh_discipline(),
            "running": running,
            "metrics": m,
            "gang": self.gang,
        }


__all__ = ["MonitorState", "grid_layout"]
