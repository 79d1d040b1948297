"""The daemon's journal: SQLite in WAL mode in MCEMU_HOME.

Two tables, written in the same transaction:

* ``events``: every input the daemon gave the policy objects, in order, with its model time:
  ``submit`` (the job), ``depart``, ``cancel``, ``tick``, ``node_down``, ``node_up``,
  ``requeue``, ``fail``; plus ``start`` records of the decisions (for inspection and a replay
  check) and ``incarnation`` records (node, pid and host of each new process that plays a
  node: facts the replay needs, no policy input). The policy objects are deterministic functions of these calls, so replaying the
  inputs rebuilds the exact allocator and discipline state after a crash, including which
  nodes every running job holds; no allocator needs a "claim this allocation" API.
  Under a gang policy (``--gang``) the same holds: the policy is a deterministic function
  of these inputs and their times, ``tick`` included, so the replay rebuilds the rows, the
  registration office, every job's level and slot counts and the current slot; slot switches
  themselves are decisions, not inputs, and are not journaled (a recovered daemon sends each
  node the current slot when it registers again).
* ``jobs``: the current view of every job (state, attempt, allocation, times, exit status, and
  for a job failed by a task's exit its ``failure``: rank, node, status and the tail of the
  task's output), for ``mcemu queue --all`` and for a restarted daemon.

The daemon batches the changes of one poll-loop iteration into one transaction and commits
before it sends any acknowledgement or task message, so a state change is on disk (in the
WAL) before anyone hears of it. ``synchronous=NORMAL`` survives the fault model (the daemon
process killed at any point); ``fsync=True`` (``--fsync``) selects FULL for power loss too.
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    t REAL NOT NULL,
    job INTEGER,
    node INTEGER,
    data TEXT
);
CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL DEFAULT '',
    request TEXT NOT NULL,
    runtime REAL NOT NULL,
    command TEXT,
    burn INTEGER NOT NULL DEFAULT 0,
    state TEXT NOT NULL,
    attempt INTEGER NOT NULL DEFAULT 0,
    faults INTEGER NOT NULL DEFAULT 0,
    submit REAL NOT NULL,
    start REAL,
    "end" REAL,
    nodes TEXT,
    allocation TEXT,
    exit TEXT,
    usage TEXT,
    reason TEXT,
    owner TEXT,
    user TEXT
);
"""
# columns added after the table's first form: added to an older journal when it is opened
ADDED_COLUMNS = ("owner", "user", "comm", "failure")

JOB_COLUMNS = ("id", "name", "request", "runtime", "command", "burn", "state", "attempt", "faults",
               "submit", "start", "end", "nodes", "allocation", "exit", "usage", "reason", "owner", "user",
               "comm", "failure")
_JSON_COLS = {"request", "nodes", "exit", "usage", "comm", "failure"}


class Journal:
    def __init__(self, path: Path | str, fsync: bool = False):
        self.path = str(path)
        self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(f"PRAGMA synchronous={'FULL' if fsync else 'NORMAL'}")
        self.db.executescript(SCHEMA)
        have = {r[1] for r in self.db.execute("PRAGMA table_info(jobs)")}
        for c in ADDED_COLUMNS:
            if c not in have:
                self.db.execute(f'ALTER TABLE jobs ADD COLUMN "{c}" TEXT')
        self._in_tx = False
        self._events: list = []
        self._jobs: dict = {}

    # ---------------------------------------------------------------- meta

    def get_meta(self) -> dict:
        return {k: json.loads(v) for k, v in self.db.execute("SELECT key, value FROM meta")}

    @staticmethod
    def read_meta(path) -> dict:
        """The meta data of the journal at ``path`` read without opening it for writing ({}
        when there is none): ``mcemu up`` checks its settings before starting a daemon."""
        try:
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        except sqlite3.Error:
            return {}
        try:
            return {k: json.loads(v) for k, v in db.execute("SELECT key, value FROM meta")}
        except sqlite3.Error:
            return {}
        finally:
            db.close()

    def set_meta(self, **kv) -> None:
        with self.db:
            self.db.execute("BEGIN")
            self.db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                                [(k, json.dumps(v)) for k, v in kv.items()])

    # ---------------------------------------------------------------- buffered writes

    def event(self, kind: str, t: float, job: int | None = None, node: int | None = None, data=None) -> None:
        self._events.append((kind, t, job, node, None if data is None else json.dumps(data)))

    def retract(self) -> None:
        """Drop the last event not yet committed (an input the policy refused)."""
        self._events.pop()

    def job(self, row: dict) -> None:
        """Upsert the current view of a job (a dict with JOB_COLUMNS keys)."""
        self._jobs[row["id"]] = row

    @property
    def dirty(self) -> bool:
        return bool(self._events or self._jobs)

    def commit(self) -> None:
        if not self.dirty:
            return
        rows = [tuple(json.dumps(r.get(c)) if c in _JSON_COLS and r.get(c) is not None else r.get(c)
                      for c in JOB_COLUMNS) for r in self._jobs.values()]
        cols = ", ".join(f'"{c}"' for c in JOB_COLUMNS)
        marks = ", ".join("?" * len(JOB_COLUMNS))
        db = self.db
        db.execute("BEGIN")
        try:
            if self._events:
                db.executemany("INSERT INTO events (kind, t, job, node, data) VALUES (?, ?, ?, ?, ?)", self._events)
            if rows:
                db.executemany(f"INSERT OR REPLACE INTO jobs ({cols}) VALUES ({marks})", rows)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self._events.clear()
        self._jobs.clear()

    # ---------------------------------------------------------------- reads

    def events(self):
        for kind, t, job, node, data in self.db.execute("SELECT kind, t, job, node, data FROM events ORDER BY seq"):
            yield kind, t, job, node, (json.loads(data) if data is not None else None)

    def jobs(self) -> list[dict]:
        cols = ", ".join(f'"{c}"' for c in JOB_COLUMNS)
        out = []
        for row in self.db.execute(f"SELECT {cols} FROM jobs ORDER BY id"):
            d = dict(zip(JOB_COLUMNS, row))
            for c in _JSON_COLS:
                if d[c] is not None:
                    d[c] = json.loads(d[c])
            out.append(d)
        return out

    def max_job_id(self) -> int:
        return self.db.execute("SELECT COALESCE(MAX(id), 0) FROM jobs").fetchone()[0]

    def close(self) -> None:
        try:
            self.commit()
        finally:
            self.db.close()


__all__ = ["Journal", "JOB_COLUMNS"]
