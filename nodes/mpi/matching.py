"""Message matching: the envelope, the per-communicator queues, and progress.

One ``Engine`` a process (over the world transport) sends and receives every message of
every communicator. A message is one transport payload: a 9-byte envelope (nodes.mpi.envelope:
context id, tag, kind) and the user's bytes; ``nbytes`` given
to the transport is the user's byte count (MPI.Status.Get_count's bytes).

A communicator owns two contexts, ``ctx`` for point-to-point and ``ctx + 1`` for its
collectives, so user tags (ANY_TAG included) never match a collective's messages. Each
context has a ``Matcher``: the receives posted and not yet matched (in posting order) and
the messages arrived and not yet received (the unexpected queue, in arrival order). An
arriving message goes to the first posted receive it matches, else to the queue; a new
receive takes the first queued message it matches, else is posted. The transport delivers
the messages of one sender in the order sent, so MPI's non-overtaking rule holds (MPI 3.1
section 3.5): of two messages from one sender that a receive matches, it gets the first.
A message for a context not yet made here (a peer already uses a new communicator) is
kept until the communicator is.
"""
from __future__ import annotations

import atexit
from collections import deque

from nodes.mpi.constants import ANY_SOURCE, ANY_TAG
from nodes.mpi.envelope import ENVELOPE, HEAD, MORE
from nodes.mpi.errors import ERR_COUNT, MAX_MESSAGE, PACKET, MPIException, TransportError, from_transport


class Awaited(str):
    """A blocking wait's description (the text a deadlock report shows) that also says which
    envelopes can end the wait: ``match``, ((context, world source or None, tag or None), ...),
    None for any. In virtual time the interconnect hands such a waiting rank the messages that
    match none of them without waking it (emulator.live.vtime): it would only queue them and
    wait again at the same clock."""

    match: tuple | None = None
    need = 1  # messages of ``match`` that can end it: a wait for several receives (awaiting_all)

    def __new__(cls, text: str, match: tuple | None, need: int = 1):
        self = super().__new__(cls, text)
        self.match, self.need = match, need
        return self


MAX_MATCH = 64  # envelopes a wait names at most (the wire's limit, emulator.live.schema.MAX_MATCH): a
# longer Waitany waits as a wait that names none


def awaiting_any(whats: list) -> str:
    """The wait for any of ``whats`` (Awaited each, or text): ends at any of their envelopes."""
    return _joined(whats, " or ", 1)


def awaiting_all(whats: list) -> str:
    """The wait for every one of ``whats`` (pending receives, Awaited each): none can end before
    as many messages of their envelopes have come as there are receives, each taking one. In
    virtual time the interconnect wakes the rank then, not at each of them: woken earlier it
    would only wait again at the same clock (the MPI call's CPU time is not the program's), so
    the times are the same and the round trips fewer. Woken too early is harmless (a message
    another posted receive took): the rank waits again for what is left."""
    return whats[0] if len(whats) == 1 else _joined(whats, " and ", len(whats))


def _joined(whats: list, sep: str, need: int) -> str:
    """The waits ``whats`` as one, ended by ``need`` messages of their envelopes; plain text
    (any message ends it) when one of them names none or they name more than MAX_MATCH."""
    text = sep.join(whats)
    match = []
    for w in whats:
        m = getattr(w, "match", None)
        if m is None:
            return text
        match.extend(m)
    return Awaited(text, tuple(match), need) if len(match) <= MAX_MATCH else text


class Matcher:
    """One context's queues; ``group``: its communicator's world ranks (index: local rank)."""

    __slots__ = ("ctx", "group", "local", "posted", "unexpected", "name", "said")

    def __init__(self, ctx: int, group: tuple, name: str):
        self.ctx, self.group, self.name = ctx, group, name
        identity = group == tuple(range(len(group)))
        self.local = None if identity else {w: r for r, w in enumerate(group)}
        self.posted: list = []
        self.unexpected: deque = deque()
        self.said: dict = {}  # (op, source, tag) -> describe's text: every blocking wait sends one

    def deliver(self, src_world: int, tag: int, kind: int, payload: bytes) -> None:
        src = src_world if self.local is None else self.local[src_world]
        posted = self.posted
        for i in range(len(posted)):
            req = posted[i]
            if (req._source == src or req._source == ANY_SOURCE) and (req._tag == tag or req._tag == ANY_TAG):
                del posted[i]
                req._complete(src, tag, kind, payload)
                return
        self.unexpected.append((src, tag, kind, payload))

    def find(self, source: int, tag: int, remove: bool):
        q = self.unexpected
        for i in range(len(q)):
            m = q[i]
            if (m[0] == source or source == ANY_SOURCE) and (m[1] == tag or tag == ANY_TAG):
                if remove:
                    del q[i]
                return m
        return None

    def describe(self, op: str, source: int, tag: int) -> str:
        key = (op, source, tag)
        text = self.said.get(key)
        if text is None:
            if len(self.said) >= 1024:  # a program of many tags: kept bounded
                self.said.clear()
            text = self.said[key] = self._describe(op, source, tag)
        return text

    def _describe(self, op: str, source: int, tag: int) -> Awaited:
        src = "ANY_SOURCE" if source == ANY_SOURCE else f"rank {self.group[source]}"
        what = f"{op}(source={src}, tag={'ANY_TAG' if tag == ANY_TAG else tag})"
        env = (self.ctx, None if source == ANY_SOURCE else self.group[source], None if tag == ANY_TAG else tag)
        return Awaited(what if self.name == "COMM_WORLD" else f"{what} on {self.name}", (env,))


