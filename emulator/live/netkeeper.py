"""The interconnect's keeper (issue 30): the daemon watches the interconnect and restarts it.

Why the daemon: it is the one process that outlives the others' faults by design (a node, the
launcher, the interconnect), it has the journal's configuration, and it is the one that can act
on the jobs the dead interconnect carried. It watches the interconnect's process through a pidfd
(readable the moment the process ends, as it watches its nodes: no polling) and, when the
process ends while the cluster serves:

* every running job the interconnect had reported (``comm``: its tasks had said hello) is lost
  as a node fault is (``ProcessorManager._fault``: its tasks killed, the job requeued with the
  reason, or failed with it once it has used up ``max_requeue``); those tasks' own calls end at
  once with ``net-gone`` (nodes.comm watches its connection), so none hangs;
* a new interconnect starts on the same socket, with the journal's configuration, the way
  ``mcemu up`` starts one (``spawn``: its own session, so that it outlives a daemon recovery);
  new jobs' tasks find it serving;
* a crash loop is not a busy loop: restarts come at most once per ``BACKOFF`` (doubling up to
  ``BACKOFF_MAX``) while the interconnect dies within ``STABLE`` seconds of its start.

``mcemu down`` stops the daemon first (``shutdown``): from then on nothing is restarted.
"""
from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
from pathlib import Path

from emulator.live import config as configmod
from emulator.live import home as homemod

log = logging.getLogger("mcemu.netkeeper")

BACKOFF, BACKOFF_MAX, STABLE = 0.2, 10.0, 5.0  # seconds
WATCH_EVERY = 0.05  # seconds between looks for a starting interconnect's pidfile


def spawn(home: Path, cfg: dict) -> subprocess.Popen:
    """Start the interconnect of the cluster in ``home`` (``cfg``: its settings), logging to
    ``interconnect.log``; it writes ``interconnect.pid`` once it serves."""
    argv = [sys.executable, "-m", "emulator.live.interconnect", "--home", str(home),
            *configmod.argv(configmod.INTERCONNECT, cfg)]
    with open(Path(home) / "interconnect.log", "ab") as f:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT,
                                start_new_session=True, close_fds=True)


class NetKeeper:
    """Watch and restart the interconnect of ``manager``'s cluster (module docstring); ``kernel``:
    the daemon's loop. ``restarts``: how many it made."""

    def __init__(self, manager, kernel):
        self.m, self.kernel = manager, kernel
        self.home = Path(manager.home)
        self.pid = self.fd = None
        self.child: subprocess.Popen | None = None
        self.restarts = 0
        self.backoff = BACKOFF
        self.started_at = None
        self._look = None

    def attach(self) -> None:
        """Watch the interconnect ``mcemu up`` started (looking for it until it has written its
        pidfile)."""
        self._looking()

    def _looking(self) -> None:
        if self._look is None:
            self._look = self.kernel.every(WATCH_EVERY, self._find)
        self._find()

    def _find(self) -> None:
        if self.fd is not None or not self.m.running:
            return
        p = homemod.read_pidfile(self.home / "interconnect.pid")
        if p is None:
            if self.child is not None and self.child.poll() is not None:
                self._died()  # it ended before it served
            return
        try:
            fd = os.pidfd_open(p.pid)
        except OSError:
            return  # ended between the read and the open: the next look starts one
        self.pid, self.fd = p.pid, fd
        self.kernel.add_reader(fd, self._died)
        self._look.cancel()
        self._look = None

    def _died(self) -> None:
        if self.fd is not None:
            self.kernel.remove_reader(self.fd)
            os.close(self.fd)
            self.fd = None
        if self.child is not None and self.child.poll() is not None:
            self.child = None  # reaped: our own child, no zombie left
        if not self.m.running:  # a shutdown (``mcemu down``): nothing is restarted any more
            return
        now = self.m.now()
        why = f"the interconnect (pid {self.pid}) died; restarted" if self.pid else "the interconnect died"
        log.warning("%s", why)
        self._requeue(why)
        quick = self.started_at is not None and now - self.started_at < STABLE
        self.backoff = min(BACKOFF_MAX, self.backoff * 2) if quick else BACKOFF
        self.pid = None
        self.kernel.call_later(self.backoff, self._restart)

    def _requeue(self, why: str) -> None:
        m = self.m
        for jr in [j for j in m.jobs.values() if j.state == "running" and j.comm is not None]:
            jr.comm = {**jr.comm, "final": True}  # a dead interconnect sends no last report: these are its totals
            m._fault(jr, None, why)

    def _restart(self) -> None:
        if not self.m.running:  # a shutdown came meanwhile (``mcemu down``)
            return
        if self.fd is None and homemod.read_pidfile(self.home / "interconnect.pid") is None:
            self.restarts += 1
            self.started_at = self.m.now()
            self.child = spawn(self.home, self.m.cfg)
            log.info("interconnect restarted (pid %d), restart %d", self.child.pid, self.restarts)
        self._looking()

    def stop(self) -> None:
        """The daemon stops: the interconnect it started itself (a restart: its child) goes too,
        by pid (SIGTERM; the interconnect's own clean-up), and is reaped."""
        child, self.child = self.child, None
        if child is not None and child.poll() is None:
            try:
                child.terminate()
                child.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                with contextlib.suppress(OSError):
                    child.kill()


__all__ = ["NetKeeper", "spawn"]
