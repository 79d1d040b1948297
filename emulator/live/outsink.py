"""The daemon's side of a remote node's task output: ``output`` frames written into the
daemon's own ``output/job<ID>.<RANK>.out``, the file ``mcemu run`` follows (emulator.cli.run).

A node writes its tasks' output in its own output directory; when that is not the daemon's
(another host, another MCEMU_HOME) ``mcemu run`` could not see it. Which directory is the
daemon's is decided by an id, not by a path (a path means nothing on another host, and two
paths may name one directory): the daemon keeps a random id in ``output/.mcemu-output-id``
(:func:`output_id`) and hands it to every node in its ``welcome``; a node whose output
directory holds another id, or none, forwards (nodes.outfwd). A node of the daemon's own
directory does not, so no line is written twice.

What a frame may do (the daemon never dies of one, and a refused one changes nothing):

* only the node that runs the task writes its output: job running, that attempt, the rank
  placed on that node and not ended yet (a task's last output comes before its ``task_done``
  on the same connection, so the file is complete when the job's end is processed);
* job, attempt and rank are integers (the schema's), the file name is made of them alone;
  a frame holds at most MAX_CHUNK bytes (the schema refuses more);
* offsets make it idempotent: what the daemon already has is skipped (a node sends all again
  from the start when it registers again), a frame past it (one was lost) is answered
  ``output_at`` with the offset the daemon has, once per offset (again after ASK_AGAIN); a
  restarted daemon rewrites the file in place, not truncated (``mcemu run`` reads on from where
  it was), when the marker beside it names this attempt of this cluster;
* a task's file holds at most MAX_OUTPUT bytes (64 MiB), then one line saying it was cut.
"""
from __future__ import annotations

import logging
import os
import pwd
import secrets
from pathlib import Path

from emulator.live import protocol as P

log = logging.getLogger("mcemu.daemon")

MAX_OUTPUT = 64 * 1024 * 1024  # bytes of one task's output the daemon writes; past it, one line
ID_FILE = ".mcemu-output-id"
ASK_AGAIN = 1.0  # seconds after which a gap still there is answered again


def output_id(outdir: Path) -> str | None:
    """The id kept in ``outdir`` (None: none, or unreadable)."""
    try:
        text = (Path(outdir) / ID_FILE).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text if 0 < len(text) <= 64 and text.isalnum() else None


def make_output_id(outdir: Path) -> str:
    """The id of ``outdir``, made once (kept over restarts: nodes welcomed before a restart
    still compare against the same)."""
    outdir.mkdir(mode=0o700, parents=True, exist_ok=True)
    got = output_id(outdir)
    if got is not None:
        return got
    new = secrets.token_hex(16)
    tmp = outdir / f"{ID_FILE}.{os.getpid()}"
    tmp.write_text(new + "\n")
    os.replace(tmp, outdir / ID_FILE)  # atomic: a node never reads half an id
    return new


class _Out:
    """One task's forwarded output: the attempt it belongs to, the bytes of the node's file
    taken so far (``at``), whether the cap was reached, the offset an ``output_at`` asked for
    and when."""
    __slots__ = ("attempt", "at", "cut", "asked")

    def __init__(self, attempt):
        self.attempt, self.at, self.cut, self.asked = attempt, 0, False, (None, 0.0)


