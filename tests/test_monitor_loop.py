"""The monitor's loop on the live kernel, on a fake clock: frames at ``fps``, the daemon's
events fed between them (a real PUB socket, no daemon), the keys q / p / c, and the ends
(``until``, ``stop()``, the daemon's shutdown), for the live view (``LiveView``) and the
demo's headless feed. No process is started and nothing sleeps: the kernel moves the clock."""
from __future__ import annotations

import os
import time

import pytest
import zmq

from emulator.live import protocol as P
from emulator.live.kernel import FakeClock, Kernel
from emulator.monitor import app
from emulator.monitor.feed import Feed

from test_monitor import make_state


@pytest.fixture
def wire(tmp_path):
    """A Feed on a fake clock subscribed to a PUB socket of the test's; ``publish(topic, **fields)``."""
    clock = FakeClock(100.0)
    pub = zmq.Context.instance().socket(zmq.XPUB)
    pub.setsockopt(zmq.LINGER, 0)
    pub.bind(f"ipc://{tmp_path}/events.sock")
    feed = Feed(endpoint=f"ipc://{tmp_path}/daemon.sock", clock=clock)  # no daemon: the events only
    assert pub.poll(5000), "the feed never subscribed"  # XPUB: the subscription is a message
    pub.recv()
    feed.state = make_state("hypercube:2", {1: [0, 1]}, t=10.0)
    feed.wall_anchor = feed.last_event = clock.now()

    def publish(topic: str, **fields):
        pub.send_multipart([topic.encode(), P.encode(topic, **fields)])
        # delivered before the kernel polls (it never waits on a fake clock)
        deadline = time.monotonic() + 5
        while not feed.sub.poll(0) and time.monotonic() < deadline:
            feed.sub.poll(10)

    yield clock, feed, publish
    feed.close()
    pub.close()


def _view(kernel, feed, **kw):
    frames = []
    view = app.LiveView(kernel, feed, lambda v: frames.append((kernel.now(), v)), **kw)
    return view, frames


def test_frames_come_at_fps_and_model_time_runs_with_the_clock(wire):
    clock, feed, _ = wire
    k = Kernel(clock)
    _, frames = _view(k, feed, fps=5.0)
    k.run(until=102.0)
    times = [t for t, _ in frames]
    assert times[0] == 100.0 and len(times) in (10, 11)
    assert all(abs(b - a - 0.2) < 1e-9 for a, b in zip(times, times[1:]))
    unit = feed.state.time_unit  # between events the model time moves with the clock
    assert [v["title"]["now"] for _, v in frames] == pytest.approx([10.0 + (t - 100.0) / unit for t in times])
    assert frames[-1][1]["title"]["paused"] is False


def test_events_are_fed_between_frames(wire):
    clock, feed, publish = wire
    k = Kernel(clock)
    _, frames = _view(k, feed)
    k.run_once()  # the first frame
    # a job the state knows (one it does not is fetched from the daemon, which is not there)
    publish("job", job=1, state="completed", t=11.0, info={"nodes": [0, 1], "attempt": 1})
    k.run_once()
    assert feed.state.jobs[1].state == "completed" and feed.state.now == 11.0
    assert feed.last_event == clock.now()
    publish("snapshot", t=12.0, data={"shutdown": True})  # the daemon's last word ends the view
    k.run(until=clock.now() + 60)
    assert feed.state.shutdown and clock.now() < 101.0


def test_keys_pause_show_channels_and_quit(wire):
    clock, feed, _ = wire
    k = Kernel(clock)
    r, w = os.pipe()
    try:
        view, frames = _view(k, feed, keys_fd=r)
        k.run_once()
        os.write(w, b"p")
        k.run_once()
        assert view.paused and frames[-1][1]["title"]["paused"] is True and frames[-1][1] is view.frozen
        os.write(w, b"c")
        k.run_once()
        assert view.channels and frames[-1][1]["channels"] == {"links": None}
        os.write(w, b"Q")
        k.run(until=clock.now() + 60)
        assert clock.now() < 101.0  # q stopped it
        view.close()
    finally:
        os.close(r)
        os.close(w)


def test_stop_ends_the_live_view_and_the_headless_feed(wire):
    clock, feed, _ = wire
    k = Kernel(clock)
    _view(k, feed, stop=lambda: clock.now() >= 101.0)
    k.run(until=200.0)
    assert 101.0 <= clock.now() < 101.5
    app.headless(feed, until=clock.now() + 10.0, stop=lambda: clock.now() >= 103.0)
    assert 103.0 <= clock.now() <= 103.0 + app.STOP_POLL
    app.headless(feed, until=clock.now() + 10.0)
    assert clock.now() == pytest.approx(113.0, abs=app.STOP_POLL)
