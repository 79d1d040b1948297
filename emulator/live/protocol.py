"""The mcemu wire protocol: one msgpack map per ZeroMQ frame, versioned and validated.

Every message is a map ``{"v": 1, "type": T, ...fields}``. :func:`decode` refuses (with a
:class:`ProtocolError` carrying a short code) anything that is not exactly a known message:
a frame larger than :data:`MAX_FRAME`, bytes that are not msgpack, msgpack ext types, a map
with a wrong version, an unknown type, a missing field, an unknown field, or a field of the
wrong type or outside its range. The daemon answers a refused request with an ``error``
message naming the code and the reason (or drops it when no reply is possible), and carries
on.

Sockets (see emulator.live.daemon): the daemon's ROUTER serves nodes and clients, both DEALERs; a
frame sequence on the ROUTER is ``[routing id, frame]`` and anything with more or fewer
frames is refused. The PUB socket sends ``[topic, frame]`` with topic ``job``, ``node`` or
``snapshot``.

Message types
  node -> daemon:  register, heartbeat, task_started, task_done, switched, bye
  daemon -> node:  welcome, run, suspend, resume, switch, kill, ack, heartbeat, shutdown, error

Gang scheduling: ``run`` carries ``gang`` (the agent ends a synthetic task after ``runtime_s``
seconds of dispatched time) and ``suspended`` (create it stopped); ``switch`` {slot, stop,
run} asks a node to SIGSTOP the tasks of the jobs in ``stop``, then SIGCONT those in ``run``;
the node answers ``switched`` with CLOCK_MONOTONIC stamps (first signal, after its last
SIGSTOP, after its last SIGCONT) and the jobs it now has running and stopped.
  client -> daemon (each with a request ``id`` echoed in the reply):
                   submit, cancel, queue, nodes, status, shutdown, ping
                   (``queue`` pages: ``after`` a job id, at most ``limit`` rows; its reply's
                   ``next`` is the ``after`` of the next page, None after the last; without
                   ``limit`` the reply holds every row, built by the daemon over several turns)
  daemon -> client: ok {id, data}, error {id, code, message}
  PUB events:      job, node, snapshot

The interconnect (emulator.live.interconnect, ``net.sock``) speaks the same frames with its
own types (NET_TYPES), one payload at most MAX_PAYLOAD bytes:
  task -> net:     net_hello {job, attempt, rank, nodes, sync, group} (``nodes``: the job's node
                   list, rank i on nodes[i]: the hello makes the task's job known), net_send
                   {id, to, data, measured},
                   net_barrier {id, group} (answered ``ok`` when every rank of the job, or of
                   every running job whose tasks named that ``group``, has entered it);
                   virtual time (emulator.live.vtime): net_send's vt/nbytes/notice, net_wait
                   {vt, until, what} (answered by the net_msg/net_delivered frames due up to
                   the answer, then net_go {vt}), net_bye {vt} (the rank ended)
  client -> net:   net_links {id}
  net -> task:     net_welcome, net_msg {source, data, due}, net_delivered {id, delay_us, due},
                   error {id, code, message}
  net -> daemon:   comm {id, job, attempt, stats} (a LOCAL peer only: emulator.live.auth)
"""
from __future__ import annotations

import math
import threading

import msgpack

VERSION = 1
MAX_FRAME = 256 * 1024          # largest request frame the daemon decodes (error reply above)
MAX_WIRE = 1024 * 1024          # libzmq drops (disconnects) anything larger: zmq.MAXMSGSIZE
MAX_REPLY = 64 * 1024 * 1024    # replies and events may be large (a full queue listing)
MAX_STR = 8192
MAX_LIST = 1 << 16
MAX_NODE = 1 << 20
MAX_ID = (1 << 63) - 1
# rows of one page of ``queue`` (its ``limit``): a page is cheap to build and send in one turn
# of the daemon's loop, where a listing of 20,000 rows took it half a second (issue 30)
QUEUE_PAGE = 1000
# bytes of one task-to-task message (net_send.data): an MPI message's data (nodes.mpi.errors.MAX_MESSAGE,
# 512 KiB) and its envelope; a frame stays under MAX_WIRE
MAX_PAYLOAD = (1 << 19) + 1024


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


