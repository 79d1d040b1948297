"""The live kernel: the one loop every live process runs on (daemon, interconnect, node agent,
monitor) and the one wait-until-deadline the task library blocks in.

SimPy's ``rt`` idea (simpy/rt.py: real time is the virtual-time core with another clock) and
the ZeroMQ guide's broker loop (poll, dispatch, timers, no infinite timeouts): readers (ZeroMQ
sockets or file descriptors) with their callbacks, timers on a heap with a counter that breaks
ties in insertion order, dynamic deadlines (a policy's ``next_wakeup``, a network model's
horizon) consulted before each wait, callbacks at the end of every turn (a daemon's flush after
its journal commit) and signals delivered in the loop through a wake-up pipe, never in signal
context.

The clock is injected. :class:`WallClock` is ``time.monotonic``; :class:`FakeClock` is moved by
the kernel itself: a wait on a fake clock polls once without blocking and, when nothing is
ready, sets the clock to the deadline, so a test of a daemon's timers runs minutes of its time
in milliseconds, with real sockets (or none) and without a sleep.

One turn (:meth:`Kernel.run_once`): wait until a reader is ready or the earliest timer or
deadline is due, call the ready readers' callbacks, the due timers' callbacks (in time order,
ties in the order they were set), then the ``after_turn`` callbacks.

The wait (:meth:`Kernel.wait`): ZeroMQ's poll takes whole milliseconds. ``precise=False`` (the
daemon, the agents, the monitor: hundreds of processes on two cores, where a wake-up costs more
than a millisecond of lateness) rounds the timeout up, one wake-up per wait and at most 1 ms late;
a wait under 1 ms never spins at poll(0). ``precise=True`` (the interconnect, whose releases are
due to the tens of microseconds) polls the whole milliseconds below the deadline, sleeps the rest
less ``SPIN`` and polls once more, so it wakes within the kernel's timer slack. ``spin=0`` (the
task library, nodes.comm, whose process asks for a 1 ns timer slack): the rest is slept, not
spun, since dozens of tasks holding messages would spin on the cores the interconnect needs.
"""
from __future__ import annotations

import heapq
import math
import os
import select
import signal
import time
from itertools import count

import zmq

SPIN = 60e-6  # a precise wait shorter than this polls again at once instead of sleeping
_POLLIN = int(zmq.POLLIN)
_POLLOUT = int(zmq.POLLOUT)
_poll = zmq.zmq_poll
_EPIN = select.EPOLLIN | select.EPOLLRDHUP
_EPIN_ANY = _EPIN | select.EPOLLERR | select.EPOLLHUP | select.EPOLLPRI
_EPOUT_ANY = select.EPOLLOUT | select.EPOLLERR | select.EPOLLHUP


class WallClock:
    """Seconds of the system's monotonic clock."""

    fake = False
    now = staticmethod(time.monotonic)  # the builtin itself: no Python frame per reading


class FakeClock:
    """A clock that only moves when told to (or when a kernel waits on it)."""

    fake = True

    def __init__(self, t: float = 0.0):
        self.t = float(t)

    def now(self) -> float:
        return self.t

    def advance(self, dt: float) -> None:
        if dt < 0:
            raise ValueError(f"a clock does not go back (advance by {dt})")
        self.t += dt

    def set(self, t: float) -> None:
        self.t = max(self.t, float(t))


class Timer:
    """A pending callback; ``cancel()`` withdraws it (a periodic one for good)."""

    __slots__ = ("at", "cb", "interval", "cancelled")

    def __init__(self, at: float, cb, interval: float | None = None):
        self.at, self.cb, self.interval, self.cancelled = at, cb, interval, False

    def cancel(self) -> None:
        self.cancelled = True


