"""The protocol's decoding and validation, fuzzed (issue 19): whatever bytes or msgpack
structure arrives, ``decode`` returns a message of an allowed type that passes its schema, or
raises ProtocolError; never another exception (the daemon and the nodes catch ProtocolError
and answer it; anything else would end their loop)."""
from __future__ import annotations

import msgpack
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulator.live import protocol as P

FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20), st.binary(max_size=20))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                      max_leaves=12)
TYPES = sorted(P.NODE_TYPES | P.CLIENT_TYPES | P.TO_NODE_TYPES) + ["", "nosuch"]
FIELDS = sorted({k for schema in P.SCHEMAS.values() for k in schema})


def check(frame: bytes, allowed=None) -> None:
    try:
        msg = P.decode(frame, allowed=allowed)
    except P.ProtocolError:
        return
    assert isinstance(msg, dict) and msg["v"] == P.VERSION and msg["type"] in P.SCHEMAS
    if allowed is not None:
        assert msg["type"] in allowed


@FUZZ
@given(st.binary(max_size=600))
def test_any_bytes(frame):
    check(frame)


@FUZZ
@given(values)
def test_any_msgpack_value(v):
    check(msgpack.packb(v, use_bin_type=True))


@FUZZ
@given(st.sampled_from(TYPES), st.dictionaries(st.sampled_from(FIELDS), values, max_size=8),
       st.sampled_from([P.VERSION, 0, 2, "1", None, True]),
       st.sampled_from([None, P.NODE_TYPES, P.CLIENT_TYPES]))
def test_messages_that_look_right(type_, fields, version, allowed):
    """Well-formed frames with the real field names and arbitrary values: the schema, not
    msgpack, has to refuse them."""
    check(msgpack.packb({"v": version, "type": type_, **fields}, use_bin_type=True), allowed)


@FUZZ
@given(st.sampled_from(sorted(P.NODE_TYPES | P.CLIENT_TYPES)), st.data())
def test_valid_messages_survive_a_flipped_byte(type_, data):
    """A frame the protocol itself encoded, with one byte changed or the frame cut short."""
    samples = {
        "submit": dict(id=1, request={"cube": 2}, runtime=3.0),
        "heartbeat": dict(node=3),
        "register": None, "task_started": None, "task_done": None, "switched": None, "bye": None,
        "cancel": dict(id=2, job=5), "queue": dict(id=3), "nodes": dict(id=4), "status": dict(id=5),
        "shutdown": dict(id=6), "ping": dict(id=7),
    }
    fields = samples.get(type_)
    if fields is None:
        return
    frame = bytearray(P.encode(type_, **fields))
    assert P.decode(bytes(frame))["type"] == type_
    i = data.draw(st.integers(0, len(frame) - 1))
    if data.draw(st.booleans()):
        frame[i] = data.draw(st.integers(0, 255))
        check(bytes(frame))
    else:
        check(bytes(frame[:i]))
