"""``mcemu run``'s stdin, given to rank 0 as mpiexec gives it: a FIFO in ``$MCEMU_HOME/input``
(0600, in a 0700 directory) that the job names (``stdin``, an absolute path) and rank 0's shell
opens as its stdin (nodes.spawn.task_command), fed from this command's stdin by a thread as the
data comes. A FIFO rather than a copy made before the submit: a copy waits for the end of its
input, and a pipe nobody closes (a CI runner's stdin, ``tail -f log | mcemu run ...``) would
hold the job back for ever; through the FIFO rank 0 reads each line as soon as it is written.

A TTY is not read (rank 0 gets /dev/null): a ``mcemu run ... &`` of an interactive shell that
read its terminal would be stopped (SIGTTIN), as srun and mpiexec are. Neither is /dev/null.

A FIFO is named after the command that made it, its pid and create time (``run-PID-CT-X.fifo``,
CT in hundredths of a second): a command killed with SIGKILL cannot remove its own, so the next
``mcemu run`` and ``mcemu down`` remove (:func:`sweep`) every FIFO whose maker is gone, a pid
since reused by another process included (another create time). A job whose rank 0 has not yet
opened such a FIFO then fails to start (exit 127) rather than wait for ever for a writer.
"""
from __future__ import annotations

import os
import re
import secrets
import stat
import threading
from pathlib import Path

import psutil

CHUNK = 1 << 16
# the older names carry the pid alone
_NAME = re.compile(r"run-(\d+)-(?:(\d+)-)?[0-9a-f]+\.fifo")


def _maker_alive(pid: int, ct: int | None) -> bool:
    try:
        p = psutil.Process(pid)
        if p.status() == psutil.STATUS_ZOMBIE:
            return False
        # psutil's create time is boot time + start ticks: the same float at every reading
        return ct is None or abs(round(p.create_time() * 100) - ct) <= 1
    except psutil.Error:
        return False


def sweep(home: Path) -> list[Path]:
    """Remove the FIFOs of ``home``'s input directory whose ``mcemu run`` is gone; those removed.
    Anything else there (a file of another name or kind) is left alone."""
    removed = []
    try:
        entries = list(os.scandir(home / "input"))
    except OSError:  # no input directory: no ``mcemu run`` ever read a stdin here
        return removed
    for e in entries:
        m = _NAME.fullmatch(e.name)
        try:
            if not m or not stat.S_ISFIFO(e.stat(follow_symlinks=False).st_mode):
                continue
            if not _maker_alive(int(m[1]), int(m[2]) if m[2] else None):
                os.unlink(e.path)
                removed.append(Path(e.path))
        except FileNotFoundError:  # removed meanwhile: its command ended, or another sweep
            pass
    return removed


def wanted(fd: int = 0) -> bool:
    """Whether this command's stdin has anything to give: open, not a terminal, not /dev/null."""
    try:
        st = os.fstat(fd)
    except OSError:
        return False
    return not stat.S_ISCHR(st.st_mode)  # a terminal or /dev/null (or another device: not read either)


class StdinPump:
    """The FIFO and the thread that feeds it. One round per attempt of the job: open (blocks
    until rank 0 opens its end), copy until this stdin's end (then close: rank 0 reads EOF) or
    rank 0's (its attempt ended: what it did not read is kept), and wait for :meth:`again`
    (a requeued job's new rank 0) before the next. Closed by :meth:`close` (the FIFO removed);
    the thread is a daemon's: it may be blocked in an open or a read when this command exits."""

    def __init__(self, home: Path, src: int = 0):
        d = home / "input"
        d.mkdir(mode=0o700, exist_ok=True)
        ct = round(psutil.Process().create_time() * 100)
        self.path = d / f"run-{os.getpid()}-{ct}-{secrets.token_hex(4)}.fifo"
        os.mkfifo(self.path, 0o600)
        self.src = src
        self.pending, self.eof = b"", False
        self.next = threading.Event()
        self.thread = threading.Thread(target=self._pump, name="stdin", daemon=True)
        self.thread.start()

    def again(self) -> None:
        self.next.set()

    def close(self) -> None:
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass

    def _pump(self) -> None:
        while True:
            try:
                fd = os.open(self.path, os.O_WRONLY)
            except OSError:  # removed: this command is ending
                return
            try:
                self._round(fd)
            except OSError:  # BrokenPipeError: rank 0 ended; another error: nothing more to give
                pass
            finally:
                os.close(fd)
            self.next.wait()
            self.next.clear()

    def _round(self, fd: int) -> None:
        while True:
            if not self.pending:
                if self.eof:
                    return
                self.pending = os.read(self.src, CHUNK)
                if not self.pending:
                    self.eof = True
                    return
            n = os.write(fd, self.pending)
            self.pending = self.pending[n:]