class OutputSink:
    """``on_output(nr, m)``: the handler of ``output`` (emulator.live.daemon's node_dispatch)."""

    def __init__(self, manager, outdir: Path):
        self.m = manager
        self.dir = Path(outdir)
        try:
            self.id = make_output_id(self.dir)
        except OSError as e:  # the daemon serves on; its nodes then keep their output where they are
            log.warning("no output id in %s (%s): nodes of other hosts will not send their output", outdir, e)
            self.id = None
        self.outs: dict[tuple, _Out] = {}  # (job, rank) -> its state, while the job runs
        self.keep = 64  # entries past which the ended jobs' are dropped (doubles with the live ones)

    def on_output(self, nr, msg) -> None:
        jid, att, rank = msg["job"], msg["attempt"], msg["rank"]
        jr = self.m.jobs.get(jid)
        if jr is None or jr.state != "running" or jr.attempt != att or rank in jr.done:
            # a task killed or requeued meanwhile: its last frames are late, not wrong
            log.debug("node %d: output of job %d attempt %d rank %d dropped: not a running task", nr.id, jid, att, rank)
            return
        if rank >= len(jr.nodes) or jr.nodes[rank] != nr.id or not jr.command:
            log.warning("node %d sent output of job %d rank %d, a task it does not run: refused", nr.id, jid, rank)
            return self.m._error(nr.ident, "forbidden", f"node {nr.id} does not run rank {rank} of job {jid}")
        st = self._state(jid, rank, att)
        off, data = msg["offset"], msg["data"]
        if off > st.at:
            now = self.m.clock()
            # once per gap (the frames already on their way would ask again), unless that answer
            # was lost with its connection
            if st.asked[0] != st.at or now - st.asked[1] > ASK_AGAIN:
                st.asked = (st.at, now)
                self.m.outbox.append((nr.ident, P.encode_unchecked("output_at", job=jid, attempt=att, rank=rank,
                                                                   offset=st.at)))
            return
        data = data[st.at - off:]  # what the daemon has already is skipped: a resend
        if data:
            self._write(jr, rank, st, data)

    def _state(self, jid, rank, att) -> _Out:
        st = self.outs.get((jid, rank))
        if st is None or st.attempt != att:
            if len(self.outs) >= self.keep:
                self._prune()
            st = self.outs[(jid, rank)] = _Out(att)
            # a new attempt's file starts empty (not an older attempt's, nor an older cluster's
            # job of this id: ``mcemu run`` sees the truncation and reads it from the start); the
            # attempt this daemon began, or one before its restart, is rewritten in place as the
            # node sends it again from its start (truncated, ``mcemu run`` would show it twice)
            mark = f"{att} {self.m.t0!r}"
            if self._mark(jid, rank) != mark:
                self._open(jid, rank, truncate=True, jr=self.m.jobs[jid])
                self._mark(jid, rank, mark)
        return st

    def _mark(self, jid, rank, mark: str | None = None) -> str | None:
        """The attempt (and cluster: its t0) whose output file/job<ID>.<RANK>.out holds, kept
        beside it; with ``mark``: written."""
        path = self.dir / f".job{int(jid)}.{int(rank)}.attempt"
        try:
            if mark is None:
                return path.read_text()
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(mark)
        except (OSError, UnicodeDecodeError):
            pass
        return None

    def _prune(self) -> None:
        jobs = self.m.jobs
        self.outs = {k: v for k, v in self.outs.items()
                     if (jr := jobs.get(k[0])) is not None and jr.state == "running" and jr.attempt == v.attempt}
        self.keep = max(64, 2 * len(self.outs))

    def _write(self, jr, rank, st, data: bytes) -> None:
        room = MAX_OUTPUT - st.at
        keep = data[:max(0, room)]
        at = min(st.at, MAX_OUTPUT)  # where in the file: the node's offset, up to the cap
        st.at += len(data)
        if st.cut:
            return
        if len(data) > room:
            st.cut = True
            nl = b"\n" if keep and not keep.endswith(b"\n") else b""
            keep += nl + (f"mcemu: the output of rank {rank} was cut here: the daemon keeps at most "
                          f"{MAX_OUTPUT >> 20} MiB of a task's output\n").encode()
        self._open(jr.id, rank, data=keep, at=at, jr=jr)

    def _open(self, jid, rank, truncate=False, data=b"", at=0, jr=None) -> None:
        path = self.dir / f"job{int(jid)}.{int(rank)}.out"
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_TRUNC if truncate else 0)
        try:
            fd = os.open(path, flags, 0o600)
        except OSError as e:
            log.warning("job %d rank %d: cannot write its output to %s: %s", jid, rank, path, e)
            return
        try:
            if truncate:
                self._hand_over(fd, jr)
            while data:
                n = os.pwrite(fd, data, at)
                data, at = data[n:], at + n
        except OSError as e:
            log.warning("job %d rank %d: writing its output to %s: %s", jid, rank, path, e)
        finally:
            os.close(fd)

    @staticmethod
    def _hand_over(fd, jr) -> None:
        """The file of a job that runs as another account is that account's, as a node of this
        host makes it (nodes.spawn): the job's owner reads it with ``mcemu run``."""
        user = getattr(jr, "user", None)
        if user and os.geteuid() == 0:
            try:
                pw = pwd.getpwnam(user)
            except KeyError:
                return
            if pw.pw_uid != 0:
                os.fchown(fd, pw.pw_uid, pw.pw_gid)


__all__ = ["MAX_OUTPUT", "OutputSink", "make_output_id", "output_id"]
