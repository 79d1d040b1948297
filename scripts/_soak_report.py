"""The soak's outcome (scripts/soak.py): the journal and what the soak saw read into one JSON
document, and that document as a table a person reads."""
from __future__ import annotations

import re
import sqlite3
from collections import Counter

from emulator.live import home as homemod
from nodes import contain

TERMINAL = ("depart", "fail", "cancel")
FINISHED = ("completed", "failed", "cancelled")
MIX = {"plain": 0.6, "traced": 0.2, "pattern": 0.12, "mpi": 0.08}


def table(v: dict, ok: bool):
    from rich.table import Table

    t = Table(title=f"soak: {v['minutes']:g} min on {v['topology']}, {v['hogs']} hogs, seed {v['seed']} "
                    f"({'OK' if ok else 'FAILED'})", box=None)
    t.add_column("what")
    t.add_column("count", justify="right")
    t.add_column("detail")
    fl = v["flood"]
    rows = [("submitted", sum(v["submitted"].values()), ", ".join(f"{n} {k}" for k, n in v["submitted"].items())),
            ("acknowledged", v["acknowledged"], f"{v['unanswered']} unanswered (the daemon was down); the admin's "
             f"submit p50/p99/max " + "/".join(f"{x:g}" for x in v["admin_submit_ms"].values()) + " ms"),
            ("jobs in the journal", v["jobs_in_journal"], "; ".join(
                f"{k}: " + ", ".join(f"{n} {st}" for st, n in sorted(c.items()))
                for k, c in sorted(v["states"].items()))),
            ("completed", v["completed"], ""), ("failed", v["failed"], ""),
            *(("", n, r) for r, n in v["failed_reasons"].items()),
            ("requeues", v["requeues"], ""),
            ("node kills", v["node_kills"], f"{v['node_restarts']} restarts by the launcher, "
                                            f"{v['node_downs']} declared down"),
            ("interconnect kills", v["net_kills"], f"{v['net_restarts']} restarts by the daemon"),
            ("daemon kills", v["daemon_kills"], f"{v['recoveries']} recoveries, {v['recovery_failures']} failed"),
            ("hostile frames", v["hostile_frames"], f"{v['hostile_replies']} replies, {v['raw_garbage']} raw"),
            ("flood refusals", fl.get("refused", 0), f"{fl.get('bursts', 0)} bursts; submit {fl.get('submit')}; "
                                                     f"queue {fl.get('queue')}; cancel {fl.get('cancel')}"),
            ("flood errors", sum(fl.get("errors", {}).values()), (f"{fl['errors']}; " if fl.get("errors") else "")
             + f"unanswered {len(fl.get('unanswered_at', ()))} times, each while the daemon was killed (expected)"),
            ("processes seen", v["processes_seen"], f"containment: {v['contain']}; {v['attempts_sampled']} "
                                                    f"attempts seen in task cgroups; drained in {v['drain_s']} s")]
    for k in ("lost", "doubled", "left_running"):
        rows.append((k.replace("_", " "), len(v[k]), str(v[k][:10]) if v[k] else ""))
    rows.append(("false downs", sum(v["false_downs"].values()), str(v["false_downs"] or "")))
    for what, n, detail in rows:
        t.add_row(what, str(n), detail)
    return t


def verdict(self, left, down_rc, flood) -> dict:
    """The soak's JSON document: what the journal (read-only) and the soak (``self``) saw, as the
    counts the exit status is decided on (lost, doubled, left running, false downs)."""
    db = sqlite3.connect(f"file:{homemod.journal_path(self.home)}?mode=ro", uri=True)
    rows = {i: (name, state, reason) for i, name, state, reason in
            db.execute("SELECT id, name, state, reason FROM jobs")}
    terminal = Counter(job for (job,) in db.execute(f"SELECT job FROM events WHERE kind IN {TERMINAL}"))
    requeues = db.execute("SELECT COUNT(*) FROM events WHERE kind = 'requeue'").fetchone()[0]
    downs = Counter(n for (n,) in db.execute("SELECT node FROM events WHERE kind = 'node_down'"))
    db.close()
    names = Counter(name for name, _, _ in rows.values())
    traced = set()
    if (self.home / "trace" / "overlaps").exists():
        traced = {int(line.split()[0]) for line in (self.home / "trace" / "overlaps").read_text().split("\n")
                  if line.strip()}
    lost = sorted({j for j in self.acked if j not in rows or rows[j][1] not in FINISHED}
                  | {j for j, (_, st, _) in rows.items() if st not in FINISHED})
    doubled = sorted({j for j, k in terminal.items() if k > 1} | traced | self.overlaps
                     | {j for j, (name, _, _) in rows.items() if name.split("-")[0] in MIX and names[name] > 1})
    states: dict[str, Counter] = {}  # by kind; "other": the hostile frames' well-formed submits
    for name, st, _ in rows.values():
        kind = name.split("-")[0]
        states.setdefault(kind if kind in MIX or kind == "flood" else "other", Counter())[st] += 1
    reasons = Counter(re.sub(r"\d+(\.\d+)?", "N", r or "")[:90] for _, st, r in rows.values() if st == "failed")
    # a flood request unanswered is an error unless the daemon was dead then (its timeouts: 30 s)
    silent = [t for t in flood.get("unanswered_at", ())
              if not any(k <= t <= (e or t) + 35 for k, e in self.outages)]
    if silent:
        flood.setdefault("errors", {})["unanswered, the daemon alive"] = len(silent)
    logs = {f: (self.home / f).read_text() if (self.home / f).exists() else "" for f in ("launcher.log",
                                                                                           "daemon.log")}
    return {"minutes": self.a.minutes, "topology": self.a.topology, "seed": self.a.seed, "hogs": self.a.hogs,
            "home": str(self.home), **self.counts, "submitted": dict(self.kinds),
            "acknowledged": len(self.acked), "jobs_in_journal": len(rows),
            "states": {k: dict(v) for k, v in states.items()},
            "completed": sum(v["completed"] for v in states.values()),
            "failed": sum(v["failed"] for v in states.values()), "failed_reasons": dict(reasons.most_common()),
            "requeues": requeues, "node_restarts": logs["launcher.log"].count("restarting it in"),
            "net_restarts": logs["daemon.log"].count("interconnect restarted"),
            "node_downs": sum(downs.values()),
            "false_downs": {n: k - self.killed[n] for n, k in sorted(downs.items()) if k > self.killed[n]},
            "flood": flood, "lost": lost, "doubled": doubled, "left_running": left, "down_exit": down_rc,
            "processes_seen": len(self.seen), "attempts_sampled": len(self.sampled), "contain": contain.mode(),
            "admin_submit_ms": {q: round(1000 * _pct(self.submit_s, f), 1) for q, f in
                                (("p50", 0.5), ("p99", 0.99), ("max", 1.0))}}


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")
