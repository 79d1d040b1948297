"""The monitor's loop: subscribe to the daemon's PUB socket, feed a MonitorState, redraw.

One ``zmq.Poller`` waits on the SUB socket and (on a TTY) stdin in cbreak mode, with a
timeout equal to the time left to the next frame, so the loop sleeps until an event, a key or
the frame is due: no polling of the daemon. The only requests sent are one ``status`` +
``nodes`` + ``queue --all`` at start and, batched and at most once per frame, ``queue`` for
the records of jobs first seen in events (their submit time, run time and request).

Frames: Rich ``Live`` with ``auto_refresh=False``; the loop redraws ``fps`` times a second
(default 5) on the alternate screen when stdout is a TTY. Between events the model time of a
frame advances with the wall clock (elapsed and remaining times keep moving).
"""
from __future__ import annotations

import contextlib
import json
import os
import sys
import termios
import time
import tty
from pathlib import Path

import msgpack
import zmq
from rich.console import Console
from rich.live import Live

from emulator.jsonable import jsonable
from emulator.live import home as homemod
from emulator.live import protocol as P
from emulator.live import auth
from emulator.live.client import Client, ClientError
from emulator.monitor import view as V
from emulator.monitor.model import MonitorState

STALE_AFTER = 3.5  # seconds without any event: say so in the header


def decode_event(frames) -> tuple[str, dict] | None:
    """``[topic, frame]`` from the PUB socket, or None for anything malformed. A snapshot
    whose maps have integer keys (which the strict protocol decoder refuses) is accepted
    here with the same shape checks."""
    if len(frames) != 2:
        return None
    topic, frame = frames
    try:
        return topic.decode(), P.decode(frame, max_size=P.MAX_REPLY)
    except (P.ProtocolError, UnicodeDecodeError):
        pass
    if topic != b"snapshot" or len(frame) > P.MAX_REPLY:
        return None
    try:
        m = msgpack.unpackb(frame, raw=False, strict_map_key=False)
    except Exception:  # any msgpack failure means the same: not an event
        return None
    if not isinstance(m, dict) or m.get("v") != P.VERSION or m.get("type") != "snapshot" \
            or not isinstance(m.get("data"), dict) or not isinstance(m.get("t"), (int, float)):
        return None
    return "snapshot", m


class Feed:
    """The daemon as seen by the monitor: a client for the few requests, a SUB socket for
    the events, and the MonitorState they feed."""

    def __init__(self, home=None, endpoint: str | None = None, events: str | None = None, timeout: float = 5.0):
        home = homemod.home_dir() if home is None and endpoint is None else home
        self.home = None if home is None else Path(home)  # the interconnect is local (ipc) only
        self.client = Client(endpoint, timeout=timeout, home=home)
        self.sub = zmq.Context.instance().socket(zmq.SUB)
        self.sub.setsockopt(zmq.LINGER, 0)
        self.sub.setsockopt(zmq.RCVHWM, 1_000_000)
        self.sub.setsockopt(zmq.SUBSCRIBE, b"")
        if events:
            ev = homemod.endpoint(events, "--events")
        else:  # beside the control endpoint: a monitor on another host needs only --connect
            ev = homemod.events_for(self.client.endpoint)
        key = auth.key_for(ev, None)  # the same credential as the client's (MCEMU_KEY, or --key)
        if key:
            auth.curve_client(self.sub, key)
        self.sub.connect(ev)
        self.state: MonitorState | None = None
        self.wall_anchor = time.monotonic()
        self.last_event = time.monotonic()
        self.last_fetch = 0.0

    def close(self):
        self.sub.close(linger=0)
        self.client.close()

    def sync(self) -> MonitorState:
        """The full picture by request (start-up and ``--once``)."""
        st = self.client.status()
        s = MonitorState.from_status(st)
        s.apply_nodes(self.client.nodes())
        s.apply_jobs(self.client.queue(all=True)["jobs"])
        self.state = s
        self.wall_anchor = time.monotonic()
        self.last_event = time.monotonic()
        return s

    def drain(self, limit: int = 20000) -> int:
        """Apply every event waiting on the SUB socket; returns how many."""
        n = 0
        s = self.state
        while n < limit:
            try:
                frames = self.sub.recv_multipart(flags=zmq.NOBLOCK)
            except zmq.Again:
                break
            ev = decode_event(frames)
            if ev is None:
                continue
            before = s.now
            s.apply_event(*ev)
            if s.now > before:
                self.wall_anchor = time.monotonic()
            n += 1
        if n:
            self.last_event = time.monotonic()
        return n

    def fetch_missing(self, min_interval: float = 0.2) -> None:
        now = time.monotonic()
        if now - self.last_fetch < min_interval:
            return
        ids = self.state.missing()
        if not ids:
            return
        self.last_fetch = now
        try:
            rows = self.client.queue(jobs=ids, timeout=1.0)["jobs"]
        except ClientError:
            return
        self.state.apply_jobs(rows)
        for jid in set(ids) - {r["id"] for r in rows}:  # unknown to the daemon: stop asking
            self.state.jobs[jid].known = True

    def links(self, every: float = 1.0) -> dict:
        """The channel view's data: the interconnect's ``net_links`` (emulator.live.netlinks),
        asked at most every ``every`` seconds; {"links": None} without an interconnect."""
        now = time.monotonic()
        if now - getattr(self, "_links_at", 0.0) < every:
            return self._links
        self._links_at = now
        self._links = {"links": None}
        if self.home is None or homemod.read_pidfile(self.home / "interconnect.pid") is None:
            return self._links
        s = zmq.Context.instance().socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        try:
            s.connect(homemod.ipc_endpoint(self.home, "net.sock"))
            s.send(P.encode("net_links", id=1))
            if s.poll(200):
                m = P.decode(s.recv(), max_size=P.MAX_REPLY)
                if m["type"] == "ok":
                    self._links = {"links": m["data"]}
        except (zmq.ZMQError, P.ProtocolError):
            pass
        finally:
            s.close()
        return self._links

    def model_now(self) -> float:
        s = self.state
        return s.now + max(0.0, time.monotonic() - self.wall_anchor) / s.time_unit

    def view(self, paused=False) -> dict:
        return self.state.view(self.model_now(), paused=paused,
                               stale=time.monotonic() - self.last_event > STALE_AFTER)


