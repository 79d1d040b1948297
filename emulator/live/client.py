"""A small client of the daemon (the CLI is built on it).

    from emulator.live.client import Client
    with Client() as c:                    # MCEMU_HOME's ipc socket, or Client("tcp://...")
        jid = c.submit({"cube": 2}, runtime=5)
        c.queue(); c.nodes(); c.status(); c.cancel(jid)

Over tcp a cluster started with keys (``mcemu keys``) answers only a CURVE client: ``key`` (or
the environment's ``MCEMU_KEY``) names the credential file it was issued
(emulator.live.keys); without one, or with a revoked one, nothing answers (ClientTimeout).

Every call has a timeout (default 5 s) and raises :class:`ClientTimeout` when the daemon does
not answer, :class:`DaemonError` (with ``code``) when it refuses. The socket is a DEALER, so
:meth:`submit_many` can pipeline thousands of submissions with a bounded window.
"""
from __future__ import annotations

import itertools
import time

import zmq

from emulator.live import auth
from emulator.live import home as homemod
from emulator.live import protocol as P


RATE_WAIT = 0.05  # seconds submit_many waits after a refusal for the request rate (emulator.live.admission)


class ClientError(Exception):
    pass


class ClientTimeout(ClientError, TimeoutError):
    pass


class DaemonError(ClientError):
    def __init__(self, code: str, message: str):
        super().__init__(f"{message} ({code})")
        self.code = code


def _secure(sock, endpoint: str, key) -> None:
    path = auth.key_for(endpoint, key)
    if path:
        try:
            auth.curve_client(sock, path)
        except ValueError:
            sock.close(linger=0)
            raise


