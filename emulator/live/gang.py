"""Gang slots on the live cluster: the one part of the daemon that knows about time sharing.

A cluster started with ``--gang G`` drives a gang policy (scheduler.gang, built by
scheduler.stack) through the same calls as a discipline: arrive / depart / cancel / tick at
``next_wakeup`` / retry when a node comes back. What differs is what its decisions mean on
the nodes, and all of that is here, in :class:`GangSlots`. Every other cluster gets
:class:`NoSlots`, which has the same methods and does nothing: a discipline never returns a
SlotSwitch, every task runs from its start to its end, and a node with a job is busy. The
rest of the daemon calls ``self.slots`` and never asks which of the two it has.

How the gang's decisions are carried out:

* A Start places a job in a row of the Ousterhout matrix: its tasks are launched at once,
  created suspended (SIGSTOP right after the spawn) unless the job is in the current slot,
  as the office's processes are created and checked in, then kept in until dispatched. A
  sequential (one-node) job runs at once on its node, never suspended (``JobRec.local``).
* A SlotSwitch becomes one ``switch`` message to every node that hosts a gang job whose
  run/stop lists changed: the node SIGSTOPs the outgoing tasks, then SIGCONTs the incoming
  ones (os.killpg) and answers ``switched`` with monotonic stamps; the last switches' skew
  is kept (``switch_stats``, ``status()["gang_switches"]``, scripts/bench_gang_live.py).
* Run time: a synthetic gang task progresses only while dispatched, because the node agent
  accounts its dispatched time and ends it after ``runtime`` units of it (nodes.agent).
* Recovery: the journal holds every policy input with its model time, ticks included, and a
  gang policy is a deterministic function of them, so the replay rebuilds the rows, the
  office, the levels and the current slot (replayed switches change only the state here).
  Tasks keep running on their nodes meanwhile; a node that registers again is sent the
  current slot (``resend``) after its tasks are reconciled.
* Down nodes: the gang's rows are quarantined with the stack's down set and no sequential
  job is put on a down node; a job with a task on a node that goes down is requeued, as
  without gang.
"""
from __future__ import annotations

from collections import deque

from emulator.live import protocol as P
from scheduler.decisions import SlotSwitch

SWITCH_LOG = 512  # slot switches whose node reports are kept for switch_stats()


def slots_for(manager):
    """The slots component of ``manager``'s policy stack."""
    return GangSlots(manager) if manager.stack.gang else NoSlots(manager)


class NoSlots:
    """Space sharing only (a discipline): nothing is ever kept in."""

    kind = "discipline"

    def __init__(self, manager):
        self.m = manager

    def run_fields(self, jr, fields: dict) -> None:
        pass

    def switch(self, sw: SlotSwitch, t: float) -> None:
        raise TypeError(f"a discipline returned a slot switch: {sw!r}")

    def busy_state(self, nr) -> str:
        return "busy"

    def resend(self, nr) -> None:
        pass

    def on_switched(self, nr, m) -> None:
        pass  # a node answers switches only; there were none

    def annotate_queue(self, rows: list) -> None:
        pass

    def annotate_node(self, nr, row: dict) -> None:
        pass

    def discipline_view(self) -> dict:
        return self.m.policy.snapshot()

    def snapshot(self):
        return None

    def switch_stats(self, last: int = 100):
        return None


