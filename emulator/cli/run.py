"""``mcemu run``: run a program on the live cluster in the foreground, as ``srun`` / ``mpiexec`` do.

``mcemu run -n 16 [--shape 4x4 | --cube 4] python prog.py ARGS`` submits a command job (the
program and its arguments, shell-quoted: ``mcemu submit --command`` runs the same in the
background; emulator.cli.jobs), waits for it to start, streams its ranks' output to the
terminal as they write it (``--label``: each line prefixed ``RANK: ``, as ``srun --label``),
and exits with the job's status: 0 when it completed; a failing rank's exit status (128 + N
for a rank killed by signal N) where it is known, else 1 (also when ``mcemu down`` stops the
cluster under it); 130 after Ctrl-C, which cancels the job (so do SIGTERM and SIGHUP; while
this host's daemon is down, the cancel is recorded in the home and done when it recovers).

**Output.** Every rank's stdout and stderr go to one file on its node,
``$MCEMU_HOME/output/job<ID>.<RANK>.out`` (nodes.spawn), and this command follows those files
in the daemon's home. A node whose output directory is another one (``mcemu node`` on another
host, or with another MCEMU_HOME or ``--output-dir``) also sends its ranks' output to the daemon
as they write it (nodes.outfwd, emulator.live.outsink): the daemon writes it into its own
``output/``, where it is streamed as a local rank's (its lines come about as fast, and all of
them before the job's end; the daemon keeps at most 64 MiB of a rank's output, then one line
says it was cut). With ``--connect tcp://...`` (a daemon of another host: this host has not
its ``output/``) this command asks the daemon for what is new at each poll (``tail``, at most
128 KiB a reply; the job's owner's and the admin's only). The program runs with ``PYTHONUNBUFFERED=1``:
a Python rank's lines appear as it prints them, not when its buffer fills. A requeued job (a
node died) starts its files afresh; this command says so (``job 7 requeued: node 1 process 4242
ended (attempt 2: its ranks start over)``) and the lines of the new attempt follow.

**Where, and stdin.** Every rank starts in the caller's working directory (``-D DIR``: another;
a directory missing on a node's host fails that rank, which cannot start). Rank 0 reads this
command's stdin as it comes (emulator.cli._stdin), when it is a file or a pipe and the nodes are
this host's; a terminal is not read (rank 0, as every other rank, gets /dev/null), nor anything
with ``--input none``. A requeued job's rank 0 reads on from where its previous one stopped.

**Output of this job only.** An output file last written before this command submitted its job
(an older cluster's job of the same id on this home) is not shown: the node truncates it when
the rank starts, and it is read from then on.

**Time limit.** The daemon's policies want a run time; a program's is ``--time`` seconds
(:data:`DEFAULT_TIME`, an hour, by default), converted to the cluster's time unit. This command
cancels the job when it has run that long (the daemon itself does not end a command job).
"""
from __future__ import annotations

import os
import shlex
import signal
import sys
import time
from pathlib import Path

from emulator.cli import UsageError
from emulator.cli import _stdin
from emulator.cli._client import FINISHED, client_options, connect, printable, ranges
from emulator.cli.jobs import _parse_request, stopped
from emulator.live import home as homemod

DEFAULT_TIME = 3600.0  # seconds: a program's time limit unless --time
POLL = 0.1  # seconds between two looks at the job and its output files
TAIL_ROUNDS = 8  # a far daemon's replies one poll asks for while it has more (8 x 128 KiB)
# an output file last written this long before the submit is an older job's: a file's times come
# from the kernel's coarse clock, a tick (at most 10 ms) behind the one time.time() reads
STALE = 0.5
# a requeued job's new attempt started this long before the wall time its record and the
# daemon's clock give (the answer's way here, the coarse clock): its files are written since
RESTART_SLACK = 0.1