def _with_delays(view: dict, links: dict | None) -> None:
    """Each running job's mean message delay so far (network us) from the interconnect's
    ``net_links`` reply, beside it in the running table."""
    jobs = (links or {}).get("jobs") or {}
    for r in view["running"]:
        st = jobs.get(str(r["id"]))
        if st and st.get("mean_delay_us") is not None:
            r["delay_us"] = st["mean_delay_us"]


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
        _with_delays(view, feed.links().get("links"))
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
        stop=None, console=None, feed: Feed | None = None) -> dict:
    """The live view until q, the daemon's shutdown, ``until`` (a time.monotonic() deadline)
    or ``stop()`` returning true. Returns the last view dict."""
    own = feed is None
    if own:
        feed = Feed(home, endpoint, events)
    if feed.state is None:
        feed.sync()
    console = console or Console()
    tty_in = sys.stdin.isatty()
    fd = sys.stdin.fileno() if tty_in else None
    poller = zmq.Poller()
    poller.register(feed.sub, zmq.POLLIN)
    if fd is not None:
        poller.register(fd, zmq.POLLIN)
    period = 1.0 / fps
    paused = False
    channels = False  # the channel view (key c)
    frozen = None
    last = None
    ctx = cbreak(fd) if fd is not None else contextlib.nullcontext()
    try:
        with ctx, Live(console=console, auto_refresh=False, screen=console.is_terminal,
                       redirect_stdout=False, redirect_stderr=False, transient=False) as live:
            next_frame = time.monotonic()
            while True:
                now = time.monotonic()
                if until is not None and now >= until or (stop is not None and stop()):
                    break
                if now >= next_frame:
                    last = feed.view()
                    shown = frozen if paused else last
                    shown["title"]["paused"] = paused
                    links = feed.links()
                    if channels:
                        shown["channels"] = links
                    _with_delays(shown, links.get("links"))
                    live.update(V.render(shown, console.width, console.height), refresh=True)
                    next_frame = now + period
                    if feed.state.shutdown:
                        break
                wait = max(0.0, next_frame - time.monotonic())
                if until is not None:
                    wait = min(wait, max(0.0, until - time.monotonic()))
                ready = dict(poller.poll(wait * 1000))
                if feed.sub in ready:
                    feed.drain()
                    feed.fetch_missing()
                if fd is not None and fd in ready:
                    keys = os.read(fd, 64).decode(errors="ignore").lower()
                    if "q" in keys:
                        break
                    if "c" in keys:
                        channels = not channels
                        next_frame = 0.0
                    if "p" in keys:
                        paused = not paused
                        frozen = feed.view()
                        next_frame = 0.0
    finally:
        if own:
            feed.close()
    return last or feed.view()


def headless(feed: Feed, until: float, stop=None) -> None:
    """Keep the state fed (for the demo's summary) without drawing."""
    while time.monotonic() < until and not (stop is not None and stop()) and not feed.state.shutdown:
        if feed.sub.poll(max(0.0, min(0.25, until - time.monotonic())) * 1000):
            feed.drain()
            feed.fetch_missing()


__all__ = ["Feed", "decode_event", "once", "run", "headless"]
