"""``mcemu run``'s stdin, given to rank 0 as mpiexec gives it: a FIFO in ``$MCEMU_HOME/input``
(0600, in a 0700 directory) that the job names (``stdin``, an absolute path) and rank 0's shell
opens as its stdin (nodes.spawn.task_command), fed from this command's stdin by a thread as the
data comes. A FIFO rather than a copy made before the submit: a copy waits for the end of its
input, and a pipe nobody closes (a CI runner's stdin, ``tail -f log | mcemu run ...``) would
hold the job back for ever; through the FIFO rank 0 reads each line as soon as it is written.

A TTY is not read (rank 0 gets /dev/null): a ``mcemu run ... &`` of an interactive shell that
read its terminal would be stopped (SIGTTIN), as srun and mpiexec are. Neither is /dev/null.
"""
from __future__ import annotations

import os
import secrets
import stat
import threading
from pathlib import Path

CHUNK = 1 << 16


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
        self.path = d / f"run-{os.getpid()}-{secrets.token_hex(4)}.fifo"
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