class Output:
    """The ranks' output files of one job, followed: each poll writes their new complete lines
    (``label``: prefixed ``RANK: ``) to ``sink``, rank by rank. ``outdir``: the daemon's
    ``output/`` on this host; None with ``client``: a daemon of another host, asked for them
    (``tail``: emulator.live.client_handlers ``on_tail``)."""

    def __init__(self, outdir: Path | None, job: int, label: bool, sink=None, since: float = 0.0, unit=1.0,
                 client=None):
        self.outdir, self.job, self.label, self.client = outdir, job, label, client
        self.unit = unit  # seconds a model time unit
        self.sink = sink or sys.stdout.buffer
        self.at: dict[int, int] = {}  # rank -> bytes read
        self.partial: dict[int, bytes] = {}  # rank -> an unfinished last line
        self.since = since  # wall time: a file not written since is another job's (module docstring)
        # a requeued job's ranks whose file is still the earlier attempt's, and when the new one
        # started (wall time): a file written since was truncated by the new rank, however long
        # it has grown meanwhile (its size alone tells only while it is shorter than was read)
        self.old: set[int] = set()
        self.restart = 0.0
        self.attempt = None  # the attempt whose files a daemon of another host answers of (``tail``)
        self.more = False  # its last answer was cut at its bound: more is there now

    def again(self, started: float) -> None:
        """The job was requeued: its new attempt started at wall time ``started`` (a daemon of
        another host tells which of its files are the new attempt's itself: read from their start)."""
        self.old, self.restart = set(self.at), started
        if self.outdir is None:
            self.at, self.partial, self.attempt = {}, {}, None

    def poll(self, ranks: int, final: bool = False) -> None:
        if self.outdir is None and self.client is None:
            return
        rounds = 0
        while True:
            before = dict(self.at)
            got = self._fetch(ranks)
            rounds += 1
            # a far daemon's reply is bounded (TAIL_BYTES): ask again at once while it says it has
            # more (TAIL_ROUNDS a poll), and at the end until nothing is new; only then end the
            # last lines that have no newline
            more = self.outdir is None and (final and self.at != before or self.more and rounds < TAIL_ROUNDS)
            self._write(got, final and not more)
            if not more:
                return

    def _write(self, got: dict, final: bool) -> None:
        wrote = False
        for r in sorted(got):
            data = got[r]
            if final and data and not data.endswith(b"\n"):
                # the last line had no newline; a line begun at the previous poll and ended now
                # is whole (it got an empty line after it when the old partial was looked at)
                data += b"\n"
            if not data:
                continue
            lines = data.split(b"\n")
            self.partial[r] = lines.pop()
            prefix = f"{r}: ".encode() if self.label else b""
            self.sink.write(b"".join(prefix + line + b"\n" for line in lines))
            wrote = True
        if wrote:
            self.sink.flush()

    def _fetch(self, ranks: int) -> dict:
        """rank -> its unfinished line and the bytes new since the last poll."""
        if self.outdir is not None:
            return {r: self._read(r) for r in range(ranks)}
        from emulator.live.client import ClientTimeout, DaemonError  # lazy: see emulator.cli.jobs

        at = [self.at.get(r, 0) for r in range(ranks)]
        try:
            reply = self.client.tail(self.job, at) if ranks else {"data": []}
        except (ClientTimeout, DaemonError):  # the next poll asks again
            return {}
        rows, attempt, self.more = reply["data"], reply.get("attempt"), bool(reply.get("more"))
        if self.attempt is None:
            self.attempt = attempt
        elif attempt != self.attempt:  # offsets of the last attempt's files: again() starts anew
            return {}
        got = {}
        for r, (start, data) in enumerate(rows[:ranks]):
            if start < at[r]:  # its file begun afresh: a new attempt's
                self.partial[r] = b""
            self.at[r] = start + len(data)
            got[r] = self.partial.get(r, b"") + data
        return got

    def _read(self, rank: int) -> bytes:
        path = self.outdir / f"job{self.job}.{rank}.out"
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                if st.st_mtime < self.since:
                    return b""
                size = st.st_size
                if size < self.at.get(rank, 0) or (rank in self.old and st.st_mtime >= self.restart):
                    self.at[rank], self.partial[rank] = 0, b""  # truncated: a new attempt's file
                    self.old.discard(rank)
                f.seek(self.at.get(rank, 0))
                data = f.read()
        except FileNotFoundError:
            return b""
        self.at[rank] = self.at.get(rank, 0) + len(data)
        return self.partial.get(rank, b"") + data


def _request(args) -> dict:
    """``-n`` alone asks for that many nodes; with ``--shape``/``--cube`` it must agree."""
    if args.nodes is None and args.shape is None and args.cube is None:
        raise UsageError("give -n N (and optionally --shape WxH or --cube D)")
    if args.nodes is not None and args.nodes < 1:
        raise UsageError(f"-n must be >= 1, got {args.nodes}")
    request = _parse_request(args)
    size = (1 << request["cube"] if "cube" in request else
            request["shape"][0] * request["shape"][1] if "shape" in request else request["nodes"])
    if args.nodes is not None and args.nodes != size:
        raise UsageError(f"-n {args.nodes} but {'--cube' if 'cube' in request else '--shape'} asks for {size} nodes")
    return request


def _name(program: list[str]) -> str:
    """The job's name: the script's (``python prog.py`` -> prog.py), else the program's."""
    script = next((a for a in program[1:] if a.endswith(".py")), None)
    return os.path.basename(script or program[0])


