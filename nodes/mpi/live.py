"""The MPI layer's transport on the live cluster: a rank of a job talking through the
interconnect (nodes.comm), in the cluster's network time.

**Virtual time** (``mcemu up --net-time virtual``; emulator.live.vtime has the interconnect's
side): the rank keeps a clock. Between two calls of the transport it advances by the CPU time
the program used (``time.thread_time``, this thread only: not the time it waited for a core,
so a busy host changes nothing), times ``cpu_scale``; the transport's own CPU time is not
counted. With ``--cpu-clock gauged`` that CPU time is in units of a reference work, times a
factor the rank's gauge (nodes.mpi.cpuclock) fixes when the program resumes: how fast the host
runs the reference now against the cluster's calibration. Every frame carries the clock (``vt``) and the CPU time (``cpu``): a send enters the
model at ``vt``; a wait is answered by the interconnect with the messages due by the answer
and the new clock (``net_go``). ``MPI.Wtime()`` is the clock, from the job's start (0).

**Dilated time** (the default ``--net-time``): messages are handed over at their dilated wall
due times, as nodes.comm always did; ``MPI.Wtime()`` is wall time since the rank started.

**The program trace** (virtual time): every rank writes ``$MCEMU_TRACES/job-<id>/rank-<r>.json``
when it ends (the format: scheduler.network.trace): its compute intervals, sends and waits, so
``mcemu net replay`` can run the program again in the simulator, on any placement.
"""
from __future__ import annotations

import atexit
import json
import os
import socket
import time
from collections import defaultdict
from pathlib import Path

from nodes.comm import Comm, CommError
from nodes.mpi.errors import TransportError

_thread_time = time.thread_time


class LiveTransport:
    """This task's rank (module docstring); ``comm``: an open nodes.comm.Comm (tests)."""

    def __init__(self, comm: Comm | None = None):
        if os.environ.get("MCEMU_MPI_PROFILE"):
            _profile(os.environ["MCEMU_MPI_PROFILE"])
        self.shared = None if comm is not None else _shared_clock()
        try:
            self.comm = comm or Comm(sync=True, pid=os.getpid(), timeout=120.0,
                                     shared_clock=self.shared is not None)
        except CommError as e:
            raise TransportError(e.code, e.message) from None
        w = self.comm.welcome
        self.rank, self.size = self.comm.rank, self.comm.size
        self.virtual = w.get("time") == "virtual"
        self.waits_all = self.virtual  # a wait for several receives is woken once (matching.awaiting_all)
        self.scale = float(w.get("cpu_scale", 1.0))
        self.vt0 = self.clock = float(w.get("vt0") or 0.0)
        self.t0 = time.monotonic()
        self.closed = False
        self.events: list = []  # the trace (virtual time)
        self.sent_to = defaultdict(int)  # dest -> messages sent to it (the trace's seq)
        self.got_from = defaultdict(int)
        self.paused = False  # inside an MPI call: the library's CPU time is not the program's (nodes.mpi.timing)
        self.gauge = _gauge(w) if self.virtual else None
        self.factor = self.gauge.update() if self.gauge is not None else 1.0  # this interval's (cpuclock)
        self.mark = _thread_time()  # CPU time when the program last resumed
        self.frames = 0  # frames sent with a clock (send, wait, bye): the published record says how many
        if not self.virtual and self.shared is not None:  # nobody reads a clock in dilated time
            self.shared.close()
            self.shared = None
        if not self.virtual:
            # no clock to stop: the MPI calls are not wrapped (nodes.mpi.timing: a transport
            # without ``pause``); their pause and resume were a third of a dilated message's CPU
            self.pause = None
        if self.shared is not None:
            self.shared.set(self.clock, self.mark, False, 0, self.factor)
        atexit.register(self.close)

    # ------------------------------------------------------------------ the clock

    def pause(self) -> bool:
        """An MPI call begins (nodes.mpi.timing): the program's CPU time so far joins the clock,
        which stops. False when it was stopped already (a transport call inside an MPI call)."""
        if self.paused:
            return False
        shared = self.shared
        if shared is not None:
            # the record marked as changing before the CPU time is read: a reader that used it
            # read the host's CPU time earlier, so its bound stays below the clock computed here
            shared.begin()
        dt = (_thread_time() - self.mark) * self.scale * self.factor  # the program's interval ends here
        if dt > 0:
            self.clock += dt
            self.events.append(["c", dt])
        self.paused = True
        # the call's sends and the wait after them leave as one message (nodes.comm.Comm.hold):
        # one wake-up of each side per call, not one per frame; never held across computing
        self.comm.hold = self.virtual
        if shared is not None:
            shared.commit(self.clock, self.mark, True, self.frames, self.factor)
        return True

    def resume(self) -> None:
        """The MPI call returns: the program's CPU time counts again from now."""
        self.paused = False
        self.comm.hold = False
        self.comm.flush()  # before the mark: sending is the call's work, not the program's
        if self.gauge is not None:  # its probe before the mark: the probe's CPU time is nobody's
            self.factor = self.gauge.update()
        shared = self.shared
        if shared is None:
            self.mark = _thread_time()
            return
        # the factor with the mark: the interconnect's bound applies the one the clock will; the
        # mark read last, so that only the record's last two writes fall in the program's time
        shared.begin()
        self.mark = mark = _thread_time()
        shared.commit(self.clock, mark, False, self.frames, self.factor)

    def _publish(self) -> None:
        if self.shared is not None:  # the clock moved inside a call (a wait's answer, a sleep)
            self.shared.set(self.clock, self.mark, True, self.frames, self.factor)

    def wtime(self) -> float:
        if not self.virtual:
            return time.monotonic() - self.t0
        if self.paused:
            return self.clock - self.vt0
        return self.clock + (_thread_time() - self.mark) * self.scale * self.factor - self.vt0

    # ------------------------------------------------------------------ messages

    def send(self, dest: int, payload: bytes, nbytes: int) -> None:
        if not self.virtual:  # its notice only paces the window: it may wait for a ride (ic_dilated)
            return self._call(self.comm.send, dest, payload, nbytes=nbytes, lazy=True)
        outer = self.pause()
        self.frames += 1
        self._call(self.comm.send, dest, payload, nbytes=nbytes, vt=self.clock)
        self.events.append(["s", dest, nbytes, self.sent_to[dest]])
        self.sent_to[dest] += 1
        if outer:
            self.resume()

    def wait(self, block: bool, what: str) -> list[tuple[int, bytes]]:
        if not self.virtual:
            return self._wait_dilated(block)
        outer = self.pause()
        self.frames += 1
        # a blocking wait names the envelopes that end it (nodes.mpi.matching.Awaited): the
        # interconnect then hands over the others without a round trip (emulator.live.vtime)
        match = getattr(what, "match", None) if block else None
        need = getattr(what, "need", 1) if match else 1  # a wait for several receives (awaiting_all)
        frames, at = self._call(self.comm.vwait, self.clock, None if block else self.clock, what, match, need)
        got, msgs = [], []
        for m in frames:
            if m["type"] == "net_msg":
                src = m["source"]
                got.append((src, m["data"]))
                msgs.append([src, self.got_from[src], m["due"] - self.vt0])
                self.got_from[src] += 1
        before = self.clock
        self.clock = max(self.clock, at)
        self.events.append(["w", None if block or msgs else self.clock - before, msgs, []])
        if outer:
            self.resume()
        else:
            self._publish()
        return got

    def _wait_dilated(self, block: bool) -> list[tuple[int, bytes]]:
        comm, got = self.comm, []
        comm.delivered.clear()  # the notices pace sends (nodes.comm's window); nobody waits on them here
        try:
            if block:
                got.append(comm.recv())
            else:
                comm.poll(0.0)
            now = comm.now()
            while comm.inbox and comm.due() <= now:
                got.append(comm.take())
        except CommError as e:
            raise TransportError(e.code, e.message) from None
        return got

    def sleep(self, seconds: float) -> None:
        if not self.virtual:
            time.sleep(seconds)
            return
        outer = self.pause()
        self.clock += seconds
        self.events.append(["c", seconds])
        if outer:
            self.resume()
        else:
            self._publish()

    def processor_name(self) -> str:
        return f"{socket.gethostname()}:node{self.comm.nodes[self.rank]}"

    # ------------------------------------------------------------------ plumbing

    def _call(self, fn, *args, **kw):
        try:
            return fn(*args, **kw)
        except CommError as e:
            raise TransportError(e.code, e.message) from None

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            if self.virtual:
                self.pause()
                self.frames += 1
                self.comm.bye(self.clock)
                self.events.append(["e", self.clock - self.vt0])
                self._write_trace()
            self.comm.close()
        except Exception:  # at exit: the job's end is what matters, not a last frame
            pass
        if self.shared is not None:
            self.shared.close()

    def _write_trace(self) -> None:
        where = os.environ.get("MCEMU_TRACES")
        if not where:
            return
        c, w = self.comm, self.comm.welcome
        d = Path(where) / f"job-{c.job}"
        d.mkdir(parents=True, exist_ok=True)
        doc = {"version": 1, "job": c.job, "attempt": c.attempt, "rank": self.rank, "size": self.size,
               "nodes": c.nodes, "topology": w.get("topology"), "flit_time_us": w.get("flit_time_us"),
               "flit_bytes": w.get("flit_bytes"), "startup_flits": w.get("startup_flits", 0.0),
               "cpu_scale": self.scale, "time": "virtual", "vt0": self.vt0, "events": self.events}
        tmp = d / f".rank-{self.rank}.json.tmp"
        tmp.write_text(json.dumps(doc, separators=(",", ":")))
        os.replace(tmp, d / f"rank-{self.rank}.json")


