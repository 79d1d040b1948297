"""The collective algorithms, built from point-to-point messages on the communicator's
collective context (``ctx + 1``: no user receive, ANY_TAG included, can match them), so
that their traffic is timed and contends in the network model like any other.

They move bytes (a pickle or a buffer's elements); nodes.mpi.intracomm wraps them for the
object and buffer APIs. Every rank of a communicator calls its collectives in the same
order, a directed pair of ranks carries at most one message of one call per tag, and
messages between a pair are not overtaken: so a call's receives, all from named sources,
match that call's messages. ``n`` is the communicator's size, ``r`` this rank.

- barrier: dissemination (Hensgen, Finkel and Manber 1988): ceil(log2 n) rounds; in round
  k, send to r + 2^k and receive from r - 2^k (mod n).
- bcast: binomial tree rooted at ``root`` (MPICH's): ceil(log2 n) steps, n - 1 messages;
  the bytes are forwarded as received (pickled once, at the root).
- reduce: binomial tree towards rank 0 on absolute ranks, each rank combining its block of
  ranks with the next block (left operand = lower ranks: the result is in rank order and
  the same whatever the root), then one message from rank 0 to ``root`` if it is not 0.
- allreduce: recursive doubling with the non-power-of-two fix (Thakur, Rabenseifner and
  Gropp 2005): with p2 the largest power of two <= n and rem = n - p2, the first 2 rem
  ranks pair up (even into odd), the p2 remaining exchange over log2 p2 rounds, each
  combining lower block with upper block (every rank ends with the same bits), and the odd
  ranks hand the result back to their even partner.
- gather / scatter and their vector forms: linear (the root receives from, or sends to,
  every other rank in rank order: n - 1 messages through the root's channels).
- allgather (and Allgatherv): ring: n - 1 steps; in step s send block r - s to r + 1 and
  receive block r - s - 1 from r - 1.
- alltoall (and Alltoallv): MPICH's choice by block size (``MPIR_CVAR_ALLTOALL_MEDIUM_MSG_SIZE``,
  32 KiB). Up to it, *scattered*: send every block at once (to r + 1, r + 2, ...), then receive
  from r - 1, r - 2, ... (mod n): the n - 1 worms contend in the network together, and a rank
  wakes for a batch of arrivals instead of once a message. Above it, *pairwise exchange*: n - 1
  steps; in step s send to r + s and receive from r - s (mod n), one block in flight each way.
  MPICH's third form, Bruck's for blocks under 256 bytes, is left out: it combines blocks into
  log2 n messages, and we keep one message for each pair of ranks, the all-to-all pattern whose
  contention the dissertation studies. Ranks may choose differently (object blocks differ in
  size): both forms send the same messages and receive from named sources, so they mix.
- scan / exscan: linear chain (rank r receives the prefix from r - 1, sends to r + 1).
"""
from __future__ import annotations

from nodes.mpi.envelope import BUF, HEAD
from nodes.mpi.request import Request, wait_all

ALLTOALL_SCATTERED_MAX = 32768  # bytes a block: MPICH's medium-message limit
T_BARRIER, T_BCAST, T_REDUCE, T_ROOT, T_ALLREDUCE, T_GATHER, T_SCATTER, T_ALLGATHER, T_ALLTOALL, T_SCAN = range(1, 11)


def send(comm, dest: int, tag: int, kind: int, data) -> None:
    """``data``: bytes, a memoryview of bytes or a 1-D uint8 array (len = bytes)."""
    comm._eng.send(comm._ctx + 1, comm._group[dest], tag, kind, data, len(data))


def recv(comm, source: int, tag: int) -> bytes:
    """The payload (envelope included: the body is from HEAD) of the next message."""
    req = Request._recv(comm._eng, comm._cm, source, tag, None)
    if not req._done:
        comm._eng.complete(req)
    return req._payload


def body(payload: bytes) -> memoryview:
    return memoryview(payload)[HEAD:]


def barrier(comm) -> None:
    n, r, k = comm._size, comm._rank, 1
    while k < n:
        send(comm, (r + k) % n, T_BARRIER, BUF, b"")
        recv(comm, (r - k) % n, T_BARRIER)
        k <<= 1


def bcast(comm, root: int, kind: int, data):
    """The root's ``data`` (bytes-like), at every rank."""
    n, r = comm._size, comm._rank
    vr, mask = (r - root) % n, 1
    while mask < n:
        if vr & mask:
            data = body(recv(comm, (r - mask) % n, T_BCAST))
            break
        mask <<= 1
    mask >>= 1
    while mask > 0:
        if vr + mask < n:
            send(comm, (r + mask) % n, T_BCAST, kind, data)
        mask >>= 1
    return data


