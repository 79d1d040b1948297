"""The mcemu wire protocol: one msgpack map per frame (a ZeroMQ frame; on the interconnect's
local socket a length-prefixed one, emulator.live.netlocal), versioned and validated. Its
table (limits, field validators, every type's fields) is emulator.live.schema; this module is
the codec, and the one to import.

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
  node -> daemon:  register, heartbeat, task_started, task_done, switched, bye, output
  daemon -> node:  welcome, run, suspend, resume, switch, kill, ack, heartbeat, shutdown, error, output_at

Output of a node on another host (emulator.live.outsink, nodes.outfwd): ``welcome`` carries
``output_id``, the id the daemon keeps in its ``output/``; a node whose output directory holds
another id (or none) sends each command task's output as ``output`` {node, job, attempt, rank,
offset, data} (at most MAX_CHUNK bytes of its file from ``offset``), all of it before the
task's ``task_done``; the daemon appends it to its own ``output/job<ID>.<RANK>.out``, skips
what it already has (a resend) and answers a gap with ``output_at`` {job, attempt, rank,
offset}: the node sends again from there.

Gang scheduling: ``run`` carries ``gang`` (the agent ends a synthetic task after ``runtime_s``
seconds of dispatched time) and ``suspended`` (create it stopped); ``switch`` {slot, stop,
run} asks a node to SIGSTOP the tasks of the jobs in ``stop``, then SIGCONT those in ``run``;
the node answers ``switched`` with CLOCK_MONOTONIC stamps (first signal, after its last
SIGSTOP, after its last SIGCONT) and the jobs it now has running and stopped.
  client -> daemon (each with a request ``id`` echoed in the reply):
                   submit, cancel, queue, nodes, status, shutdown, ping, tail
                   (``queue`` pages: ``after`` a job id, at most ``limit`` rows; its reply's
                   ``next`` is the ``after`` of the next page, None after the last; without
                   ``limit`` the reply holds every row, built by the daemon over several turns;
                   ``tail`` {job, at}: the job's output files from offset ``at[r]`` of each
                   rank r, ``mcemu run`` of a host without the daemon's ``output/``)
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

import threading

import msgpack

from emulator.live.schema import (  # noqa: F401  (the protocol's names: importers use this module)
    ATTEMPT, CLIENT_TYPES, EVENT_TOPICS, JOB, LOCAL_TYPES, MAX_CHUNK, MAX_FRAME, MAX_ID, MAX_LIST, MAX_NODE,
    MAX_OFFSET, MAX_PAYLOAD,
    MAX_REPLY, MAX_STR, MAX_WIRE, NET_TYPES, NODE, NODE_TYPES, PID, ProtocolError, QUEUE_PAGE, RANK, REQ_ID,
    SCHEMAS, TO_NODE_TYPES, VERSION, _INT_SET)
from emulator.live.schema import BOOL, FLOAT, INT, INTS, STR  # the validators' kinds, checked inline by _Fast


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


__all__ = ["VERSION", "QUEUE_PAGE", "MAX_FRAME", "MAX_WIRE", "MAX_PAYLOAD", "MAX_CHUNK", "MAX_OFFSET", "NET_TYPES",
           "LOCAL_TYPES", "ProtocolError", "SCHEMAS", "NODE_TYPES", "CLIENT_TYPES", "TO_NODE_TYPES", "encode",
           "encode_unchecked", "encode_each", "encode_rows", "packer", "decode", "validate", "heartbeat_frame",
           "error_frame"]
