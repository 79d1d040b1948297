"""The task API: what a ``--command`` program on a ``--network wormhole`` cluster imports to
talk to the other tasks of its job, through the interconnect (emulator.live.interconnect),
in the style of mpi4py where that fits::

    from nodes.comm import Comm

    comm = Comm()                      # this task's job, attempt and rank from MCEMU_*
    comm.send((comm.rank + 1) % comm.size, b"hello")
    source, data = comm.recv(timeout=10)

``Comm()`` reads MCEMU_NET (the interconnect's endpoint, set by the cluster), MCEMU_JOB_ID,
MCEMU_ATTEMPT, MCEMU_RANK and MCEMU_NODES (set by the node agent), says ``net_hello`` with
them (the job's node list makes the job known to the interconnect: ordered membership,
emulator.live.netjobs) and waits for the welcome (``sync=True``: until every rank of the job
has said hello, a start barrier). The connection is the interconnect's unix socket
(emulator.live.netlocal: frames on a stream, read in this thread, no ZeroMQ I/O thread to wake
for each of them). Every wait is the live kernel's one wait until a deadline
(emulator.live.kernel, precise), on its clock. Messages from one sender arrive in the order it sent them when they take the same
route (the model's channels are FIFO); a payload is at most protocol.MAX_PAYLOAD bytes.

``send`` returns a message id as soon as the frame is queued; the interconnect refuses a bad
send (a rank outside the job, a destination on a down node) with an error that the next call
reading the socket (``recv``, ``wait``) raises as :class:`CommError`, naming the message.
``wait(id)`` blocks until that message is delivered and returns its delay in network
microseconds; ``send(..., wait=True)`` does both.

A task of a node joined from another host (``mcemu node --connect tcp://...``) reaches the
interconnect's tcp port (emulator.live.nettcp): its agent sets MCEMU_NET to it and
MCEMU_NET_KEY to the node's credential file (nodes.taskenv.remote_env), with which ``Comm`` is a CURVE
client over ZeroMQ (nodes.commzmq); a key the interconnect refuses is CommError ``refused``. Its hello has no pid and no
shared clock (they are its host's), and where its welcome carries the interconnect's clock
(``now``) the due times are moved onto this host's (``offset``).
"""
from __future__ import annotations

import os
import time
from collections import deque

from msgpack import unpackb as _unpackb

from emulator.live import netlocal
from emulator.live import protocol as P
from emulator.live.kernel import Kernel
from nodes.taskenv import prompt_wakeups


def _decode(frame: bytes) -> dict | None:
    """A frame of the interconnect (trusted: this cluster's own process, which builds its
    frames itself), unpacked without the schema check that the interconnect applies to what
    tasks send it (two thirds of a decode); None for one that is not a message."""
    try:
        m = _unpackb(frame, ext_hook=_no_ext, max_ext_len=0)
    except Exception:  # msgpack raises several types, all mean "not a frame"
        return None
    return m if type(m) is dict and type(m.get("type")) is str else None


def _no_ext(code, data):
    raise ValueError("msgpack ext types are not part of the protocol")


class CommError(RuntimeError):
    """The interconnect refused something (``code``: bad-rank, node-down, unknown-job, ...)."""

    def __init__(self, code: str, message: str, msg_id=None):
        super().__init__(f"{code}: {message}" + (f" (message {msg_id})" if msg_id is not None else ""))
        self.code, self.message, self.msg_id = code, message, msg_id


def _env(name: str) -> str:
    v = os.environ.get(name)
    if not v:
        raise CommError("no-network", f"{name} is not set: run this as a task of a job on a cluster started "
                                      f"with `mcemu up --network wormhole`")
    return v


# Flow control on the task's side (dilated time): a send waits while this task has WINDOW
# messages or WINDOW_BYTES in the network not yet delivered (their notices not back), well
# inside what the interconnect holds for a rank (emulator.live.netjobs.FLOW_*). Like a
# NIC's send queue: a program that outruns the network is slowed to its pace, not buffered
# without bound. In virtual time a send is a frame at the rank's clock and the interconnect's
# bound applies alone (notices come only when asked for there).
WINDOW, WINDOW_BYTES = 64, 8 << 20