def _record(fields: dict):
    """A nested map with exactly the given fields (all required)."""
    def check(v):
        if not isinstance(v, dict):
            raise ValueError("must be a map")
        if set(v) != set(fields):
            raise ValueError(f"must have exactly the fields {sorted(fields)}")
        return {k: f(v[k]) for k, f in fields.items()}
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
_DONE = _record({"job": JOB, "attempt": ATTEMPT, "rank": RANK, "status": _int(-255, 255),
                 "usage": _usage})

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
    "switched": {"node": (NODE, R), "slot": (_int(0, MAX_ID), R), "t_first": (_opt(_num(0, 1e12)), R),
                 "t_stop": (_opt(_num(0, 1e12)), R), "t_cont": (_opt(_num(0, 1e12)), R),
                 "running": (_list(JOB), R), "stopped": (_list(JOB), R)},
    # daemon -> node
    "welcome": {"node": (NODE, R), "heartbeat": (_num(0.001, 3600), R), "liveness": (_int(1, 1000), R)},
    "run": {"job": (JOB, R), "attempt": (ATTEMPT, R), "rank": (RANK, R), "node": (NODE, R),
            "nodes": (_list(NODE), R), "runtime_s": (_num(0, 1e9), R), "command": (_opt(_str()), O),
            "burn": (_bool, O), "name": (_str(255), O), "gang": (_bool, O), "suspended": (_bool, O),
            "user": (_str(64, empty=False), O), "secret": (_str(128, empty=False), O)},
    "switch": {"slot": (_int(0, MAX_ID), R), "stop": (_list(JOB), R), "run": (_list(JOB), R)},
    "suspend": {"job": (JOB, R), "attempt": (_opt(ATTEMPT), O)},
    "resume": {"job": (JOB, R), "attempt": (_opt(ATTEMPT), O)},
    "kill": {"job": (JOB, R), "attempt": (_opt(ATTEMPT), O)},
    "ack": {"job": (JOB, R), "attempt": (ATTEMPT, R), "rank": (RANK, R)},
    "shutdown": {"id": (REQ_ID, O)},
    # client -> daemon
    "submit": {"id": (REQ_ID, R), "request": (_request, R), "runtime": (_num(1e-9, 1e9), R),
               "name": (_str(255), O), "command": (_opt(_str()), O), "burn": (_bool, O)},
    "cancel": {"id": (REQ_ID, R), "job": (JOB, R)},
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
                 "nbytes": (_int(0, 1 << 30), O), "vt": (_num(0, 1e12), O), "notice": (_bool, O)},
    "net_wait": {"vt": (_num(0, 1e12), R), "until": (_opt(_num(0, 1e12)), O),
                 "what": (_str(512), O)},
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

NODE_TYPES = frozenset({"register", "heartbeat", "task_started", "task_done", "switched", "bye"})
CLIENT_TYPES = frozenset({"submit", "cancel", "queue", "nodes", "status", "shutdown", "ping"})
TO_NODE_TYPES = frozenset({"welcome", "run", "suspend", "resume", "switch", "kill", "ack", "heartbeat",
                           "shutdown", "error"})
EVENT_TOPICS = (b"job", b"node", b"snapshot")
NET_TYPES = frozenset({"net_hello", "net_send", "net_links", "net_barrier", "net_wait", "net_bye"})  # what the interconnect accepts
LOCAL_TYPES = frozenset({"comm"})  # daemon types only a LOCAL peer may send (the interconnect)


def _ext_refused(code, data):
    raise ValueError("msgpack ext types are not part of the protocol")


def encode(type_: str, **fields) -> bytes:
    """One frame. Fields are validated too, so a bug here fails at the sender."""
    msg = {"v": VERSION, "type": type_, **fields}
    validate(msg)
    return _packer().pack(msg)


_local = threading.local()


def _packer() -> msgpack.Packer:
    # msgpack.packb builds a Packer, and with it a 256 KiB buffer, per call; a kept one
    # (per thread: a Packer is not thread-safe) packs a message in a third of the time
    # from a cold cache, and the daemon packs one ``run`` per node of every job
    try:
        return _local.packer
    except AttributeError:
        _local.packer = msgpack.Packer(use_bin_type=True)
        return _local.packer