class Client:
    def __init__(self, endpoint: str | None = None, timeout: float = 5.0, home=None, key=None):
        if endpoint is None:
            endpoint = homemod.control_endpoint(homemod.home_dir() if home is None else home)
        else:
            endpoint = homemod.endpoint(endpoint)
        self.endpoint = endpoint
        self.timeout = timeout
        self.ctx = zmq.Context.instance()
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.SNDHWM, 100_000)
        self.sock.setsockopt(zmq.RCVHWM, 100_000)
        _secure(self.sock, endpoint, key)
        self.sock.connect(endpoint)
        self._ids = itertools.count(1)

    def close(self):
        self.sock.close(linger=0)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------------ plumbing

    def _timeout(self) -> ClientTimeout:
        hint = " (is the cluster up?" + (" a tcp cluster answers only a valid key: --key or MCEMU_KEY)"
                                         if self.endpoint.startswith("tcp://") else ")")
        return ClientTimeout(f"no answer from the daemon at {self.endpoint}{hint}")

    def _recv(self, deadline: float) -> dict:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not self.sock.poll(left * 1000):
                raise self._timeout()
            try:
                return P.decode(self.sock.recv(), max_size=P.MAX_REPLY)
            except P.ProtocolError:
                continue

    def _send(self, frame: bytes, deadline: float) -> None:
        # a connection the daemon refused (CURVE: no valid key) leaves the DEALER with no peer,
        # where a plain send blocks for ever
        if not self.sock.poll(max(0.0, deadline - time.monotonic()) * 1000, zmq.POLLOUT):
            raise self._timeout()
        self.sock.send(frame, flags=zmq.NOBLOCK)

    def request(self, type_: str, timeout: float | None = None, **fields):
        rid = next(self._ids)
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        self._send(P.encode(type_, id=rid, **fields), deadline)
        while True:
            m = self._recv(deadline)
            if m.get("id") != rid:
                continue  # a late answer to an earlier, timed-out request
            if m["type"] == "error":
                raise DaemonError(m["code"], m["message"])
            return m.get("data")

    # ------------------------------------------------------------------ API

    def ping(self, timeout=None) -> bool:
        return bool(self.request("ping", timeout)["pong"])

    def submit(self, request: dict, runtime: float, name: str = "", command: str | None = None,
               burn: bool = False, timeout=None, cwd: str | None = None, stdin: str | None = None) -> int:
        """``cwd``: the command's working directory on its nodes; ``stdin``: what rank 0 reads
        (absolute paths; None: the node agent's directory and /dev/null)."""
        f = {"request": request, "runtime": float(runtime)}
        if name:
            f["name"] = name
        if command:
            f["command"] = command
        if burn:
            f["burn"] = True
        if cwd:
            f["cwd"] = cwd
        if stdin:
            f["stdin"] = stdin
        return self.request("submit", timeout, **f)["job"]

    def submit_many(self, jobs, window: int = 512, timeout=None) -> list:
        """Submit ``jobs`` (dicts with request, runtime[, name, command, burn]) pipelined;
        returns their ids (or DaemonError instances for refused ones) in order."""
        jobs = list(jobs)
        out: list = [None] * len(jobs)
        pending: dict[int, int] = {}
        deadline_per = self.timeout if timeout is None else timeout
        todo = list(range(len(jobs) - 1, -1, -1))  # a stack: the next index last
        deadline = time.monotonic() + deadline_per
        resume = 0.0  # a rate-limited principal sends nothing more before this
        allowed = window  # halved by each refusal for the rate, grown back by each answer
        while todo or pending:
            while todo and len(pending) < allowed and time.monotonic() >= resume:
                i = todo.pop()
                rid = next(self._ids)
                j = {"request": jobs[i]["request"], "runtime": float(jobs[i]["runtime"])}
                for k in ("name", "command", "burn"):
                    if jobs[i].get(k):
                        j[k] = jobs[i][k]
                self._send(P.encode("submit", id=rid, **j), deadline)
                pending[rid] = i
            if not pending:
                time.sleep(max(0.0, resume - time.monotonic()))
                continue
            m = self._recv(deadline)
            idx = pending.pop(m.get("id"), None)
            if idx is None:
                continue
            deadline = time.monotonic() + deadline_per
            if m["type"] == "error" and m["code"] == "rate-limited":  # the daemon's admission: wait, resend
                todo.append(idx)
                resume = time.monotonic() + RATE_WAIT
                allowed = max(1, allowed // 2)
                continue
            allowed = min(window, allowed + 1)
            out[idx] = DaemonError(m["code"], m["message"]) if m["type"] == "error" else m["data"]["job"]
        return out

    def cancel(self, job: int, timeout=None, why: str | None = None) -> dict:
        """``why``: said in the job's reason after who cancelled it (``mcemu run``'s time limit)."""
        return self.request("cancel", timeout, job=int(job), **({"why": why[:200]} if why else {}))

    def tail(self, job: int, at: list[int], timeout=None) -> dict:
        """Job ``job``'s output from offsets ``at`` (one a rank): {"data": [[start, bytes], ...],
        "state"} (emulator.live.client_handlers ``on_tail``; ``mcemu run`` on another host)."""
        return self.request("tail", timeout, job=int(job), at=[int(x) for x in at])

    def queue(self, all: bool = False, jobs=None, timeout=None, page: int = P.QUEUE_PAGE) -> dict:
        """Every row, asked a page (``page`` rows) at a time: each page is a bounded slice of
        the daemon's loop and has its own ``timeout``. The rows of one listing are each
        true when its page was built, not all at one instant (like squeue's)."""
        f = {"all": bool(all), "limit": page}
        if jobs:
            f["jobs"] = [int(j) for j in jobs]
        out = self.request("queue", timeout, **f)
        while out.get("next") is not None:
            more = self.request("queue", timeout, **f, after=out["next"])
            out["jobs"] += more["jobs"]
            out["now"], out["next"] = more["now"], more["next"]
        del out["next"]
        return out

    def nodes(self, timeout=None) -> list[dict]:
        return self.request("nodes", timeout)["nodes"]

    def status(self, timeout=None) -> dict:
        return self.request("status", timeout)

    def shutdown(self, timeout=None) -> dict:
        return self.request("shutdown", timeout)

    def wait_until(self, predicate, timeout: float, interval: float = 0.05):
        """Poll ``predicate(self)`` until it returns something truthy; raise ClientTimeout
        at the deadline. Returns that value."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                v = predicate(self)
            except ClientTimeout:
                v = None
            if v:
                return v
            if time.monotonic() >= deadline:
                raise ClientTimeout(f"condition not met within {timeout} s")
            time.sleep(interval)


class Events:
    """Subscribe to the daemon's PUB socket: ``for topic, msg in Events().iter(timeout)``."""

    def __init__(self, endpoint: str | None = None, topics=(b"",), home=None, key=None):
        if endpoint is None:
            endpoint = homemod.events_endpoint(homemod.home_dir() if home is None else home)
        else:
            endpoint = homemod.endpoint(endpoint, "--events")
        self.sock = zmq.Context.instance().socket(zmq.SUB)
        self.sock.setsockopt(zmq.LINGER, 0)
        _secure(self.sock, endpoint, key)
        self.sock.setsockopt(zmq.RCVHWM, 1_000_000)
        for t in topics:
            self.sock.setsockopt(zmq.SUBSCRIBE, t)
        self.sock.connect(endpoint)

    def recv(self, timeout: float):
        if not self.sock.poll(timeout * 1000):
            return None
        topic, frame = self.sock.recv_multipart()
        return topic, P.decode(frame, max_size=P.MAX_REPLY)

    def close(self):
        self.sock.close(linger=0)


__all__ = ["Client", "ClientError", "ClientTimeout", "DaemonError", "Events"]
