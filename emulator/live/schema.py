"""The wire protocol's table (emulator.live.protocol is its codec and the module to import): the
limits, the field validators and, for every message type, its fields with their validator and
whether they are required; the sets of types each kind of peer may send. A message type or a
field is added here and nowhere else."""
from __future__ import annotations

import math

VERSION = 1
MAX_FRAME = 256 * 1024          # largest request frame the daemon decodes (error reply above)
MAX_WIRE = 1024 * 1024          # libzmq drops (disconnects) anything larger: zmq.MAXMSGSIZE
MAX_REPLY = 64 * 1024 * 1024    # replies and events may be large (a full queue listing)
MAX_STR = 8192
MAX_PATH = 4096  # Linux's PATH_MAX: a job's working directory or stdin, as the caller named it
MAX_LIST = 1 << 16
MAX_NODE = 1 << 20
MAX_ID = (1 << 63) - 1
MAX_MATCH = 64  # envelopes a net_wait names at most (nodes.mpi.matching.MAX_MATCH: a rank keeps to it)
# rows of one page of ``queue`` (its ``limit``): a page is cheap to build and send in one turn
# of the daemon's loop, where a listing of 20,000 rows took it half a second (issue 30)
QUEUE_PAGE = 1000
# bytes of one task-to-task message (net_send.data): an MPI packet's data (nodes.mpi.errors.PACKET,
# 512 KiB; a longer MPI message goes as several) and its envelope; a frame stays under MAX_WIRE
MAX_PAYLOAD = (1 << 19) + 1024
# bytes of one ``output`` frame (a remote node's task output, emulator.live.outsink): a rank that
# prints fast is forwarded a frame at a time, so no frame holds the daemon's turn for long
MAX_CHUNK = 64 * 1024
MAX_OFFSET = 1 << 40  # an output frame's offset in its task's file: far past any cap, still an int64
MAX_TAIL_RANKS = 1 << 14  # ranks one ``tail`` asks for (a job of a 128x128 mesh)


class ProtocolError(ValueError):
    """A refused message; ``code`` is one of: too-large, not-msgpack, not-a-map, version,
    unknown-type, missing-field, unknown-field, bad-field, frames."""

    def __init__(self, code: str, message: str, req_id=None):
        super().__init__(message)
        self.code = code
        self.req_id = req_id


# ---------------------------------------------------------------- field validators
# Each takes the value and returns it (possibly normalized) or raises ValueError(reason).
# The simple ones also carry ``kind`` = (tag, a, b), which _Fast checks inline (see there).

INT, FLOAT, STR, BOOL, INTS = range(5)
_INT_SET = {int}


def _int(lo=0, hi=MAX_ID):
    def check(v):
        if type(v) is not int and (isinstance(v, bool) or not isinstance(v, int)) or not lo <= v <= hi:
            raise ValueError(f"must be an integer in [{lo}, {hi}]")
        return v
    check.int_range = (lo, hi)
    check.kind = (INT, lo, hi)
    return check


def _num(lo=0.0, hi=1e12):
    def check(v):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not lo <= v <= hi:
            raise ValueError(f"must be a finite number in [{lo:g}, {hi:g}]")
        return float(v)
    check.kind = (FLOAT, lo, hi)
    return check


def _str(maxlen=MAX_STR, empty=True):
    def check(v):
        if not isinstance(v, str) or len(v) > maxlen or (not empty and not v):
            raise ValueError(f"must be a {'non-empty ' if not empty else ''}string of at most {maxlen} chars")
        return v
    check.kind = (STR, maxlen, empty)
    return check


def _bool(v):
    if not isinstance(v, bool):
        raise ValueError("must be true or false")
    return v


_bool.kind = (BOOL, 0, 0)


def _opt(check):
    def c(v):
        return None if v is None else check(v)
    c.kind = getattr(check, "kind", None)
    c.optional = True
    return c


