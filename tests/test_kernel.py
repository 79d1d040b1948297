"""The live kernel (emulator.live.kernel): timers, deadlines, readers, signals and the wait, on a
fake clock (no sleeping) and, where the clock matters, the wall clock."""
from __future__ import annotations

import os
import signal
import socket
import time

import pytest
import zmq

from emulator.live.kernel import FakeClock, Kernel


def test_timers_fire_in_time_order_ties_in_insertion_order():
    k = Kernel(FakeClock())
    got = []
    k.call_at(2.0, lambda: got.append(("b", k.now())))
    k.call_at(1.0, lambda: got.append(("a", k.now())))
    k.call_at(2.0, lambda: got.append(("c", k.now())))
    k.run(until=10.0)
    assert got == [("a", 1.0), ("b", 2.0), ("c", 2.0)]
    assert k.now() == 10.0


def test_cancelled_timer_never_fires():
    k = Kernel(FakeClock())
    got = []
    h = k.call_later(1.0, lambda: got.append(1))
    k.call_later(0.5, h.cancel)
    k.run(until=3.0)
    assert got == []


def test_every_keeps_its_period_and_does_not_bunch_after_a_stall():
    clock = FakeClock()
    k = Kernel(clock)
    got = []

    def tick():
        got.append(clock.now())
        if len(got) == 2:
            clock.advance(3.5)  # the callback overran by three periods

    k.every(1.0, tick)
    k.run(until=8.0)
    # 1, 2 (stalls to 5.5), then the overdue call once (not the three missed), then a period on
    assert got == [1.0, 2.0, 5.5, 6.5, 7.5]


def test_every_refuses_a_zero_interval():
    with pytest.raises(ValueError):
        Kernel(FakeClock()).every(0, lambda: None)


def test_deadline_is_asked_before_every_wait():
    clock = FakeClock()
    k = Kernel(clock)
    wake = [5.0]
    got = []

    def after():
        if clock.now() >= wake[0]:
            got.append(clock.now())
            wake[0] += 5.0

    k.add_deadline(lambda: wake[0])
    k.after_turn(after)
    k.run(until=16.0)
    assert got == [5.0, 10.0, 15.0]


def test_reader_callback_runs_when_readable():
    ctx = zmq.Context.instance()
    a, b = ctx.socket(zmq.PAIR), ctx.socket(zmq.PAIR)
    try:
        a.bind("inproc://kernel-test")
        b.connect("inproc://kernel-test")
        k = Kernel()
        got = []

        def read():
            got.append(b.recv())
            k.stop()

        k.add_reader(b, read)
        k.call_later(0.01, lambda: a.send(b"x"))
        k.call_later(5.0, k.stop)  # a deadline, not a hang
        t = time.monotonic()
        k.run()
        assert got == [b"x"]
        assert time.monotonic() - t < 2.0
        k.remove_reader(b)
        assert k._items == []
    finally:
        a.close(0)
        b.close(0)


def test_signal_runs_in_the_loop():
    k = Kernel()
    got = []
    before = []
    signal.signal(signal.SIGUSR1, lambda *_: before.append(1))
    previous = signal.getsignal(signal.SIGUSR1)
    k.on_signal(signal.SIGUSR1, lambda: (got.append("usr1"), k.stop()))
    k.call_later(0.01, lambda: os.kill(os.getpid(), signal.SIGUSR1))
    k.call_later(5.0, k.stop)
    try:
        k.run()
    finally:
        k.close()
    assert got == ["usr1"] and before == []
    assert signal.getsignal(signal.SIGUSR1) is previous  # close puts the previous handler back
    signal.signal(signal.SIGUSR1, signal.SIG_DFL)


@pytest.mark.parametrize("precise", [False, True])
def test_wall_wait_is_never_early_and_at_most_a_few_ms_late(precise):
    k = Kernel(precise=precise)
    lates = []
    for _ in range(20):
        due = time.monotonic() + 0.0023
        assert k.wait(due) == []
        lates.append(time.monotonic() - due)
    assert min(lates) >= 0
    assert sorted(lates)[10] < 0.005  # the median: a loaded 2-core machine can delay a few


def test_fake_wait_moves_the_clock_without_sleeping():
    clock = FakeClock(100.0)
    k = Kernel(clock)
    t = time.monotonic()
    assert k.wait(3600.0 + 100.0) == []
    assert clock.now() == 3700.0
    assert time.monotonic() - t < 0.5


def test_fake_clock_does_not_go_back():
    clock = FakeClock(5.0)
    clock.set(1.0)
    assert clock.now() == 5.0
    with pytest.raises(ValueError):
        clock.advance(-1)


def test_many_descriptors_are_one_poll_item_and_each_is_still_served_level_triggered():
    """File descriptors are watched through one epoll (a turn polls a few items, not one per
    task connection): each readable one's callback runs every turn while it stays readable, a
    writer runs while writable, and a descriptor closed before its removal harms nothing."""
    k = Kernel()
    pairs = [socket.socketpair() for _ in range(40)]
    try:
        got = []
        for i, (a, _) in enumerate(pairs):
            k.add_reader(a.fileno(), lambda i=i: got.append(i))
        assert len(k._items) == 1
        pairs[3][1].send(b"x")
        pairs[17][1].send(b"y")
        k.run_once(1.0)
        k.run_once(1.0)  # not read: still readable, served again
        assert sorted(got) == [3, 3, 17, 17]
        wrote = []
        k.add_writer(pairs[5][0].fileno(), lambda: wrote.append(5))
        got.clear()
        k.run_once(1.0)
        assert wrote == [5] and sorted(got) == [3, 17]
        k.remove_writer(pairs[5][0].fileno())
        for i in (3, 17):
            pairs[i][0].recv(10)
            k.remove_reader(pairs[i][0].fileno())
        fds = [a.fileno() for a, _ in pairs]
        pairs[9][0].close()  # closed before its removal: the epoll forgot it by itself
        got.clear()
        k.run_once(0.01)
        assert got == []
        for fd in fds:
            k.remove_reader(fd)
        assert k._items == [] and not k._epmask
        epfd = k._epoll.fileno()
        k.close()  # the epoll is the kernel's: closed with it
        assert k._epoll is None and not os.path.exists(f"/proc/self/fd/{epfd}")
    finally:
        for a, b in pairs:
            a.close()
            b.close()