packer = _packer


def encode_rows(type_: str, fields: dict, data: dict, key: str, count: int, parts: list) -> bytes:
    """``encode_unchecked(type_, **fields, data={**data, key: rows})`` where ``parts`` are the
    ``count`` rows already packed one by one: a reply of 20,000 rows is packed a page at a
    time, in slices of the daemon's loop, and joined here without packing it again."""
    pk = _packer()
    head = pk.pack({"v": VERSION, "type": type_, **fields})
    n = len(fields) + 2
    body = pk.pack(data)
    m = len(data)
    arr = b"\xdc" + count.to_bytes(2, "big") if count < 1 << 16 else b"\xdd" + count.to_bytes(4, "big")
    if count < 16:
        arr = bytes((0x90 | count,))
    return b"".join([_map_header(n + 1), head[len(_map_header(n)):], pk.pack("data"), _map_header(m + 1),
                     body[len(_map_header(m)):], pk.pack(key), arr, *parts])


def encode_unchecked(type_: str, **fields) -> bytes:
    """For hot paths whose fields are built by the daemon itself (replies, events)."""
    return _packer().pack({"v": VERSION, "type": type_, **fields})


def _map_header(n: int) -> bytes:
    if n < 16:
        return bytes((0x80 | n,))
    return b"\xde" + n.to_bytes(2, "big") if n < 1 << 16 else b"\xdf" + n.to_bytes(4, "big")


def encode_each(type_: str, common: dict, each: list[dict]) -> list[bytes]:
    """``[encode_unchecked(type_, **common, **e) for e in each]``, with ``common`` packed once.

    A msgpack map is its entry count, then its entries in any order; so each frame is a
    header for the count of all its entries, the packed entries of ``common`` (the same
    bytes for every frame) and the packed entries of ``e``. A 64-node job's 64 ``run``
    messages differ only in rank and node, and packing each in full took the daemon 0.3 ms
    before it could send the first."""
    if any(k in common or k in ("v", "type") for e in each for k in e):
        raise ValueError("a field given both in common and in each")
    pk = _packer()
    n0 = len(common) + 2
    head = pk.pack({"v": VERSION, "type": type_, **common})[len(_map_header(n0)):]
    return [_map_header(n0 + len(e)) + head + pk.pack(e)[len(_map_header(len(e))):] for e in each]


def heartbeat_frame(node: int | None = None) -> bytes:
    """The one encoding of a heartbeat: the daemon's (no node) or node ``node``'s. Both sides
    compare a received frame with it byte for byte and skip decoding an equal one."""
    return encode_unchecked("heartbeat") if node is None else encode_unchecked("heartbeat", node=node)


def decode(frame: bytes, max_size: int = MAX_FRAME, allowed: frozenset | None = None) -> dict:
    """The validated message in ``frame``; raises ProtocolError."""
    if not isinstance(frame, (bytes, bytearray, memoryview)):
        raise ProtocolError("not-msgpack", "frame is not bytes")
    if len(frame) > max_size:
        raise ProtocolError("too-large", f"frame of {len(frame)} bytes exceeds the limit of {max_size}")
    try:
        # msgpack's defaults already refuse binary strings as text (raw=False), non-str map
        # keys (strict_map_key) and extra bytes, and bound every length by the frame's size;
        # the two options left refuse ext types, timestamps included
        msg = msgpack.unpackb(frame, ext_hook=_ext_refused, max_ext_len=0)
    except Exception as e:  # msgpack raises several exception types, all mean the same
        raise ProtocolError("not-msgpack", f"frame is not one msgpack object: {type(e).__name__}") from None
    validate(msg, allowed)
    return msg