def _list(item, maxlen=MAX_LIST):
    lohi = getattr(item, "int_range", None)

    def check(v):
        if not isinstance(v, (list, tuple)) or len(v) > maxlen:
            raise ValueError(f"must be a list of at most {maxlen} items")
        # a list of plain ints in range, checked in C: a 64-node job's ``run`` lists 64 nodes
        if lohi is not None and (not v or set(map(type, v)) == _INT_SET and lohi[0] <= min(v) and max(v) <= lohi[1]):
            return list(v)
        return [item(x) for x in v]
    if lohi is not None and maxlen == MAX_LIST:
        check.kind = (INTS, *lohi)
    return check


def _envelopes(v):
    """A wait's ``match``: [[context, source or null, tag or null], ...] (null: any)."""
    if not isinstance(v, (list, tuple)) or not 0 < len(v) <= MAX_MATCH:
        raise ValueError(f"must be a list of 1 to {MAX_MATCH} [context, source, tag] envelopes")
    out = []
    for e in v:
        if not isinstance(e, (list, tuple)) or len(e) != 3:
            raise ValueError("an envelope must be [context, source, tag]")
        out.append((_int(0, (1 << 32) - 1)(e[0]), None if e[1] is None else _int(0, MAX_NODE)(e[1]),
                    None if e[2] is None else _int(-(1 << 31), (1 << 31) - 1)(e[2])))
    return tuple(out)


def _record(fields: dict, optional: dict | None = None):
    """A nested map with exactly the given fields (all required), and any of ``optional``."""
    optional = optional or {}
    allowed = set(fields) | set(optional)

    def check(v):
        if not isinstance(v, dict):
            raise ValueError("must be a map")
        if not set(fields) <= set(v) <= allowed:
            extra = f" (and optionally {sorted(optional)})" if optional else ""
            raise ValueError(f"must have exactly the fields {sorted(fields)}{extra}")
        out = {k: f(v[k]) for k, f in fields.items()}
        out.update((k, f(v[k])) for k, f in optional.items() if k in v)
        return out
    return check


def _usage(v):
    if not isinstance(v, dict) or len(v) > 32:
        raise ValueError("must be a map of at most 32 numbers")
    out = {}
    for k, x in v.items():
        if not isinstance(k, str) or len(k) > 64:
            raise ValueError("keys must be short strings")
        out[k] = _num(0.0, 1e18)(x)
    return out


def _request(v):
    """``{"cube": k}``, ``{"shape": [w, h]}`` or ``{"nodes": p}``; checked for type and a
    sane range here, for fit by the allocator."""
    if not isinstance(v, dict) or len(v) != 1:
        raise ValueError('must be {"cube": K}, {"shape": [W, H]} or {"nodes": P}')
    (k, x), = v.items()
    if k == "cube":
        _int(0, 20)(x)
    elif k == "shape":
        _list(_int(1, 1 << 16), 2)(x)
        if len(x) != 2:
            raise ValueError("shape must be [W, H]")
        x = list(x)
    elif k == "nodes":
        _int(1, MAX_NODE)(x)
    else:
        raise ValueError('must be {"cube": K}, {"shape": [W, H]} or {"nodes": P}')
    return {k: x}


def _path(v):
    """An absolute path of a job's caller (its working directory, its stdin): opened by the
    task on its node, so it must mean the same from any working directory there."""
    if not isinstance(v, str) or not 0 < len(v) <= MAX_PATH or not v.startswith("/") or "\0" in v:
        raise ValueError(f"must be an absolute path of at most {MAX_PATH} chars, without NUL")
    return v


def _any(v):
    return v


def _bin(maxlen):
    def check(v):
        if not isinstance(v, bytes) or len(v) > maxlen:
            raise ValueError(f"must be binary of at most {maxlen} bytes")
        return v
    return check


NODE = _int(0, MAX_NODE)
JOB = _int(1, MAX_ID)
ATTEMPT = _int(1, 1 << 20)
RANK = _int(0, MAX_NODE)
PID = _int(1, 1 << 31)
REQ_ID = _int(0, MAX_ID)

_TASK = _record({"job": JOB, "attempt": ATTEMPT, "rank": RANK, "pid": PID})
# a task that ended while its node could not report it: with the tail of its output when it
# failed (``error``, as in task_done), or the node could never register again
_DONE = _record({"job": JOB, "attempt": ATTEMPT, "rank": RANK, "status": _int(-255, 255),
                 "usage": _usage}, {"error": _opt(_str())})

