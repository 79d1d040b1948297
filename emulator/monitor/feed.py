"""The monitor's data: the daemon as the monitor sees it (``Feed``): a client for the few
requests, a SUB socket for the events, and the MonitorState they feed.

The only requests sent are one ``status`` + ``nodes`` + ``queue --all`` at start and, batched
and at most once per ``fetch_missing`` interval, ``queue`` for the records of jobs first seen
in events (their submit time, run time and request). Between events the model time advances
with the clock (elapsed and remaining times keep moving). The clock is injected (the live
kernel's, emulator.live.kernel), so the loop that drives a Feed runs on a fake clock in tests.
"""
from __future__ import annotations

from pathlib import Path

import msgpack
import zmq

from emulator.live import auth
from emulator.live import home as homemod
from emulator.live import netlocal
from emulator.live import protocol as P
from emulator.live.client import Client, ClientError
from emulator.live.kernel import WallClock
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

    def __init__(self, home=None, endpoint: str | None = None, events: str | None = None, timeout: float = 5.0,
                 clock=None):
        self.clock = clock if clock is not None else WallClock()
        self.now = self.clock.now
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
        self.wall_anchor = self.last_event = self.now()
        self.last_fetch = self._links_at = -float("inf")
        self._links = {"links": None}

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
        self.wall_anchor = self.last_event = self.now()
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
                self.wall_anchor = self.now()
            n += 1
        if n:
            self.last_event = self.now()
        return n

    def fetch_missing(self, min_interval: float = 0.2) -> None:
        now = self.now()
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
        now = self.now()
        if now - self._links_at < every:
            return self._links
        self._links_at = now
        self._links = {"links": None}
        if self.home is None or homemod.read_pidfile(self.home / "interconnect.pid") is None:
            return self._links
        # one request with its timeout, on a connection of its own (emulator.live.netlocal)
        got = netlocal.request(str(self.home / "net.sock"), P.encode("net_links", id=1), 0.2)
        try:
            m = P.decode(got, max_size=P.MAX_REPLY) if got is not None else None
        except P.ProtocolError:
            m = None
        if m is not None and m["type"] == "ok":
            self._links = {"links": m["data"]}
        return self._links

    def model_now(self) -> float:
        s = self.state
        return s.now + max(0.0, self.now() - self.wall_anchor) / s.time_unit

    def view(self, paused=False) -> dict:
        return self.state.view(self.model_now(), paused=paused, stale=self.now() - self.last_event > STALE_AFTER)


def with_delays(view: dict, links: dict | None) -> None:
    """Each running job's mean message delay so far (network us) from the interconnect's
    ``net_links`` reply, beside it in the running table."""
    jobs = (links or {}).get("jobs") or {}
    for r in view["running"]:
        st = jobs.get(str(r["id"]))
        if st and st.get("mean_delay_us") is not None:
            r["delay_us"] = st["mean_delay_us"]


__all__ = ["STALE_AFTER", "Feed", "decode_event", "with_delays"]