def reduce(comm, root: int, value, combine, enc, dec, kind: int):
    """combine(x_0, ..., x_{n-1}) in rank order at ``root``; None elsewhere. ``enc`` makes a
    value bytes-like, ``dec`` a value from a received payload."""
    n, r, mask, acc = comm._size, comm._rank, 1, value
    while mask < n:
        if r & mask:
            send(comm, r - mask, T_REDUCE, kind, enc(acc))
            break
        if r + mask < n:
            acc = combine(acc, dec(recv(comm, r + mask, T_REDUCE)))
        mask <<= 1
    if root != 0:
        if r == 0:
            send(comm, root, T_ROOT, kind, enc(acc))
        elif r == root:
            acc = dec(recv(comm, 0, T_ROOT))
    return acc if r == root else None


def _peer(newrank: int, rem: int) -> int:
    return newrank * 2 + 1 if newrank < rem else newrank + rem


def allreduce(comm, value, combine, enc, dec, kind: int):
    n, r, acc = comm._size, comm._rank, value
    p2 = 1 << (n.bit_length() - 1)
    rem = n - p2
    newrank = r - rem
    if r < 2 * rem:
        if r % 2 == 0:
            send(comm, r + 1, T_ALLREDUCE, kind, enc(acc))
            newrank = -1
        else:
            acc = combine(dec(recv(comm, r - 1, T_ALLREDUCE)), acc)
            newrank = r // 2
    mask = 1
    while newrank >= 0 and mask < p2:
        partner_new = newrank ^ mask
        partner = _peer(partner_new, rem)
        send(comm, partner, T_ALLREDUCE, kind, enc(acc))
        other = dec(recv(comm, partner, T_ALLREDUCE))
        acc = combine(other, acc) if partner_new < newrank else combine(acc, other)
        mask <<= 1
    if r < 2 * rem:
        if r % 2:
            send(comm, r - 1, T_ALLREDUCE, kind, enc(acc))
        else:
            acc = dec(recv(comm, r + 1, T_ALLREDUCE))
    return acc


def gather(comm, root: int, kind: int, data):
    """At the root, every rank's bytes (its own as given) in rank order; None elsewhere."""
    n, r = comm._size, comm._rank
    if r != root:
        send(comm, root, T_GATHER, kind, data)
        return None
    out = [None] * n
    out[r] = data
    for i in range(n):
        if i != r:
            out[i] = body(recv(comm, i, T_GATHER))
    return out


def scatter(comm, root: int, kind: int, blocks):
    """``blocks[i]`` (at the root) to rank i; returns this rank's."""
    r = comm._rank
    if r != root:
        return body(recv(comm, root, T_SCATTER))
    for i, block in enumerate(blocks):
        if i != r:
            send(comm, i, T_SCATTER, kind, block)
    return blocks[r]


def allgather(comm, kind: int, data) -> list:
    n, r = comm._size, comm._rank
    out = [None] * n
    out[r] = data
    right, left = (r + 1) % n, (r - 1) % n
    for s in range(n - 1):
        send(comm, right, T_ALLGATHER, kind, out[(r - s) % n])
        out[(r - s - 1) % n] = body(recv(comm, left, T_ALLGATHER))
    return out


def alltoall(comm, kind: int, blocks) -> list:
    n, r = comm._size, comm._rank
    out = [None] * n
    out[r] = blocks[r]
    if max(map(len, blocks)) <= ALLTOALL_SCATTERED_MAX:
        for s in range(1, n):
            send(comm, (r + s) % n, T_ALLTOALL, kind, blocks[(r + s) % n])
        reqs = [Request._recv(comm._eng, comm._cm, (r - s) % n, T_ALLTOALL, None) for s in range(1, n)]
        wait_all(reqs)  # one wake-up for the n - 1 blocks, not one per block that came late
        for s, req in enumerate(reqs, 1):
            if not req._done:
                comm._eng.complete(req)
            out[(r - s) % n] = body(req._payload)
        return out
    for s in range(1, n):
        dst, src = (r + s) % n, (r - s) % n
        send(comm, dst, T_ALLTOALL, kind, blocks[dst])
        out[src] = body(recv(comm, src, T_ALLTOALL))
    return out


def scan(comm, value, combine, enc, dec, kind: int, exclusive: bool):
    """Inclusive (or exclusive: None at rank 0) prefix reduction in rank order."""
    n, r = comm._size, comm._rank
    prev = dec(recv(comm, r - 1, T_SCAN)) if r > 0 else None
    incl = value if prev is None else combine(prev, value)
    if r < n - 1:
        send(comm, r + 1, T_SCAN, kind, enc(incl))
    return prev if exclusive else incl