# type -> {field: (validator, required)}
R, O = True, False
SCHEMAS: dict[str, dict] = {
    # node -> daemon
    "register": {"node": (NODE, R), "pid": (PID, R), "host": (_str(255, False), R),
                 "tasks": (_list(_TASK), O), "finished": (_list(_DONE), O)},
    "heartbeat": {"node": (NODE, O)},
    "task_started": {"node": (NODE, R), "job": (JOB, R), "attempt": (ATTEMPT, R),
                     "rank": (RANK, R), "pid": (PID, R)},
    "task_done": {"node": (NODE, R), "job": (JOB, R), "attempt": (ATTEMPT, R), "rank": (RANK, R),
                  "status": (_int(-255, 255), R), "usage": (_usage, R), "error": (_opt(_str()), O)},
    "bye": {"node": (NODE, R)},
    # a command task's output, from a node whose output directory is not the daemon's (the
    # welcome's output_id): bytes [offset, offset + len(data)) of its file (emulator.live.outsink)
    "output": {"node": (NODE, R), "job": (JOB, R), "attempt": (ATTEMPT, R), "rank": (RANK, R),
               "offset": (_int(0, MAX_OFFSET), R), "data": (_bin(MAX_CHUNK), R)},
    "switched": {"node": (NODE, R), "slot": (_int(0, MAX_ID), R), "t_first": (_opt(_num(0, 1e12)), R),
                 "t_stop": (_opt(_num(0, 1e12)), R), "t_cont": (_opt(_num(0, 1e12)), R),
                 "running": (_list(JOB), R), "stopped": (_list(JOB), R)},
    # daemon -> node
    "welcome": {"node": (NODE, R), "heartbeat": (_num(0.001, 3600), R), "liveness": (_int(1, 1000), R),
                "output_id": (_str(64), O)},
    # the daemon has the task's output up to ``offset`` only (a frame was lost): send from there
    "output_at": {"job": (JOB, R), "attempt": (ATTEMPT, R), "rank": (RANK, R), "offset": (_int(0, MAX_OFFSET), R)},
    "run": {"job": (JOB, R), "attempt": (ATTEMPT, R), "rank": (RANK, R), "node": (NODE, R),
            "nodes": (_list(NODE), R), "runtime_s": (_num(0, 1e9), R), "command": (_opt(_str()), O),
            "burn": (_bool, O), "name": (_str(255), O), "gang": (_bool, O), "suspended": (_bool, O),
            "user": (_str(64, empty=False), O), "secret": (_str(128, empty=False), O),
            "cwd": (_opt(_path), O), "stdin": (_opt(_path), O)},
    "switch": {"slot": (_int(0, MAX_ID), R), "stop": (_list(JOB), R), "run": (_list(JOB), R)},
    "suspend": {"job": (JOB, R), "attempt": (_opt(ATTEMPT), O)},
    "resume": {"job": (JOB, R), "attempt": (_opt(ATTEMPT), O)},
    "kill": {"job": (JOB, R), "attempt": (_opt(ATTEMPT), O)},
    "ack": {"job": (JOB, R), "attempt": (ATTEMPT, R), "rank": (RANK, R)},
    "shutdown": {"id": (REQ_ID, O)},
    # client -> daemon
    "submit": {"id": (REQ_ID, R), "request": (_request, R), "runtime": (_num(1e-9, 1e9), R),
               "name": (_str(255), O), "command": (_opt(_str()), O), "burn": (_bool, O),
               # a command's working directory and rank 0's stdin (``mcemu run``): absolute paths
               "cwd": (_opt(_path), O), "stdin": (_opt(_path), O)},
    "cancel": {"id": (REQ_ID, R), "job": (JOB, R), "why": (_str(200), O)},  # why: said in the job's reason
    # ``mcemu run`` of another host: the job's output files from these offsets, rank by rank
    # (emulator.live.client_handlers ``on_tail``)
    "tail": {"id": (REQ_ID, R), "job": (JOB, R), "at": (_list(_int(0, MAX_OFFSET), MAX_TAIL_RANKS), R)},
    "queue": {"id": (REQ_ID, R), "all": (_bool, O), "jobs": (_list(JOB), O),
              "after": (_int(0, MAX_ID), O), "limit": (_int(1, QUEUE_PAGE), O)},
    "nodes": {"id": (REQ_ID, R)},
    "status": {"id": (REQ_ID, R)},
    "ping": {"id": (REQ_ID, R)},
    # replies
    "ok": {"id": (REQ_ID, R), "data": (_any, O)},
    "error": {"id": (_opt(REQ_ID), O), "code": (_str(64), R), "message": (_str(), R)},
    # PUB events
    "job": {"job": (JOB, R), "state": (_str(32), R), "t": (_num(), R), "info": (_any, O)},
    "node": {"node": (NODE, R), "state": (_str(32), R), "t": (_num(), R), "info": (_any, O)},
    "snapshot": {"t": (_num(), R), "data": (_any, R)},
    # the interconnect (module docstring)
    "net_hello": {"job": (JOB, R), "attempt": (ATTEMPT, R), "rank": (RANK, R), "nodes": (_list(NODE), R),
                  "sync": (_bool, O), "group": (_str(64, empty=False), O), "pid": (_int(1, 1 << 31), O),
                  "group_jobs": (_int(1, 1 << 16), O), "clock": (_bool, O),
                  "secret": (_str(128, empty=False), O)},
    "net_send": {"id": (REQ_ID, R), "to": (RANK, R), "data": (_bin(MAX_PAYLOAD), R), "measured": (_bool, O),
                 "nbytes": (_int(0, 1 << 30), O), "vt": (_num(0, 1e12), O), "notice": (_bool, O),
                 "lazy": (_bool, O)},
    "net_wait": {"vt": (_num(0, 1e12), R), "until": (_opt(_num(0, 1e12)), O),
                 "what": (_str(512), O), "match": (_envelopes, O), "need": (_int(1, MAX_MATCH), O)},
    "net_bye": {"vt": (_num(0, 1e12), R)},
    "net_go": {"vt": (_num(), R)},
    "net_links": {"id": (REQ_ID, R)},
    "net_barrier": {"id": (REQ_ID, R), "group": (_str(64, empty=False), O), "vt": (_num(0, 1e12), O)},
    "net_welcome": {"job": (JOB, R), "rank": (RANK, R), "size": (_int(1, MAX_NODE), R),
                    "dilation": (_num(1e-6, 1e12), R), "flit_time_us": (_num(1e-9, 1e6), R),
                    "length_flits": (_int(1, 1 << 30), R), "time": (_str(16), O), "vt0": (_num(), O),
                    "flit_bytes": (_int(1, 1 << 20), O), "cpu_scale": (_num(0, 1e9), O),
                    "topology": (_str(64), O), "startup_flits": (_num(0, 1e12), O), "now": (_num(), O),
                    "cpu_gauge": (_num(1e-9, 10), O)},
    "net_msg": {"source": (RANK, R), "data": (_bin(MAX_PAYLOAD), R), "due": (_num(), R)},
    "net_delivered": {"id": (REQ_ID, R), "delay_us": (_num(), R), "due": (_num(), R)},
    "comm": {"id": (REQ_ID, R), "job": (JOB, R), "attempt": (ATTEMPT, R), "stats": (_any, R),
             "fail": (_str(1000), O)},
}

NODE_TYPES = frozenset({"register", "heartbeat", "task_started", "task_done", "switched", "bye", "output"})
CLIENT_TYPES = frozenset({"submit", "cancel", "queue", "nodes", "status", "shutdown", "ping", "tail"})
TO_NODE_TYPES = frozenset({"welcome", "run", "suspend", "resume", "switch", "kill", "ack", "heartbeat",
                           "shutdown", "error", "output_at"})
EVENT_TOPICS = (b"job", b"node", b"snapshot")
NET_TYPES = frozenset({"net_hello", "net_send", "net_links", "net_barrier", "net_wait", "net_bye"})  # what the interconnect accepts
LOCAL_TYPES = frozenset({"comm"})  # daemon types only a LOCAL peer may send (the interconnect)
