"""MCEMU_HOME: where a cluster keeps its sockets, journal, pidfiles and logs.

``MCEMU_HOME`` if set, else ``$XDG_STATE_HOME/mcemu``, else ``~/.local/state/mcemu``. The
directory is created with mode 0700 (the ipc:// sockets in it are the cluster's only access
control when no --listen address is given). Two clusters run side by side with two homes.

A pidfile holds ``pid create_time`` so that a process is only ever signalled when it is still
the one we started (a recycled pid has another create time).
"""
from __future__ import annotations

import json
import os
import resource
import shutil
from pathlib import Path

import psutil

IPC_PATH_MAX = 100  # sun_path is 108 bytes on Linux; leave room for the terminator


def home_dir(create: bool = True) -> Path:
    env = os.environ.get("MCEMU_HOME")
    if env:
        p = Path(env).expanduser()
    else:
        base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
        p = Path(base) / "mcemu"
    p = p.resolve()
    if create:
        p.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = p.stat()
        if st.st_uid == os.getuid() and (st.st_mode & 0o077):
            os.chmod(p, 0o700)
    return p


def ipc_endpoint(home: Path, name: str) -> str:
    path = str(home / name)
    if len(path) > IPC_PATH_MAX:
        raise OSError(f"MCEMU_HOME path too long for an ipc:// socket ({len(path)} > {IPC_PATH_MAX} chars): {path}")
    return "ipc://" + path


def endpoint(text: str, what: str = "--connect", *, listen: bool = False) -> str:
    """A ZeroMQ endpoint a user typed, checked: ``ipc://PATH`` or ``tcp://HOST:PORT`` (port
    1-65535); for ``listen`` also ``PORT``, ``:PORT`` (loopback) and ``HOST:PORT``. A
    ValueError naming ``what`` otherwise: libzmq's own error is a traceback far from the flag,
    and a port beyond 65535 would quietly bind another one."""
    t = str(text).strip()
    if listen and "://" not in t:
        host, _, port = t.rpartition(":")
        t = f"tcp://{host or '127.0.0.1'}:{port}"
    if t.startswith("ipc://") and len(t) > len("ipc://"):
        if len(t) - 6 > IPC_PATH_MAX:
            raise ValueError(f"{what}: the ipc path is longer than {IPC_PATH_MAX} characters")
        return t
    if t.startswith("tcp://"):
        host, sep, port = t[6:].rpartition(":")
        if sep and host and port.isdigit() and 1 <= int(port) <= 65535:
            return f"tcp://{host}:{int(port)}"
    forms = "tcp://HOST:PORT, :PORT or HOST:PORT" if listen else "tcp://HOST:PORT or ipc://PATH"
    raise ValueError(f"{what} must be {forms} (port 1-65535), got {text!r}")


def control_endpoint(home: Path) -> str:
    return ipc_endpoint(home, "daemon.sock")


def events_endpoint(home: Path) -> str:
    return ipc_endpoint(home, "events.sock")


def events_for(control: str) -> str:
    """The event endpoint beside a control endpoint, as the daemon binds them: the next tcp
    port, or ``events.sock`` beside ``daemon.sock``."""
    if control.startswith("tcp://"):
        host, _, port = control[6:].rpartition(":")
        return f"tcp://{host}:{int(port) + 1}"
    return "ipc://" + str(Path(control[6:]).with_name("events.sock"))


def net_for(control: str) -> str:
    """The interconnect's endpoint beside a daemon's control endpoint: over tcp the port after
    the events' (the control port + 2, CURVE like the daemon's: emulator.live.nettcp), over ipc
    ``net.sock`` beside ``daemon.sock``. A node joined over tcp derives its tasks' network
    from the address it was given, as it derives the events' (no file to copy between hosts)."""
    if control.startswith("tcp://"):
        host, _, port = control[6:].rpartition(":")
        return f"tcp://{host}:{int(port) + 2}"  # past 65535: the interconnect says it cannot listen
    return "ipc://" + str(Path(control[6:]).with_name("net.sock"))


def journal_path(home: Path) -> Path:
    return home / "journal.db"


# ---------------------------------------------------------------- pidfiles


def write_pidfile(path: Path, pid: int | None = None) -> None:
    pid = pid or os.getpid()
    ct = psutil.Process(pid).create_time()
    tmp = path.with_suffix(".tmp")
    tmp.write_text(f"{pid} {ct!r}\n")
    os.replace(tmp, path)


def read_pidfile(path: Path) -> psutil.Process | None:
    """The live process a pidfile names, or None (missing file, dead or recycled pid)."""
    try:
        pid_s, ct_s = path.read_text().split()
        pid, ct = int(pid_s), float(ct_s)
        p = psutil.Process(pid)
        if abs(p.create_time() - ct) > 0.05 or p.status() == psutil.STATUS_ZOMBIE:
            return None
        return p
    except (OSError, ValueError, psutil.Error):
        return None


def remove(home: Path, *names: str) -> None:
    """Remove a process's files from the home when it stops (pidfile, socket files)."""
    for f in names:
        try:
            (home / f).unlink()
        except FileNotFoundError:
            pass


def write_json(path: Path, obj) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(obj))
    os.replace(tmp, path)


def read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def clear_trace(home: Path, job: int) -> None:
    """Empty job ``job``'s program trace directory (``traces/job-<id>``, nodes.mpi.live) before
    its ranks start: a rank file of an older job of that id (a home whose journal was removed),
    or of an earlier attempt, would be replayed with this attempt's."""
    d = home / "traces" / f"job-{job}"
    if d.is_dir():
        shutil.rmtree(d, ignore_errors=True)


CANCELS = "cancels"  # jobs to cancel that a command could not, its daemon being down (pending_cancels)


def record_cancel(home: Path, job: int, why: str) -> Path:
    """Job ``job`` is to be cancelled (``why``) when this home's daemon serves again: ``mcemu run``
    was stopped while its daemon was down, and the job must not outlive its command."""
    d = home / CANCELS
    d.mkdir(mode=0o700, exist_ok=True)
    path = d / str(int(job))
    tmp = d / f".{int(job)}.{os.getpid()}"
    tmp.write_text(why[:200] + "\n")
    os.replace(tmp, path)
    return path


def pending_cancels(home: Path, take: bool = True):
    """The jobs :func:`record_cancel` named, (job, why) in job order; ``take``: each file is
    removed once the caller is done with its job (a daemon that dies while it cancels one finds
    it again). Anything else in the directory is ignored."""
    d = home / CANCELS
    try:
        names = [n for n in os.listdir(d) if n.isdigit() and len(n) < 19]
    except OSError:
        return
    for n in sorted(names, key=int):
        try:
            why = (d / n).read_text(errors="replace").strip()[:200]
        except OSError:
            continue
        yield int(n), why
        if take:
            try:
                (d / n).unlink()
            except OSError:
                pass


def raise_nofile(need: int) -> int:
    """Raise RLIMIT_NOFILE (soft) to at least ``need`` if the hard limit allows; returns it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        new = need if hard == resource.RLIM_INFINITY else min(need, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
        soft = new
    return soft