def _outdir(args) -> Path | None:
    """Where this host's nodes write the ranks' output (None: a daemon of another host)."""
    ep = args.connect or ""
    if not ep:
        return homemod.home_dir() / "output"
    if ep.startswith("ipc://") and ep.endswith("/daemon.sock"):
        return Path(ep[len("ipc://"):]).parent / "output"
    return None


def cmd_run(args) -> int:
    from emulator.live.client import DaemonError  # lazy: see emulator.cli.jobs

    if not args.program:
        raise UsageError("no program to run: mcemu run -n N PROGRAM [ARGS...]")
    if not args.time > 0:
        raise UsageError(f"--time must be > 0 seconds, got {args.time}")
    request = _request(args)
    command = "PYTHONUNBUFFERED=1 " + shlex.join(args.program)
    cwd = workdir(args.chdir)
    outdir = _outdir(args)
    if outdir is not None:
        _stdin.sweep(outdir.parent)  # the FIFOs of runs killed by SIGKILL (emulator.cli._stdin)
    pump = _stdin.StdinPump(outdir.parent) if outdir is not None and args.input == "0" and _stdin.wanted() else None
    try:
        with connect(args) as c:
            unit = float(c.status()["config"]["time_unit"])
            since = time.time() - STALE
            try:
                jid = c.submit(request, args.time / unit, args.name or _name(args.program), command, cwd=cwd,
                               stdin=pump and str(pump.path))
            except DaemonError as e:
                raise UsageError(str(e)) from None
            out = Output(outdir, jid, args.label, since=since, unit=unit, client=None if outdir else c)
            job = _attend(c, jid, out, args, pump)
    finally:
        if pump is not None:
            pump.close()
    return _exit_status(job, jid, _note, args.verbose)


def _note(msg: str) -> None:
    print(f"mcemu run: {msg}", file=sys.stderr, flush=True)


def workdir(chdir: str | None) -> str:
    """The tasks' working directory, absolute: ``-D DIR`` (relative to ours) or ours."""
    try:
        return os.path.abspath(chdir) if chdir else os.getcwd()
    except FileNotFoundError:  # ours was removed
        raise UsageError("the working directory no longer exists: give -D DIR") from None


def _attend(c, jid: int, out: Output, args, pump) -> dict:
    """Follow job ``jid`` to its end (Ctrl-C, SIGTERM, a lost daemon: it is cancelled); its record."""
    if args.verbose:
        _note(f"job {jid} submitted: {shlex.join(args.program)}")
    job, home = None, out.outdir and out.outdir.parent  # None: another host's daemon
    try:
        job = _follow(c, jid, out, args, _note, pump)
    except KeyboardInterrupt:
        _cancel(c, jid, _note, "cancelled (Ctrl-C)", home)
        job = {"state": "cancelled", "interrupted": True}
    finally:
        if job is None:  # SIGTERM, SIGHUP, a lost daemon: the job does not outlive its command
            _cancel(c, jid, _note, "cancelled", home)
    return job


def _follow(c, jid: int, out: Output, args, note, pump=None) -> dict:
    """Poll the job (as ``mcemu wait`` does) and its output until it ends; the job's record."""
    from emulator.live.client import ClientTimeout  # lazy: see emulator.cli.jobs

    state, started, silent = None, None, False
    ranks, attempt = 0, None
    while True:
        try:
            q = c.queue(jobs=[jid])
            job, now = q["jobs"][0], q["now"]
            silent = False
        except ClientTimeout:
            home = out.outdir and out.outdir.parent  # None: another host's daemon, which may come back
            if stopped(home):  # `mcemu down`: no restart will come, nor the job's end (nothing to cancel)
                out.poll(ranks, final=True)
                return {"state": "stopped", "reason": f"the cluster in {home} was stopped before it finished"}
            if not silent:
                note("the daemon does not answer (restarting?); still waiting")
                silent = True
            time.sleep(POLL)
            continue
        ranks = max(ranks, len(job.get("nodes") or ()))
        if job.get("attempt") != attempt:
            if attempt:
                _requeued(jid, job, now, out, note, pump)
            attempt = job.get("attempt")
        if job["state"] != state:
            state = job["state"]
            if state == "running" and started is None:
                started = time.monotonic()
            if args.verbose and state not in FINISHED:
                on = f" on nodes {ranges(job['nodes'])}" if job.get("nodes") else ""
                note(f"job {jid} {state}{on}" + (f" ({job['reason']})" if job.get("reason") else ""))
        out.poll(ranks, final=state in FINISHED)
        if state in FINISHED:
            return job
        if started is not None and time.monotonic() - started > args.time:
            _cancel(c, jid, note, f"reached its time limit (--time {args.time:g} s) and was cancelled",
                    out.outdir and out.outdir.parent)
            out.poll(ranks, final=True)
            return {"state": "cancelled", "timed_out": True}
        time.sleep(POLL)