class GangSlots:
    """The current slot of a gang policy and its delivery to the nodes."""

    kind = "gang policy"

    def __init__(self, manager):
        self.m = manager
        self.running: frozenset = frozenset()  # the jobs dispatched in the current slot
        self.switch_no = 0  # switches seen by this daemon (the ``slot`` of a switch message)
        self.log: deque = deque(maxlen=SWITCH_LOG)
        self.index: dict = {}  # switch number -> its log record
        self.sent: dict[int, tuple] = {}  # node -> (run, stop) last sent to it
        self.reports: dict[int, dict] = {}  # node -> what it said after the last switch

    # ------------------------------------------------------------------ decisions

    def run_fields(self, jr, fields: dict) -> None:
        """A ``run`` message's gang fields: kept in from the start unless in the slot."""
        fields["gang"] = True
        fields["suspended"] = not jr.local and jr.id not in self.running

    def switch(self, sw: SlotSwitch, t: float) -> None:
        self.running = sw.running
        self.switch_no += 1
        if self.m.replaying:
            return
        rec = {"switch": self.switch_no, "slot": sw.slot, "t": t, "primary": sw.primary,
               "running": sorted(sw.running), "sent": self.m.clock(), "nodes": {}}
        self.log.append(rec)
        self.index[self.switch_no] = rec
        while len(self.index) > SWITCH_LOG:
            self.index.pop(next(iter(self.index)))
        for nr in self.m.nodes:
            self.send(nr)

    def send(self, nr, force: bool = False) -> None:
        """Send node ``nr`` the current slot: which of its gang jobs run, which are kept in."""
        jobs = self.m.jobs
        run, stop = [], []
        for j in sorted(nr.jobs):
            jr = jobs.get(j)
            if jr is None or jr.local:
                continue
            (run if j in self.running else stop).append(j)
        last = self.sent.get(nr.id)
        if not run and not stop and not last:
            return
        if not force and last == (run, stop):
            return
        self.sent[nr.id] = (run, stop)
        self.m._to_node(nr.id, P.encode_unchecked("switch", slot=self.switch_no, stop=stop, run=run))

    def resend(self, nr) -> None:
        """Node ``nr`` registered (again): its adopted tasks get the current slot."""
        self.sent.pop(nr.id, None)
        self.send(nr, force=True)

    def on_switched(self, nr, m) -> None:
        self.reports[nr.id] = {"switch": m["slot"], "running": m["running"], "stopped": m["stopped"]}
        rec = self.index.get(m["slot"])
        if rec is not None and m["t_first"] is not None:
            last = max(x for x in (m["t_stop"], m["t_cont"]) if x is not None)
            rec["nodes"][nr.id] = (m["t_first"], m["t_stop"], m["t_cont"], last)

    # ------------------------------------------------------------------ views

    def busy_state(self, nr) -> str:
        """A node with jobs: busy when one of them runs in this slot, else suspended."""
        jobs = self.m.jobs
        running = self.running
        return "busy" if any(j in running or jobs[j].local for j in nr.jobs) else "suspended"

    def annotate_queue(self, rows: list) -> None:
        """Each queue row's place in the gang: row, level, slots, attained service, state."""
        g = self.m.policy
        for r in rows:
            rec = g.jobs.get(r["id"])
            if rec is not None:
                attained = rec.attained + (g.now - rec.since if rec.since is not None else 0.0)
                r["gang"] = {"row": rec.row, "level": rec.level, "f": rec.f, "slots": rec.slots,
                             "attained": attained,
                             "state": "running" if r["id"] in self.running else "suspended"}
            elif self.m.jobs[r["id"]].local and r["state"] == "running":
                r["gang"] = {"row": None, "level": None, "f": None, "slots": None, "attained": None,
                             "state": "local"}

    def annotate_node(self, nr, row: dict) -> None:
        """A node row's tasks: which run and which are kept in, and what the node reported."""
        tasks = []
        for j in sorted(nr.jobs):
            jr = self.m.jobs[j]
            run = jr.local or j in self.running
            rank = jr.nodes.index(nr.id) if nr.id in jr.nodes else None
            tasks.append({"job": j, "state": "running" if run else "suspended",
                          "pid": jr.pids.get(rank), "local": jr.local})
        row["tasks"] = tasks
        row["running"] = [x["job"] for x in tasks if x["state"] == "running"]
        row["suspended"] = [x["job"] for x in tasks if x["state"] == "suspended"]
        row["reported"] = self.reports.get(nr.id)  # what the node itself said after the last switch

    def discipline_view(self) -> dict:
        """The batch queue in front of the gang's rows, in the shape of a discipline snapshot."""
        g = self.m.policy
        return {"discipline": f"gang:{g.name}",
                "queues": [{"name": "memory", "jobs": [j.id for j in g.waiting()]}],
                "running": sorted(g.jobs)}

    def snapshot(self) -> dict:
        return self.m.policy.snapshot()

    def switch_stats(self, last: int = 100) -> list[dict]:
        """Skew of the last slot switches from the nodes' own monotonic stamps: ``skew`` from
        the first node's first signal to the last node's last one, ``cont_skew`` the spread
        of the SIGCONTs, ``latency`` from the daemon's send to the last node's last signal."""
        out = []
        for rec in list(self.log)[-last:]:
            ns = rec["nodes"]
            if not ns:
                continue
            firsts = [v[0] for v in ns.values()]
            lasts = [v[3] for v in ns.values()]
            conts = [v[2] for v in ns.values() if v[2] is not None]
            stops = [v[1] for v in ns.values() if v[1] is not None]
            out.append({"switch": rec["switch"], "slot": rec["slot"], "t": rec["t"], "nodes": len(ns),
                        "skew": max(lasts) - min(firsts),
                        "cont_skew": max(conts) - min(conts) if conts else None,
                        "stop_skew": max(stops) - min(stops) if stops else None,
                        "latency": max(lasts) - rec["sent"]})
        return out


__all__ = ["GangSlots", "NoSlots", "SWITCH_LOG", "slots_for"]
