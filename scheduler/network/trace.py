"""Program traces: what a program's ranks did, for the simulator to replay on other nodes.

A run of a message-passing program in virtual time (nodes.mpi.live) writes one file per rank,
``$MCEMU_HOME/traces/job-<id>/rank-<r>.json``; ``mcemu net replay`` reads such a directory, or
the same ranks merged into one JSON file (:func:`dump`), into a :class:`Trace`. The format
(docs/ARCHITECTURE.md, "Program traces") is a JSON object per rank::

    {"version": 1, "job": 12, "attempt": 1, "rank": 3, "size": 16, "nodes": [5, 6, ...],
     "topology": "mesh:8x8", "flit_time_us": 0.05, "flit_bytes": 8, "startup_flits": 0.0,
     "cpu_scale": 1.0, "time": "virtual", "events": [...]}

``nodes[i]`` is rank i's node. Times are seconds of the rank's clock from the job's start,
which an optional ``"vt0"`` places on the interconnect's clock (seconds; default 0): a replay
that runs at the same clock rounds seconds to flit times as the live run did, so two events
that coincided there coincide in the replay too.
The events, in the order the rank did them:

* ``["c", dt]``: computed (or slept) ``dt`` seconds;
* ``["s", dest, nbytes, seq]``: sent ``nbytes`` user bytes to rank ``dest``; ``seq`` numbers
  the messages from this rank to ``dest`` (0, 1, 2 ...);
* ``["w", timeout_or_null, msgs, notices]``: a wait that returned the messages
  ``[[source, seq, due], ...]`` and the delivery notices of its own sends
  ``[[dest, seq, due], ...]``; with both empty the clock moved on by ``timeout`` (null: not at all);
* ``["e", clock]``: the rank ended at this clock.

A merged file is ``{"version": 1, <the shared fields>, "ranks": [{"rank": r, "events": [...]}, ...]}``.
Loading checks every rank is there once, the ranks agree on the shared fields, every event
is well formed, every message a wait lists was sent (and is handed over once), and no time is
negative: a :class:`TraceError` names the file, the rank and the event.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

VERSION = 1
SHARED = ("job", "attempt", "size", "nodes", "topology", "flit_time_us", "flit_bytes", "startup_flits",
          "cpu_scale", "time")
OPTIONAL = {"vt0": 0.0}  # shared fields a trace may leave out, and their values then
KINDS = {"c": 2, "s": 4, "w": 4, "e": 2}  # event kind -> its length
_RANK_FILE = re.compile(r"^rank-(\d+)\.json$")


class TraceError(ValueError):
    """A trace that cannot be replayed: missing or partial, malformed, or inconsistent."""


@dataclass(frozen=True)
class Trace:
    """One program run's trace (module docstring): the shared fields and each rank's events
    (``events[r]``, lists as in the file)."""

    job: int | None
    attempt: int | None
    size: int
    nodes: tuple[int, ...]
    topology: str
    flit_time_us: float
    flit_bytes: int
    startup_flits: float
    cpu_scale: float
    time: str
    events: tuple[tuple, ...]
    vt0: float = 0.0  # the job's start on the interconnect's clock (seconds), which times count from

    def flits(self, nbytes: int) -> int:
        """A message of ``nbytes`` user bytes is a header flit plus ceil(nbytes / flit_bytes)."""
        return 1 + -(-nbytes // self.flit_bytes)

    def ends(self) -> list[float]:
        """Each rank's recorded end clock (its ``e`` event)."""
        return [float(ev[-1][1]) for ev in self.events]

    def header(self) -> dict:
        return {"version": VERSION, **{k: (list(self.nodes) if k == "nodes" else getattr(self, k))
                                       for k in (*SHARED, *OPTIONAL)}}


def load_trace(path) -> Trace:
    """A trace from a directory of ``rank-<r>.json`` files or from one merged JSON file."""
    p = Path(path)
    if p.is_dir():
        return _from_dir(p)
    if not p.exists():
        raise TraceError(f"{p}: no such trace (a directory of rank-<r>.json files or one merged JSON file)")
    doc = _read(p)
    if isinstance(doc, dict) and "ranks" in doc:
        if not isinstance(doc["ranks"], list):
            raise TraceError(f"{p}: 'ranks' must be a list of rank objects")
        shared = {k: v for k, v in doc.items() if k != "ranks"}
        ranks = [(f"{p} ranks[{i}]", {**shared, **r} if isinstance(r, dict) else r) for i, r in enumerate(doc["ranks"])]
        return build(ranks, str(p))
    return build([(str(p), doc)], str(p))