class Engine:
    """The process's sends, matching and progress over one transport."""

    def __init__(self, transport):
        self.t = transport
        self.rank, self.size = transport.rank, transport.size
        self.matchers: dict[int, Matcher] = {}
        self.orphans: dict[int, list] = {}
        self.packets: dict[int, list] = {}  # source -> the packets of its message so far (dispatch)
        self.next_ctx = 4      # 0/1: COMM_WORLD, 2/3: COMM_SELF
        self.finalized = False

    def register(self, ctx: int, group: tuple, name: str) -> Matcher:
        m = self.matchers[ctx] = Matcher(ctx, group, name)
        for msg in self.orphans.pop(ctx, ()):
            m.deliver(*msg)
        return m

    def unregister(self, ctx: int) -> None:
        self.matchers.pop(ctx, None)

    def send(self, ctx: int, dest: int, tag: int, kind: int, data, nbytes: int) -> None:
        if nbytes > MAX_MESSAGE:
            raise MPIException(ERR_COUNT, f"a message of {nbytes} bytes is above the limit of {MAX_MESSAGE} "
                                          f"(nodes.mpi.errors.MAX_MESSAGE); nothing was sent")
        if dest == self.rank:  # to itself: no network, as an MPI library short-cuts it
            self.dispatch(dest, b"".join((ENVELOPE.pack(ctx, tag, kind), data)))
            return
        try:
            if nbytes <= PACKET:
                self.t.send(dest, b"".join((ENVELOPE.pack(ctx, tag, kind), data)), nbytes)
            else:
                self._send_packets(ctx, dest, tag, kind, data)
        except TransportError as e:
            raise from_transport(e) from None

    def _send_packets(self, ctx: int, dest: int, tag: int, kind: int, data) -> None:
        """A message above PACKET as packets sent back to back: a sender's messages to one
        receiver arrive in order, so nothing comes between them and the receiver joins them
        (``dispatch``) before any receive can match the message."""
        view = memoryview(data).cast("B")
        more, last = ENVELOPE.pack(ctx, tag, kind | MORE), ENVELOPE.pack(ctx, tag, kind)
        n = len(view)
        for at in range(0, n, PACKET):
            part = view[at:at + PACKET]
            self.t.send(dest, b"".join((more if at + PACKET < n else last, part)), len(part))

    def dispatch(self, src: int, payload: bytes) -> None:
        ctx, tag, kind = ENVELOPE.unpack_from(payload)
        if kind & MORE or (self.packets and src in self.packets):
            payload = self._joined(src, payload, kind)
            if payload is None:
                return
        m = self.matchers.get(ctx)
        if m is None:
            self.orphans.setdefault(ctx, []).append((src, tag, kind, payload))
        else:
            m.deliver(src, tag, kind, payload)

    def _joined(self, src: int, payload: bytes, kind: int) -> bytes | None:
        """The whole message once its last packet is in (its envelope has no MORE), else None."""
        body = memoryview(payload)[HEAD:]
        if kind & MORE:
            self.packets.setdefault(src, []).append(body)
            return None
        return b"".join((payload[:HEAD], *self.packets.pop(src), body))

    def progress(self, block: bool, what: str = "") -> None:
        """Hand what the transport delivered to the matchers (block: wait for one message)."""
        try:
            msgs = self.t.wait(block, what)
        except TransportError as e:
            raise from_transport(e) from None
        for src, payload in msgs:
            self.dispatch(src, payload)

    def post(self, m: Matcher, req) -> None:
        """Start a receive: the first queued message it matches, else wait in ``posted``."""
        msg = m.find(req._source, req._tag, True) if m.unexpected else None
        if msg is None:
            m.posted.append(req)
        else:
            req._complete(*msg)

    def complete(self, req) -> None:
        while not req._done:
            self.progress(True, req._what())

    def probe(self, m: Matcher, source: int, tag: int, block: bool):
        """The first queued message that a receive (source, tag) would match, or None."""
        msg = m.find(source, tag, False)
        if msg is None:
            self.progress(False)
            msg = m.find(source, tag, False)
        while msg is None and block:
            self.progress(True, m.describe("probe", source, tag))
            msg = m.find(source, tag, False)
        return msg

    def close(self) -> None:
        self.t.close()


_engine: Engine | None = None


def engine() -> Engine:
    """The process's engine, over nodes.mpi.transport.world_transport(), made at first use."""
    global _engine
    if _engine is None:
        from nodes.mpi.transport import world_transport
        _engine = Engine(world_transport())
        atexit.register(_engine.close)
    return _engine