class Kernel:
    def __init__(self, clock=None, precise: bool = False, spin: float = SPIN):
        self.clock = clock if clock is not None else WallClock()
        self.now = self.clock.now
        self.precise, self.spin = precise, spin
        self._items: list = []  # zmq_poll's items: (ZeroMQ socket, POLLIN), and the epoll's fd
        self._epoll = None  # every file descriptor watched (select.epoll), made at the first
        self._epmask: dict = {}  # fd -> its events in the epoll
        self._readers: dict = {}  # socket or fd -> callback
        self._writers: dict = {}  # fd -> callback
        self._timers: list = []  # heap of (at, seq, Timer)
        self._seq = count()
        self._deadlines: list = []
        self._after: list = []
        self._signals: dict[int, object] = {}
        self._saved: dict[int, object] = {}  # the handlers before on_signal, put back by close
        self._wake_r = None
        self.running = False

    # ------------------------------------------------------------------ what it serves

    def add_reader(self, obj, cb) -> None:
        """Call ``cb()`` in every turn in which ``obj`` (a ZeroMQ socket or a file descriptor)
        is readable (or has hung up); the callback reads what it wants (level-triggered)."""
        self._readers[obj] = cb
        self._poll_items(obj)

    def add_writer(self, fd: int, cb) -> None:
        """Call ``cb()`` in every turn in which the file descriptor ``fd`` is writable (a
        connection with bytes waiting to go out: emulator.live.netlocal); level-triggered, so
        remove it once there is nothing left to write."""
        self._writers[fd] = cb
        self._poll_items(fd)

    def remove_reader(self, obj) -> None:
        if self._readers.pop(obj, None) is not None:
            self._poll_items(obj)

    def remove_writer(self, fd: int) -> None:
        if self._writers.pop(fd, None) is not None:
            self._poll_items(fd)

    def _poll_items(self, changed) -> None:
        """What the wait polls: each ZeroMQ socket, and one epoll (level-triggered) for every
        file descriptor, so a turn's poll is a few items and not one per descriptor: zmq_poll
        over the interconnect's 64 task connections cost it 8 us of CPU a turn (the items
        converted and every descriptor asked), a turn per message in virtual time."""
        if type(changed) is int:
            self._epoll_set(changed)
        items = [(obj, _POLLIN) for obj in self._readers if type(obj) is not int]
        if self._epmask:
            items.append((self._epoll.fileno(), _POLLIN))
        self._items = items

    def _epoll_set(self, fd: int) -> None:
        mask = (_EPIN if fd in self._readers else 0) | (select.EPOLLOUT if fd in self._writers else 0)
        old = self._epmask.get(fd, 0)
        if mask == old:
            return
        if self._epoll is None:
            self._epoll = select.epoll()
        ep = self._epoll
        try:
            if not mask:
                ep.unregister(fd)
            elif old:
                ep.modify(fd, mask)
            else:
                ep.register(fd, mask)
        except FileNotFoundError:  # closed before it was removed, its number given again
            if mask:
                ep.register(fd, mask)
        except OSError:  # closed before it was removed: epoll forgot it by itself
            pass
        if mask:
            self._epmask[fd] = mask
        else:
            self._epmask.pop(fd, None)

    def _expand(self, ready: list) -> list:
        """zmq_poll's answer with the epoll's item replaced by the descriptors it holds ready, as
        zmq_poll names them (an error or a hang-up: readable and writable, for whoever watches)."""
        epfd = self._epoll.fileno()
        out = [(obj, ev) for obj, ev in ready if obj != epfd]
        if len(out) == len(ready):
            return ready
        for fd, e in self._epoll.poll(0):
            ev = (_POLLIN if e & _EPIN_ANY else 0) | (_POLLOUT if e & _EPOUT_ANY else 0)
            if ev:
                out.append((fd, ev))
        return out

    def call_at(self, t: float, cb) -> Timer:
        h = Timer(float(t), cb)
        heapq.heappush(self._timers, (h.at, next(self._seq), h))
        return h

    def call_later(self, dt: float, cb) -> Timer:
        return self.call_at(self.now() + dt, cb)

    def every(self, interval: float, cb, first: float | None = None) -> Timer:
        """Call ``cb()`` every ``interval`` seconds from ``first`` (default: one interval from
        now). A late call does not bunch up the next ones: the next is one interval after the
        one that was due, or one interval after now when that has passed too."""
        if not interval > 0:
            raise ValueError(f"a periodic timer needs an interval above 0, not {interval}")
        h = Timer(self.now() + interval if first is None else float(first), cb, float(interval))
        heapq.heappush(self._timers, (h.at, next(self._seq), h))
        return h

    def add_deadline(self, fn) -> None:
        """``fn() -> float | None``: a wake-up time that moves by itself, asked before every wait."""
        self._deadlines.append(fn)

    def after_turn(self, cb) -> None:
        self._after.append(cb)

    def on_signal(self, signum: int, cb) -> None:
        """Run ``cb()`` in the loop after signal ``signum`` (its number comes through the
        wake-up pipe: the handler itself does nothing, so no code runs in signal context)."""
        if self._wake_r is None:
            r, w = os.pipe()
            os.set_blocking(r, False)
            os.set_blocking(w, False)
            signal.set_wakeup_fd(w)
            self._wake_r, self._wake_w = r, w
            self.add_reader(r, self._dispatch_signals)
        if int(signum) not in self._signals:
            self._saved[int(signum)] = signal.getsignal(signum)
        self._signals[int(signum)] = cb
        signal.signal(signum, _noop)

    def _dispatch_signals(self) -> None:
        got = b""
        try:
            while True:
                chunk = os.read(self._wake_r, 512)
                if not chunk:
                    break
                got += chunk
        except BlockingIOError:
            pass
        for signum in dict.fromkeys(got):  # each signal once per turn, in arrival order
            cb = self._signals.get(signum)
            if cb is not None:
                cb()

    # ------------------------------------------------------------------ the loop

    def next_due(self) -> float | None:
        """The earliest timer or deadline, or None."""
        timers = self._timers
        while timers and timers[0][2].cancelled:
            heapq.heappop(timers)
        t = timers[0][0] if timers else None
        for fn in self._deadlines:
            d = fn()
            if d is not None and (t is None or d < t):
                t = d
        return t

    def run_once(self, timeout: float | None = None) -> None:
        """One turn: wait, readers, due timers, ``after_turn``."""
        deadline = self.next_due()
        if timeout is not None:
            limit = self.now() + timeout
            deadline = limit if deadline is None else min(deadline, limit)
        ready = self._wait(self._items, deadline)
        if ready and self._epmask:
            ready = self._expand(ready)
        if ready:
            readers, writers = self._readers, self._writers
            for obj, ev in ready:
                if ev != _POLLOUT:  # readable, or an error or hang-up its reader will see
                    cb = readers.get(obj)
                    if cb is not None:
                        cb()
                if ev & _POLLOUT and writers:
                    cb = writers.get(obj)
                    if cb is not None:
                        cb()
        # the node agents' hot path (a wake-up per message, dozens of agents on two cores):
        # no call and no clock reading when no timer is set
        if self._timers:
            self._fire(self.now())
        for cb in self._after:
            cb()

    def _fire(self, now: float) -> None:
        timers = self._timers
        while timers and timers[0][0] <= now:
            _, _, h = heapq.heappop(timers)
            if h.cancelled:
                continue
            if h.interval is not None:
                h.at = h.at + h.interval if h.at + h.interval > now else now + h.interval
                heapq.heappush(timers, (h.at, next(self._seq), h))
            h.cb()

    def run(self, until: float | None = None) -> None:
        """Turns until :meth:`stop` (or the clock reaches ``until``)."""
        self.running = True
        try:
            while self.running:
                if until is not None:
                    now = self.now()
                    if now >= until:
                        break
                    self.run_once(until - now)
                else:
                    self.run_once()
        finally:
            self.running = False

    def stop(self) -> None:
        self.running = False

    def close(self) -> None:
        """Give the signals back the handlers they had before ``on_signal`` and close the
        wake-up pipe and the epoll (a process that makes kernels one after another, a test's,
        keeps no descriptor of theirs)."""
        for signum in self._signals:
            saved = self._saved.pop(signum, None)
            signal.signal(signum, saved if saved is not None else signal.SIG_DFL)
        self._signals.clear()
        if self._wake_r is not None:
            signal.set_wakeup_fd(-1)
            self.remove_reader(self._wake_r)
            os.close(self._wake_r)
            os.close(self._wake_w)
            self._wake_r = None
        if self._epoll is not None:
            self._epoll.close()
            self._epoll, self._epmask = None, {}
            self._items = [(obj, _POLLIN) for obj in self._readers if type(obj) is not int]

    # ------------------------------------------------------------------ the one wait

    def wait(self, deadline: float | None, *objs) -> list:
        """Block until one of ``objs`` (sockets or fds) is readable or the clock reaches
        ``deadline`` (None: no deadline); returns the readable ones (empty at the deadline)."""
        return [o for o, _ in self._wait([(o, _POLLIN) for o in objs], deadline)]

    def _wait(self, items: list, deadline: float | None) -> list:
        clock = self.clock
        if clock.fake:
            ready = _poll(items, 0) if items else []
            if not ready and deadline is not None:
                clock.set(deadline)
            return ready
        now = clock.now()
        if not self.precise and items and deadline is not None and deadline > now:
            # the usual wait: one poll, rounded up (pyzmq truncates to whole ms, and a wait
            # under 1 ms would spin)
            ready = _poll(items, math.ceil((deadline - now) * 1000.0))
            if ready:
                return ready
            if clock.now() >= deadline:
                return []
            now = clock.now()
        while True:
            if deadline is None:
                ready = _poll(items, -1) if items else []
                return ready
            left = deadline - now
            if left <= 0:
                ready = _poll(items, 0) if items else []
            elif not self.precise:
                # rounded up: pyzmq truncates to whole ms, and a wait under 1 ms would spin
                ready = _poll(items, math.ceil(left * 1000.0)) if items else _sleep(left)
            elif left >= 0.001:
                ready = _poll(items, int(left * 1000.0)) if items else _sleep(left)
            else:
                if left > self.spin:
                    time.sleep(left - self.spin)  # the kernel's timer slack (50 us) is the spin's
                ready = _poll(items, 0) if items else []
            if ready or left <= 0:
                return ready
            now = clock.now()
            if now >= deadline:
                return []


def _sleep(seconds: float) -> list:
    time.sleep(seconds)
    return []


def _noop(*_):
    pass


__all__ = ["SPIN", "FakeClock", "Kernel", "Timer", "WallClock"]