def _requeued(jid: int, job: dict, now: float, out: Output, note, pump) -> None:
    """A new attempt of the job runs (a node or the interconnect died under the last one): its
    ranks start over, their output files anew (``now``: the daemon's model time, to place the
    attempt's start on the wall clock), its new rank 0 opens the stdin FIFO again."""
    why = printable(job.get("reason")) or "requeued"
    note(f"job {jid} {why} (attempt {job['attempt']}: its ranks start over)")
    out.again(time.time() - (now - job["start"]) * out.unit - RESTART_SLACK)
    if pump is not None:
        pump.again()


def _cancel(c, jid: int, note, what: str, home: Path | None = None) -> None:
    """Cancel the job (a second Ctrl-C meanwhile is ignored: the job must not outlive us). A
    daemon of this host's ``home`` that does not answer (dead, to be recovered) finds the cancel
    recorded in the home when it recovers (home.record_cancel), and cancels the job then."""
    from emulator.live.client import ClientTimeout, DaemonError  # lazy: see emulator.cli.jobs

    old = signal.signal(signal.SIGINT, signal.SIG_IGN) if _main_thread() else None
    try:
        c.cancel(jid, why=f"mcemu run: {what}")
        note(f"job {jid} {what}")
    except ClientTimeout as e:
        if home is None or stopped(home):  # another host's daemon, or a cluster stopped for good
            note(f"job {jid}: could not cancel it: {e}")
        else:
            homemod.record_cancel(home, jid, f"{what} while the daemon was down")
            note(f"job {jid}: the daemon does not answer: the job is cancelled when it recovers "
                 f"(`mcemu up`; recorded in {home / homemod.CANCELS})")
    except DaemonError as e:  # it ended meanwhile
        note(f"job {jid}: could not cancel it: {e}")
    finally:
        if old is not None:
            signal.signal(signal.SIGINT, old)


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _exit_status(job: dict, jid: int, note, verbose: bool = False) -> int:
    """0 completed; 130 after Ctrl-C; a failing rank's status (128 + N: killed by signal N)
    where known, else 1."""
    if job.get("interrupted"):
        return 130
    if job["state"] == "completed":
        if verbose:
            note(f"job {jid} completed")
        return 0
    failure = job.get("failure") or {}  # the first rank that failed, not the lowest-numbered one
    bad = (failure["rank"], failure["status"]) if failure.get("status") else \
        next(((r, s) for r, s in enumerate(job.get("exit") or []) if s), None)
    if not job.get("timed_out"):
        why = printable(job.get("reason")) or (f"rank {bad[0]} exited with {bad[1]}" if bad else "")
        note(f"job {jid} {job['state']}" + (f": {why}" if why else ""))
    if bad is None:
        return 1
    return bad[1] if bad[1] > 0 else 128 - bad[1]


def add_commands(sub) -> None:
    p = sub.add_parser("run", help="run a program on the cluster in the foreground (like srun / mpiexec)",
                       description="Submit PROGRAM ARGS as a job of N ranks, stream the ranks' output as they "
                                   "write it, and exit with the job's status (0 completed, a failing rank's "
                                   "status, 130 after Ctrl-C, which cancels the job). Every rank runs the same "
                                   "command; mpi4py programs find their rank through MPI.COMM_WORLD.",
                       epilog="e.g. mcemu run -n 16 --shape 4x4 python prog.py 100")
    p.add_argument("-n", "--ntasks", dest="nodes", type=int, metavar="N", help="ranks (one per node)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--shape", help="a WxH submesh (on a mesh)")
    g.add_argument("--cube", type=int, metavar="D", help="a D-cube (on a hypercube)")
    p.add_argument("--label", "-l", action="store_true", help="prefix each output line with its rank: 'RANK: '")
    p.add_argument("--time", type=float, default=DEFAULT_TIME, metavar="SECONDS",
                   help=f"time limit: the run time the policies plan with; the job is cancelled when it has "
                        f"run this long ({DEFAULT_TIME:g})")
    p.add_argument("--name", help="job name (default: the script's or the program's)")
    p.add_argument("-D", "--chdir", metavar="DIR",
                   help="the ranks' working directory on their nodes (default: this one, as srun and mpiexec)")
    p.add_argument("--input", choices=("0", "none"), default="0",
                   help="who reads this command's stdin: rank 0 (0, the default, as mpiexec; not when it is a "
                        "terminal, which is never read: every rank then gets /dev/null) or nobody (none)")
    p.add_argument("--verbose", "-v", action="store_true", help="say when the job is queued, starts and ends")
    client_options(p, json=False)
    p.add_argument("program", nargs="...", metavar="PROGRAM [ARGS ...]", help="the command every rank runs")
    p.set_defaults(func=cmd_run)