class Comm:
    """This task's end of the interconnect (module docstring). ``clock``: the kernel's clock
    (default the wall clock; all times are its seconds)."""

    def __init__(self, endpoint: str | None = None, timeout: float = 30.0, sync: bool = False,
                 group: str | None = None, clock=None, pid: int | None = None, group_jobs: int | None = None,
                 shared_clock: bool = False):
        self.endpoint = endpoint or _env("MCEMU_NET")
        self.job = int(_env("MCEMU_JOB_ID"))
        self.attempt = int(_env("MCEMU_ATTEMPT"))
        self.rank = int(_env("MCEMU_RANK"))
        self.nodes = [int(n) for n in _env("MCEMU_NODES").split(",")]
        self.size = len(self.nodes)
        # MCEMU_PROMPT_WAKEUPS=0: the kernel's defaults (scripts/bench_net_live.py compares)
        self.wakeups = prompt_wakeups() if os.environ.get("MCEMU_PROMPT_WAKEUPS", "1") != "0" else {}
        self.remote = self.endpoint.startswith("tcp://")
        self.link = self._connect(timeout)
        # a message is held to its due time, to the tens of us; slept, not spun (prompt_wakeups)
        self.kernel = Kernel(clock, precise=True, spin=0.0)
        self.now = self.kernel.now
        self._waits = self.link.waits if self.remote else (self.link.fd,)
        self._ids = 0
        # frames to the interconnect not sent yet (virtual time: they go as one message when
        # this task next reads or closes, _flush) and frames read but not handed over yet (the
        # interconnect sends what one turn made for this task as one message: _read)
        self._outq: list = []
        self._parts: deque = deque()
        self.inbox: deque = deque()  # (source, data, due)
        self.delivered: dict[int, tuple[float, float]] = {}  # id -> (delay us, due)
        self.barriers: set[int] = set()  # ids of completed barriers not yet seen by barrier_done
        # wall s between a message's due time and its hand-over to the program (recv, or take):
        # the interconnect sends it a little ahead with its due time, and it is held until then
        self.lateness: list[float] = []
        # True: frames are held until the next read or flush() (virtual time only: the window
        # of dilated time counts on each send going out). Set by the caller for the span of one
        # MPI call (its sends and the wait after them leave as one message): held across the
        # program's own computing, a send would wait for its next call, and the interconnect,
        # which cannot use a published clock that counts a frame not yet arrived, with it.
        self.hold = False
        self.link.send(P.encode("net_hello", job=self.job, attempt=self.attempt, rank=self.rank, nodes=self.nodes,
                                sync=sync, **self._hello(group, pid, group_jobs, shared_clock)))
        try:
            m = self._welcomed(self.now() + timeout, timeout)
        except BaseException:
            self.close(linger=0)  # a refused task's context must not wait for ever when collected
            raise
        self.welcome = m  # time ("dilated" / "virtual"), vt0, flit_bytes, cpu_scale, topology
        self.flow = m.get("time") != "virtual"
        # the interconnect's clock minus this one's: due times are the interconnect's monotonic
        # clock, another host's for a remote task. Taken as the welcome is read, so a due time
        # here is late by the welcome's transit (tens of us), never early; 0 on the same host
        self.offset = m["now"] - self.now() if self.flow and m.get("now") is not None else 0.0
        self.unacked: dict[int, int] = {}  # id -> bytes of this task's messages in the network (dilated)
        self.unacked_bytes = 0
        self.dilation = m["dilation"]  # wall us per network us
        self.flit_time_us, self.length_flits = m["flit_time_us"], m["length_flits"]

    def _hello(self, group, pid, group_jobs, shared_clock) -> dict:
        """``net_hello``'s optional fields (``Comm``'s arguments)."""
        hello = {"group": group} if group else {}
        if os.environ.get("MCEMU_TASK_SECRET"):  # this task's rank claim, from its run (issue 30)
            hello["secret"] = os.environ["MCEMU_TASK_SECRET"]
        if pid is not None and not self.remote:  # virtual time: the interconnect reads this process's CPU
            hello["pid"] = pid                   # time (emulator.live.vtime), on its own host only
        if group_jobs is not None:
            hello["group_jobs"] = group_jobs
        if shared_clock and not self.remote:  # it publishes its clock in $MCEMU_HOME/clocks (emulator.live.vclock)
            hello["clock"] = True
        return hello

    def _connect(self, timeout: float):
        """The link: the local socket (emulator.live.netlocal: a unix socket read in this thread,
        no ZeroMQ), retried while the interconnect is (re)starting, as ZeroMQ's connect waited;
        a remote task's: ZeroMQ over tcp (nodes.commzmq)."""
        if self.remote:
            from nodes.commzmq import ZmqLink  # lazy: the local path never needs it

            return ZmqLink(self.endpoint)
        link = netlocal.Link.connect(netlocal.endpoint_path(self.endpoint), time.monotonic() + timeout)
        if link is None:
            raise CommError("timeout", f"no welcome from the interconnect at {self.endpoint} in {timeout} s "
                                       f"(nothing listens there)")
        return link

    def _welcomed(self, deadline: float, timeout: float) -> dict:
        while True:
            m = self._read(deadline)
            if m is None:
                raise CommError("timeout", f"no welcome from the interconnect at {self.endpoint} in {timeout} s")
            if m["type"] == "net_welcome":
                return m
            if m["type"] == "error":
                raise CommError(m["code"], m["message"])

    # mpi4py's names
    def Get_rank(self) -> int:
        return self.rank

    def Get_size(self) -> int:
        return self.size

    def send(self, dest: int, data: bytes, wait: bool = False, measured: bool = True, **extra) -> int:
        """Send ``data`` to rank ``dest``; returns the message id (``wait``: after delivery).
        ``measured=False``: left out of the job's statistics (a warm-up). ``extra``: net_send's
        other fields (nodes.mpi.live): vt, nbytes, notice in virtual time; ``lazy`` in dilated
        time, for a send nobody will ``wait`` for: its notice, which the window still counts,
        may come later, with another frame (emulator.live.ic_dilated)."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"data must be bytes, got {type(data).__name__}")
        data = bytes(data)
        if self.flow:
            while self.unacked and (len(self.unacked) >= WINDOW or self.unacked_bytes + len(data) > WINDOW_BYTES):
                self._pump(None)
            self.unacked[self._ids + 1] = len(data)
            self.unacked_bytes += len(data)
        self._ids += 1
        fields = {"id": self._ids, "to": int(dest), "data": data, **extra}
        if not measured:
            fields["measured"] = False
        # checked here only where a caller can get it wrong (the other fields are this module's
        # and nodes.mpi's own; the interconnect checks every frame anyway): validating each
        # send was a third of its encoding
        bad = fields["to"] < 0 or len(data) > P.MAX_PAYLOAD
        self._out((P.encode if bad else P.encode_unchecked)("net_send", **fields))
        if wait:
            self.wait(self._ids)
        return self._ids

    def ibarrier(self, group: str | None = None, vt: float | None = None) -> int:
        """Enter the job's next barrier without waiting; done when ``barrier_done(id)``.
        ``group`` (the one given to ``Comm``): done when every rank of every running job of
        that group has entered one (jobs that wait for each other across the cluster). ``vt``:
        the rank's clock in virtual time (the barrier is done at the latest entry)."""
        self._ids += 1
        fields = {"group": group} if group else {}
        if vt is not None:
            fields["vt"] = vt
        self._out(P.encode("net_barrier", id=self._ids, **fields))
        return self._ids

    # ------------------------------------------------------------------ virtual time

    def vwait(self, vt: float, until: float | None, what: str = "", match=None, need: int = 1) -> tuple[list, float]:
        """Virtual time (emulator.live.ic_virtual): this rank, at clock ``vt``, waits until
        ``until`` (None: its next event; ``match``: the envelopes that can end it, ``need``: how
        many of their messages, see emulator.live.vtime). Returns the frames of the answer
        (net_msg, net_delivered, ok), in order, and the answer's time; an ``error`` raises
        CommError."""
        extra = {"match": match} if match else {}
        if match and need > 1:
            extra["need"] = need
        self._out(P.encode_unchecked("net_wait", vt=vt, until=until, what=what[:500], **extra))
        got = []
        while True:
            m = self._read(None)
            t = m["type"]
            if t == "net_go":
                return got, m["vt"]
            if t == "error":
                raise CommError(m["code"], m["message"], m.get("id"))
            got.append(m)

    def bye(self, vt: float) -> None:
        """Virtual time: this rank has ended at clock ``vt`` (it bounds nobody any more)."""
        self._out(P.encode_unchecked("net_bye", vt=vt))
        self._flush()

    def barrier_done(self, bid: int) -> bool:
        if bid in self.barriers:
            self.barriers.discard(bid)
            return True
        return False

    def barrier(self, timeout: float | None = None) -> None:
        """Block until every rank of the job has called it (control traffic: not timed by
        the network model)."""
        deadline = None if timeout is None else self.now() + timeout
        bid = self.ibarrier()
        while not self.barrier_done(bid):
            if self._pump(deadline) is None:
                raise TimeoutError(f"barrier not complete within {timeout} s")

    def recv(self, timeout: float | None = None) -> tuple[int, bytes]:
        """The next message for this task: (source rank, payload). Blocks; after ``timeout``
        seconds raises TimeoutError."""
        deadline = None if timeout is None else self.now() + timeout
        while not self.inbox or self.inbox[0][2] > self.now():
            hold = self.inbox[0][2] if self.inbox else None  # the head arrived ahead of its time
            until = hold if deadline is None else (deadline if hold is None else min(hold, deadline))
            if self._pump(until) is None and deadline is not None and self.now() >= deadline:
                raise TimeoutError(f"no message for rank {self.rank} within {timeout} s")
        return self.take()

    def take(self) -> tuple[int, bytes]:
        """The first message of the inbox, due now (an event loop's recv: see nodes.pattern)."""
        source, data, due = self.inbox.popleft()
        self.lateness.append(self.now() - due)
        return source, data

    def due(self) -> float | None:
        """When the first message of the inbox is due (monotonic seconds), None when empty."""
        return self.inbox[0][2] if self.inbox else None

    def wait(self, msg_id: int, timeout: float | None = None) -> float:
        """Block until message ``msg_id`` is delivered; its delay in network microseconds."""
        deadline = None if timeout is None else self.now() + timeout
        while msg_id not in self.delivered or self.delivered[msg_id][1] > self.now():
            hold = self.delivered[msg_id][1] if msg_id in self.delivered else None
            until = hold if deadline is None else (deadline if hold is None else min(hold, deadline))
            if self._pump(until) is None and deadline is not None and self.now() >= deadline:
                raise TimeoutError(f"message {msg_id} not delivered within {timeout} s")
        return self.delivered.pop(msg_id)[0]

    def poll(self, timeout: float | None = 0.0):
        """Read what has arrived, waiting at most ``timeout`` seconds for the first frame
        (None: for ever); returns the message read or None (for event loops: nodes.pattern)."""
        return self._pump(None if timeout is None else self.now() + timeout)

    # ------------------------------------------------------------------ plumbing

    def _out(self, frame: bytes) -> None:
        """A frame to the interconnect: at once, or held (``hold``, :meth:`_flush`)."""
        if self.hold and not self.flow:
            self._outq.append(frame)
        else:
            self.link.send(frame)

    def _flush(self) -> None:
        """The held frames as one message of several parts (the interconnect handles them in
        order): a rank's sends and the wait after them cost one wake-up of each side, not one
        per frame. Nothing is decided by when a frame arrives in virtual time (only by the
        clock it carries), and a held send keeps the rank's bound where it was (the published
        clock counts frames, emulator.live.vclock): holding changes no time."""
        q = self._outq
        if not q:
            return
        self._outq = []
        self.link.send_many(q)

    def flush(self) -> None:
        """Send what is held now (a caller about to compute for long without reading)."""
        self._flush()

    def _read(self, deadline) -> dict | None:
        """The next frame from the interconnect, or None at ``deadline`` (None: no deadline).
        What this task holds goes out first. Frames that arrived before the connection dropped
        are read first; then CommError ``net-gone``."""
        if self._outq:
            self._flush()
        parts = self._parts
        while True:
            while parts:
                m = _decode(parts.popleft())
                if m is not None:
                    return m
            if not self.kernel.wait(deadline, *self._waits):
                return None
            try:
                parts.extend(self.link.read())
            except netlocal.Gone as e:
                self._gone(e)

    def _gone(self, e):
        if e.refused:  # nodes.commzmq: the tcp port refused this task's key
            raise CommError("refused", f"the interconnect at {self.endpoint} refused this task's key "
                                       f"({os.environ.get('MCEMU_NET_KEY') or 'none'}): only a node's or the "
                                       f"admin's key may reach it")
        raise CommError("net-gone", f"the interconnect at {self.endpoint} went away (it died or was "
                                    f"restarted): this task's messages can no longer be delivered")

    def _pump(self, deadline) -> dict | None:
        m = self._read(deadline)
        if m is None:
            return None
        t = m["type"]
        if t == "net_msg":
            self.inbox.append((m["source"], m["data"], m["due"] - self.offset))
        elif t == "net_delivered":
            self.delivered[m["id"]] = (m["delay_us"], m["due"] - self.offset)
            self.unacked_bytes -= self.unacked.pop(m["id"], 0)
        elif t == "ok":
            self.barriers.add(m["id"])
        elif t == "error":
            self.unacked_bytes -= self.unacked.pop(m.get("id"), 0)  # a refused send holds nothing
            raise CommError(m["code"], m["message"], m.get("id"))
        return m

    def close(self, linger: int | None = None) -> None:
        """Close the connection (``linger`` ms for unsent frames: the socket's 1 s by default)."""
        if linger != 0:
            try:
                self._flush()
            except Exception:  # noqa: BLE001  (a link that broke: nothing more to send)
                pass
        if self.remote:
            self.link.close(linger)
        else:
            self.link.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


__all__ = ["Comm", "CommError"]