class _Fast:
    """A schema compiled for the common case, a valid message: the field names checked as
    sets (in C), the simple fields (``kind``) inline, without calling their validators.
    Anything it does not accept goes through the field-by-field check, which raises the
    precise error. 1280 heartbeats, and a ``run`` and a ``task_started`` per node of every
    job, are decoded per second and per job on a 256-node cluster; a node decodes its
    ``run`` from a cold cache, where each validator called is a few more misses."""

    __slots__ = ("allowed", "required", "fields")

    def __init__(self, schema: dict):
        self.allowed = frozenset(schema) | {"v", "type"}
        self.required = frozenset(k for k, (_, req) in schema.items() if req) | {"v", "type"}
        self.fields = tuple((k, *(getattr(c, "kind", None) or (None, 0, 0)), getattr(c, "optional", False), c)
                            for k, (c, _) in schema.items())


_FAST = {t: _Fast(schema) for t, schema in SCHEMAS.items()}


def validate(msg, allowed: frozenset | None = None) -> dict:
    if type(msg) is dict:
        t = msg.get("type")
        fast = _FAST.get(t) if type(t) is str else None
        v = msg.get("v")
        if fast is not None and type(v) is int and v == VERSION and (allowed is None or t in allowed):
            keys = msg.keys()
            if keys <= fast.allowed and fast.required <= keys:
                for k, kind, a, b, optional, check in fast.fields:
                    if k not in msg:
                        continue
                    x = msg[k]
                    if x is None and optional:
                        continue
                    # exactly what the validator accepts unchanged (it returns float(v) for
                    # an int and a copy of a list: equal values); anything else calls it
                    if kind == INT:
                        if type(x) is int and a <= x <= b:
                            continue
                    elif kind == BOOL:
                        if x is True or x is False:
                            continue
                    elif kind == STR:
                        if type(x) is str and len(x) <= a and (b or x):
                            continue
                    elif kind == FLOAT:
                        if type(x) is float and a <= x <= b:
                            continue
                    elif kind == INTS:
                        if type(x) is list and len(x) <= MAX_LIST and (
                                not x or set(map(type, x)) == _INT_SET and a <= min(x) and max(x) <= b):
                            continue
                    try:
                        msg[k] = check(x)
                    except ValueError:
                        return _validate(msg, allowed)
                return msg
    return _validate(msg, allowed)


def _validate(msg, allowed: frozenset | None = None) -> dict:
    if not isinstance(msg, dict):
        raise ProtocolError("not-a-map", "a message must be a msgpack map")
    req_id = msg.get("id")
    if not (isinstance(req_id, int) and not isinstance(req_id, bool) and 0 <= req_id <= MAX_ID):
        req_id = None
    v = msg.get("v")
    if v != VERSION or isinstance(v, bool):
        raise ProtocolError("version", f"protocol version {v!r} is not supported; this daemon speaks v{VERSION}", req_id)
    t = msg.get("type")
    schema = SCHEMAS.get(t) if isinstance(t, str) else None
    if schema is None or (allowed is not None and t not in allowed):
        raise ProtocolError("unknown-type", f"unknown message type {t!r}", req_id)
    for k in msg:
        if k not in schema and k not in ("v", "type"):
            raise ProtocolError("unknown-field", f"{t}: unknown field {k!r}", req_id)
    for k, (check, required) in schema.items():
        if k not in msg:
            if required:
                raise ProtocolError("missing-field", f"{t}: missing field {k!r}", req_id)
            continue
        try:
            msg[k] = check(msg[k])
        except ValueError as e:
            raise ProtocolError("bad-field", f"{t}: field {k!r} {e}", req_id) from None
    return msg


def error_frame(err: ProtocolError | str, message: str = "", req_id=None) -> bytes:
    if isinstance(err, ProtocolError):
        code, message, req_id = err.code, str(err), err.req_id if req_id is None else req_id
    else:
        code = err
    return encode_unchecked("error", id=req_id, code=code, message=message[:MAX_STR])


__all__ = ["VERSION", "QUEUE_PAGE", "MAX_FRAME", "MAX_WIRE", "MAX_PAYLOAD", "NET_TYPES", "LOCAL_TYPES", "ProtocolError", "SCHEMAS", "NODE_TYPES",
           "CLIENT_TYPES", "TO_NODE_TYPES", "encode", "encode_unchecked", "encode_each", "encode_rows", "packer", "decode", "validate", "heartbeat_frame",
           "error_frame"]