def _profile(where: str) -> None:
    """MCEMU_MPI_PROFILE=DIR: this rank's cProfile statistics in DIR/rank-<r>.prof at its exit
    (where a message's CPU goes in a rank: scripts/bench_mpi.py --profile)."""
    import cProfile

    prof = cProfile.Profile(time.thread_time)  # CPU, not the waits: where the rank's CPU goes
    path = Path(where) / f"rank-{os.environ.get('MCEMU_RANK', 0)}.prof"

    def dump():
        prof.disable()
        path.parent.mkdir(parents=True, exist_ok=True)
        prof.dump_stats(path)

    atexit.register(dump)  # registered first: it runs after the transport's close
    prof.enable()


def _gauge(welcome: dict):
    """The rank's host-speed gauge against the calibration its welcome carries (``--cpu-clock
    gauged``), None for CPU seconds as the host counts them."""
    ref = welcome.get("cpu_gauge")
    if not ref:
        return None
    from nodes.mpi.cpuclock import Gauge

    return Gauge(ref)


def _shared_clock():
    """This rank's published clock (emulator.live.vclock) in the cluster's home, which
    MCEMU_NET names (ipc://HOME/net.sock); None on a network it cannot share memory with."""
    net = os.environ.get("MCEMU_NET", "")
    if not net.startswith("ipc://"):
        return None
    from emulator.live.vclock import ClockWriter

    home = Path(net[len("ipc://"):]).parent
    name = f"{os.environ.get('MCEMU_JOB_ID')}.{os.environ.get('MCEMU_ATTEMPT')}.{os.environ.get('MCEMU_RANK')}"
    try:
        return ClockWriter(home / "clocks" / name)
    except OSError:
        return None


__all__ = ["LiveTransport"]
