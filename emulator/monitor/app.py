"""The monitor's loop: the daemon's events feed a MonitorState (emulator.monitor.feed), the
view draws it (emulator.monitor.view), and this module only runs them on the live kernel
(emulator.live.kernel): the SUB socket and (on a TTY) stdin in cbreak mode are the kernel's
readers, a periodic timer draws the frames, so the process sleeps until an event, a key or the
next frame: no polling of the daemon.

Frames: Rich ``Live`` with ``auto_refresh=False``; the loop redraws ``fps`` times a second
(default 5) on the alternate screen when stdout is a TTY. Keys: q quits, p pauses (the frame
stays, the state keeps up), c shows the interconnect's channels. A Ctrl-C is Python's
KeyboardInterrupt, which unwinds through the Live and cbreak blocks and so gives the terminal
back as it was.
"""
from __future__ import annotations

import contextlib
import json
import os
import sys
import termios
import tty

from rich.console import Console
from rich.live import Live

from emulator.jsonable import jsonable
from emulator.live.kernel import Kernel
from emulator.monitor import view as V
from emulator.monitor.feed import Feed, with_delays

STOP_POLL = 0.25  # seconds: how often headless() asks ``stop()``, another thread's state that wakes nothing


class LiveView:
    """The live view's handlers on a kernel: ``on_events`` feeds the state, ``on_keys`` reads the
    keys, ``frame`` (a periodic timer from now) draws with ``draw(view)``; the kernel stops at q,
    the daemon's shutdown or ``stop()`` returning true (asked after every turn)."""

    def __init__(self, kernel: Kernel, feed: Feed, draw, fps: float = 5.0, stop=None, keys_fd: int | None = None):
        self.kernel, self.feed, self.draw, self.keys_fd = kernel, feed, draw, keys_fd
        self.paused = self.channels = False
        self.frozen = self.last = None
        kernel.add_reader(feed.sub, self.on_events)
        if keys_fd is not None:
            kernel.add_reader(keys_fd, self.on_keys)
        self.timer = kernel.every(1.0 / fps, self.frame, first=kernel.now())
        if stop is not None:
            kernel.after_turn(lambda: stop() and kernel.stop())

    def frame(self) -> None:
        self.last = self.feed.view()
        shown = self.frozen if self.paused else self.last
        shown["title"]["paused"] = self.paused
        links = self.feed.links()
        if self.channels:
            shown["channels"] = links
        with_delays(shown, links.get("links"))
        self.draw(shown)
        if self.feed.state.shutdown:
            self.kernel.stop()

    def on_events(self) -> None:
        self.feed.drain()
        self.feed.fetch_missing()

    def on_keys(self) -> None:
        keys = os.read(self.keys_fd, 64).decode(errors="ignore").lower()
        if "q" in keys:
            self.kernel.stop()
            return
        if "c" in keys:
            self.channels = not self.channels
        if "p" in keys:
            self.paused = not self.paused
            self.frozen = self.feed.view()
        if "c" in keys or "p" in keys:
            self.frame()  # at once, not at the next tick

    def close(self) -> None:
        self.timer.cancel()
        self.kernel.remove_reader(self.feed.sub)
        if self.keys_fd is not None:
            self.kernel.remove_reader(self.keys_fd)


@contextlib.contextmanager
def cbreak(fd):
    """stdin in cbreak mode (keys arrive one by one, no echo), restored on exit."""
    old = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd)
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, old)


def once(home=None, endpoint=None, width: int | None = None, as_json: bool = False, timeout: float = 5.0,
         events=None) -> str:
    """One snapshot of the cluster, rendered (or as the JSON view dict)."""
    feed = Feed(home, endpoint, events, timeout=timeout)
    try:
        s = feed.sync()
        view = s.view(s.now)
        with_delays(view, feed.links().get("links"))
    finally:
        feed.close()
    if as_json:
        return json.dumps(jsonable(view), default=str)
    if width is None:
        width = os.get_terminal_size().columns if sys.stdout.isatty() else 120
    layout, height = V.render_once(view, width)
    con = Console(width=width, height=height, record=True, file=sys.stdout,
                  force_terminal=sys.stdout.isatty())
    con.print(layout)
    return ""


def run(home=None, endpoint=None, events=None, fps: float = 5.0, until: float | None = None,
        stop=None, console=None, feed: Feed | None = None, channels: bool = False) -> dict:
    """The live view until q, the daemon's shutdown, ``until`` (a deadline on the feed's clock,
    time.monotonic() by default) or ``stop()`` returning true; ``channels``: the channel view
    on from the start (key c). Returns the last view dict."""
    own = feed is None
    if own:
        feed = Feed(home, endpoint, events)
    if feed.state is None:
        feed.sync()
    console = console or Console()
    fd = sys.stdin.fileno() if sys.stdin.isatty() else None
    kernel = Kernel(feed.clock)
    loop = None
    try:
        with cbreak(fd) if fd is not None else contextlib.nullcontext(), \
                Live(console=console, auto_refresh=False, screen=console.is_terminal, redirect_stdout=False,
                     redirect_stderr=False, transient=False) as live:
            def draw(view):
                live.update(V.render(view, console.width, console.height), refresh=True)

            loop = LiveView(kernel, feed, draw, fps, stop, fd)
            loop.channels = channels
            kernel.run(until=until)
    finally:
        if loop is not None:
            loop.close()
        if own:
            feed.close()
    return (loop and loop.last) or feed.view()


def headless(feed: Feed, until: float, stop=None) -> None:
    """Keep the state fed (for the demo's summary) without drawing, until ``until`` (on the
    feed's clock), the daemon's shutdown or ``stop()`` returning true."""
    kernel = Kernel(feed.clock)

    def on_events():
        feed.drain()
        feed.fetch_missing()

    def check():
        if feed.state.shutdown or (stop is not None and stop()):
            kernel.stop()

    kernel.add_reader(feed.sub, on_events)
    kernel.every(STOP_POLL, check, first=feed.now())
    kernel.after_turn(check)
    kernel.run(until=until)


__all__ = ["LiveView", "cbreak", "headless", "once", "run"]