def _from_dir(d: Path) -> Trace:
    files = sorted((int(m.group(1)), f) for f in d.iterdir() if (m := _RANK_FILE.match(f.name)))
    if not files:
        raise TraceError(f"{d}: no rank-<r>.json files (a trace directory is $MCEMU_HOME/traces/job-<id>)")
    return build([(str(f), _read(f)) for _, f in files], str(d))


def _read(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as e:
        raise TraceError(f"{path}: cannot read: {e}") from None
    except json.JSONDecodeError as e:
        raise TraceError(f"{path}: not JSON: {e}") from None


def build(ranks: list[tuple[str, dict]], where: str = "trace") -> Trace:
    """A checked :class:`Trace` from ``(where, rank object)`` pairs (module docstring)."""
    first = None
    by_rank: dict[int, tuple] = {}
    for name, r in ranks:
        if not isinstance(r, dict):
            raise TraceError(f"{name}: a rank must be a JSON object, got {type(r).__name__}")
        if r.get("version") != VERSION:
            raise TraceError(f"{name}: trace version {r.get('version')!r}, this reader knows {VERSION}")
        missing = [k for k in ("rank", "events", *SHARED) if k not in r]
        if missing:
            raise TraceError(f"{name}: missing field(s) {', '.join(missing)}")
        shared = {**{k: r[k] for k in SHARED}, **{k: r.get(k, v) for k, v in OPTIONAL.items()}}
        if first is None:
            first = (name, _check_shared(shared, name))
        elif shared != first[1]:
            k = next(k for k in shared if shared[k] != first[1][k])
            raise TraceError(f"{name}: {k} = {shared[k]!r}, but {first[0]} says {first[1][k]!r}")
        rank = r["rank"]
        if not _is_int(rank) or not 0 <= rank < first[1]["size"]:
            raise TraceError(f"{name}: rank {rank!r} is not in 0..{first[1]['size'] - 1}")
        if rank in by_rank:
            raise TraceError(f"{name}: rank {rank} also in {by_rank[rank][0]}")
        by_rank[rank] = (name, r["events"])
    if first is None:
        raise TraceError(f"{where}: no ranks")
    s = first[1]
    lost = [r for r in range(s["size"]) if r not in by_rank]
    if lost:
        raise TraceError(f"{where}: a partial trace: rank(s) {_ranges(lost)} of {s['size']} missing "
                         f"(a rank writes its file when it ends)")
    events = tuple(_check_events(by_rank[r][1], r, s["size"], by_rank[r][0]) for r in range(s["size"]))
    _check_messages(events, [by_rank[r][0] for r in range(s["size"])])
    return Trace(**{**s, "nodes": tuple(s["nodes"])}, events=events)


def _check_shared(s: dict, name: str) -> dict:
    size, nodes = s["size"], s["nodes"]
    if not _is_int(size) or size < 1:
        raise TraceError(f"{name}: size must be a positive integer, got {size!r}")
    if not isinstance(nodes, list) or len(nodes) != size or not all(_is_int(n) and n >= 0 for n in nodes):
        raise TraceError(f"{name}: nodes must list one node id per rank ({size}), got {nodes!r}")
    if len(set(nodes)) != size:
        raise TraceError(f"{name}: nodes {nodes} name a node twice")
    if not isinstance(s["topology"], str):
        raise TraceError(f"{name}: topology must be a string like mesh:8x8, got {s['topology']!r}")
    for k in ("flit_time_us", "cpu_scale"):
        if not _num(s[k]) or s[k] <= 0:
            raise TraceError(f"{name}: {k} must be a positive number, got {s[k]!r}")
    if not _is_int(s["flit_bytes"]) or s["flit_bytes"] < 1:
        raise TraceError(f"{name}: flit_bytes must be a positive integer, got {s['flit_bytes']!r}")
    for k in ("startup_flits", "vt0"):
        if not _num(s[k]) or s[k] < 0:
            raise TraceError(f"{name}: {k} must be a number >= 0, got {s[k]!r}")
    if s["time"] not in ("virtual", "dilated"):
        raise TraceError(f"{name}: time must be 'virtual' or 'dilated', got {s['time']!r}")
    return s


def _check_events(events, rank: int, size: int, name: str) -> tuple:
    """Each event well formed; sends numbered 0, 1, 2 ... per destination; one ``e``, last."""
    if not isinstance(events, list) or not events:
        raise TraceError(f"{name}: rank {rank} has no events (at least its end, [\"e\", clock])")
    next_seq: dict[int, int] = {}
    for i, ev in enumerate(events):
        at = f"{name}: rank {rank}, event {i} {json.dumps(ev)}"
        if not isinstance(ev, list) or not ev or ev[0] not in KINDS:
            kind = ev[0] if isinstance(ev, list) and ev else ev
            raise TraceError(f"{at}: unknown event kind {kind!r} (known: c, s, w, e)")
        if len(ev) != KINDS[ev[0]]:
            raise TraceError(f"{at}: a {ev[0]!r} event has {KINDS[ev[0]]} fields")
        kind = ev[0]
        if kind in ("c", "e"):
            _time(ev[1], at, "time")
        elif kind == "s":
            dest, nbytes, seq = ev[1:]
            _peer(dest, size, at)
            if not _is_int(nbytes) or nbytes < 0:
                raise TraceError(f"{at}: nbytes must be an integer >= 0")
            if seq != next_seq.get(dest, 0):
                raise TraceError(f"{at}: message {seq!r} to rank {dest}, expected {next_seq.get(dest, 0)}")
            next_seq[dest] = seq + 1
        else:
            if ev[1] is not None:
                _time(ev[1], at, "timeout")
            for what in (ev[2], ev[3]):
                if not isinstance(what, list):
                    raise TraceError(f"{at}: a wait lists its messages and notices as lists")
                for m in what:
                    if not (isinstance(m, list) and len(m) == 3 and _is_int(m[1]) and m[1] >= 0):
                        raise TraceError(f"{at}: {m!r} is not [rank, seq, due]")
                    _peer(m[0], size, at)
                    _time(m[2], at, "due")
        if kind == "e" and i != len(events) - 1:
            raise TraceError(f"{at}: events after the rank's end")
    if events[-1][0] != "e":
        raise TraceError(f"{name}: rank {rank}'s events do not end with [\"e\", clock] (the rank did not close?)")
    return tuple(events)


def _check_messages(events: tuple, names: list[str]) -> None:
    """Every message a wait lists was sent, and is handed over once; every notice is of a
    send of the waiting rank."""
    sent = {(r, ev[1], ev[3]) for r, evs in enumerate(events) for ev in evs if ev[0] == "s"}
    seen: dict[tuple, int] = {}
    for r, evs in enumerate(events):
        for i, ev in enumerate(evs):
            if ev[0] != "w":
                continue
            at = f"{names[r]}: rank {r}, event {i}"
            for src, seq, _ in ev[2]:
                key = (src, r, seq)
                if key not in sent:
                    raise TraceError(f"{at}: waits for message {seq} from rank {src}, which rank {src} never sent")
                if key in seen:
                    raise TraceError(f"{at}: message {seq} from rank {src} was handed over already (event {seen[key]})")
                seen[key] = i
            for dest, seq, _ in ev[3]:
                if (r, dest, seq) not in sent:
                    raise TraceError(f"{at}: a notice of message {seq} to rank {dest}, which rank {r} never sent")


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _time(v, at: str, what: str) -> None:
    if not _num(v):
        raise TraceError(f"{at}: {what} must be a number of seconds, got {v!r}")
    if v < 0:
        raise TraceError(f"{at}: negative {what} {v!r}")


def _peer(v, size: int, at: str) -> None:
    if not _is_int(v) or not 0 <= v < size:
        raise TraceError(f"{at}: rank {v!r} is not in 0..{size - 1}")


def _ranges(ids) -> str:
    out, run = [], []
    for i in sorted(ids):
        if run and i != run[-1] + 1:
            out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
            run = []
        run.append(i)
    out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
    return ",".join(out)


def dump(trace: Trace, path) -> None:
    """Write ``trace`` as one merged JSON file (module docstring)."""
    doc = {**trace.header(), "ranks": [{"rank": r, "events": list(ev)} for r, ev in enumerate(trace.events)]}
    Path(path).write_text(json.dumps(doc, separators=(",", ":")) + "\n")


def merge(src, dst) -> Trace:
    """Load the trace at ``src`` (a directory or a merged file) and write it merged to ``dst``."""
    trace = load_trace(src)
    dump(trace, dst)
    return trace


__all__ = ["Trace", "TraceError", "build", "dump", "load_trace", "merge"]
