"""Starting and stopping a cluster's processes, for ``mcemu up`` / ``down`` / ``demo`` and the
benchmarks: the daemon and the launcher, each in its own session and recorded by pidfile in
MCEMU_HOME, waited for with deadlines, stopped by pid (never looked up by name).

``start_cluster`` starts (or recovers) a cluster and returns once it is ready; when it fails
after spawning anything it stops, by pid, everything it spawned (``_stop_started``).
``stop_cluster`` asks the daemon to shut down, then waits for every process it recorded
(daemon, launcher, the launcher's whole process tree, collected BEFORE asking) and terminates
by pid whatever is left after a deadline.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

from emulator.cli import UsageError
from emulator.cli import _stdin
from emulator.cli._client import FINISHED
from emulator.live import config as configmod
from emulator.live import home as homemod


def cluster_processes(home: Path) -> dict:
    """The live processes of the cluster in ``home``: daemon, launcher, the launcher's
    descendants (nodes and their tasks) and the interconnect (``--network``)."""
    d = homemod.read_pidfile(home / "daemon.pid")
    net = homemod.read_pidfile(home / "interconnect.pid")
    lch = homemod.read_pidfile(home / "launcher.pid")
    tree = []
    if lch is not None:
        try:
            tree = lch.children(recursive=True)
        except psutil.Error:
            tree = []
    return {"daemon": d, "launcher": lch, "tree": tree, "interconnect": net}


def _wait_gone(procs, timeout: float) -> tuple[list, list]:
    """``psutil.wait_procs`` (gone, alive), where a zombie is gone: it has exited, and reaping it
    is its parent's. A process whose parent died is reaped by PID 1, which in some containers
    (this project's VMs) does it about once a second: psutil waits for the reaping, and `mcemu
    down` of an idle 4-node cluster took 1.7 s, 1.2 of them in its sleeps."""
    deadline, delay = time.monotonic() + timeout, 0.002
    gone, alive = [], list(procs)
    while alive:
        left = []
        for p in alive:
            try:
                (gone if p.status() == psutil.STATUS_ZOMBIE else left).append(p)
            except psutil.NoSuchProcess:
                gone.append(p)
            except psutil.Error:  # not ours to read (AccessDenied): alive as far as we know
                left.append(p)
        alive = left
        if not alive or time.monotonic() >= deadline:
            break
        time.sleep(delay)
        delay = min(2 * delay, 0.05)
    return gone, alive


def _escalate(procs, how: str):
    """Send ``how`` (terminate or kill) to each process still alive, by its PID; returns the
    PIDs signalled and those still alive 3 s later."""
    sent = []
    for p in procs:
        try:
            getattr(p, how)()
            sent.append(p.pid)
        except psutil.Error:
            pass
    return sent, _wait_gone(procs, 3)[1]


def _spawn(argv, log: Path, env=None) -> subprocess.Popen:
    with open(log, "ab") as f:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT,
                                start_new_session=True, close_fds=True, env=env)


def _node_env(home: Path, cfg: dict) -> dict:
    """The launcher's environment, which its nodes and their tasks inherit: with a network,
    MCEMU_NET (the interconnect's endpoint, read by nodes.comm), MCEMU_TRACES (where programs
    write their traces: nodes.mpi.live) and a task's PYTHONPATH (nodes.taskenv.python_path: mcemu's
    ``mpi4py`` shim and this mcemu first); without one, no stale MCEMU_NET of another cluster
    (nor its key: the local nodes' tasks use the ipc socket)."""
    env = dict(os.environ)
    env.pop("MCEMU_NET", None)
    env.pop("MCEMU_NET_KEY", None)
    if cfg.get("network"):
        from emulator.live.interconnect import net_endpoint  # lazy: 170 ms (the network model), see start_cluster
        from nodes.taskenv import python_path

        env["MCEMU_NET"] = net_endpoint(home)
        env["MCEMU_TRACES"] = str(home / "traces")
        env["PYTHONPATH"] = python_path(env.get("PYTHONPATH"))
    return env


def _wait_for(cond, deadline: float, what: str, proc: subprocess.Popen | None = None, log: Path | None = None):
    while True:
        v = cond()
        if v:
            return v
        if proc is not None and proc.poll() is not None:  # one line: the log's last, e.g. the error
            last = (log.read_text(errors="replace").strip().splitlines() or [""])[-1] if log and log.exists() else ""
            raise UsageError(f"{what}: the process exited with status {proc.returncode}: {last} (see {log})")
        if time.monotonic() >= deadline:
            raise UsageError(f"{what}: not ready before the deadline")
        time.sleep(0.05)


def start_cluster(home: Path, asked: dict | None = None, *, timeout: float | None = None, output_dir=None,
                  **settings) -> dict:
    """Start (or complete) the cluster in ``home``; returns once it is ready. The cluster's
    settings (emulator.live.config.SETTINGS, by name: ``topology``, ``heartbeat``, ...) come in
    ``asked`` (e.g. ``config.values(args, "up")``) and as keywords; None is not asked. A
    configuration the daemon would refuse (an unknown name, a bad ``--param``, settings that
    clash with the journal's) is refused here, in one line, before any process starts.

    A new cluster is ready when every local node has registered. On a journal that was not
    closed (a daemon that died) it is recovery: ready once the daemon serves and the node
    processes alive here have registered again, whatever the number of nodes down; the
    result then holds ``recovered`` (jobs queued, running, finished; nodes down or not back).
    When anything fails after a process was spawned (the daemon does not start, the nodes do
    not register before the deadline, Ctrl-C), every process this call started is stopped by
    pid, with its descendants, before the error goes up: nothing is left running."""
    # lazy, measured on top of `mcemu --help`'s imports (every mcemu command imports this
    # module): the client (zmq, msgpack) 19 ms, the journal's reader 5 ms
    from emulator.live.client import Client
    from emulator.live.recovery import pending_meta

    settings = {**(asked or {}), **settings}
    configmod.known(settings)
    procs = cluster_processes(home)
    if procs["daemon"] is not None:
        raise UsageError(f"a cluster is already running in {home} (daemon pid {procs['daemon'].pid}); `mcemu down` first")
    recovering = bool(pending_meta(home))
    if recovering and settings.get("listen") is None:
        # the tcp address is not in the journal's configuration: the dead daemon's own record
        # of what it listened on, so that remote nodes and clients find it again
        prev = homemod.read_json(home / "endpoints.json") or {}
        settings.update(listen=prev.get("control_tcp"), insecure=bool(prev.get("insecure")))
    cfg, topo = _check_config(home, settings)
    local = settings.get("local_nodes")
    if local is not None and not 0 <= int(local) <= topo.size:
        raise UsageError(f"--local-nodes must be within 0-{topo.size} ({topo}), got {local}")
    t_start = time.monotonic()
    started: list[subprocess.Popen] = []
    try:
        deadline = time.monotonic() + (timeout or 30 + topo.size * 0.03)
        n_local = topo.size if local is None else int(local)
        dproc = _start_daemon(home, settings, cfg, procs, started, deadline)
        lproc = None
        if procs["launcher"] is None and n_local:
            # the launcher's node settings: the resolved ones (a journal's heartbeat) over those asked
            lproc = _start_launcher(home, {**settings, **cfg}, n_local, output_dir, started)
        with Client(home=home, timeout=2.0) as c:
            if not recovering:
                st = _wait_for(lambda: _ready(c, n_local), deadline, f"{n_local} nodes registering", lproc,
                               home / "launcher.log")
            else:
                st = _recovered(c, home, dproc, lproc, procs["launcher"], deadline, topo.size, n_local,
                                settings.get("grace") or configmod.default("grace"))
    except BaseException:
        # a failed recovery puts things back as they were: its daemon is SIGKILLed, so that the
        # journal stays open (recoverable) and no ``shutdown`` reaches the nodes that outlived
        # the previous daemon; a new cluster's daemon is terminated (it closes its journal)
        _stop_started(started, kill=started[:1] if recovering else ())
        raise
    st["startup_s"] = time.monotonic() - t_start
    st["home"] = str(home)
    return st


def _start_daemon(home, settings, cfg, procs, started, deadline) -> subprocess.Popen:
    """The daemon, and with a network the interconnect (before the nodes: a task's first
    message finds it serving); returns the daemon's process once it serves."""
    dlog = home / "daemon.log"
    argv = [sys.executable, "-m", "emulator.live.daemon", "--home", str(home), *configmod.argv("daemon", settings)]
    with _signals_deferred():  # a Ctrl-C must not come between the spawn and its record
        dproc = _spawn(argv, dlog)
        started.append(dproc)
    _wait_for(lambda: homemod.read_pidfile(home / "daemon.pid"), deadline, "daemon start", dproc, dlog)
    if cfg.get("network") and procs["interconnect"] is None:
        # a recovery leaves a live interconnect alone (it follows the new daemon's events) and
        # starts one that is gone
        from emulator.live.netkeeper import spawn  # the one way it starts: here and the daemon's restarts

        with _signals_deferred():
            iproc = spawn(home, settings)
            started.append(iproc)
        _wait_for(lambda: homemod.read_pidfile(home / "interconnect.pid"), deadline, "interconnect start",
                  iproc, home / "interconnect.log")
    return dproc


def _start_launcher(home, settings, n_local, output_dir, started) -> subprocess.Popen:
    """The launcher of nodes 0..n_local-1 (it forks their agents)."""
    out = Path(output_dir) if output_dir else home / "output"
    argv = [sys.executable, "-m", "nodes.launcher", "--connect", homemod.control_endpoint(home), "--nodes",
            f"0-{n_local - 1}", "--home", str(home), "--output-dir", str(out),
            *configmod.argv("launcher", settings)]
    out.mkdir(mode=0o700, exist_ok=True)
    with _signals_deferred():
        lproc = _spawn(argv, home / "launcher.log", _node_env(home, settings))
        started.append(lproc)
    return lproc


def _status(c):
    from emulator.live.client import ClientTimeout  # lazy: see start_cluster

    try:
        return c.status()
    except ClientTimeout:
        return None


def _ready(c, n_local: int):
    """The daemon's status once ``n_local`` nodes are connected and up, else None."""
    st = _status(c)
    if st is None:
        return None
    up = st["size"] - st["nodes"].get("down", 0)
    return st if st["connected"] >= n_local and up >= n_local else None


def _recovered(c, home, dproc, lproc, old_launcher, deadline, size: int, n_local: int, grace: float) -> dict:
    """Recovery: the daemon serves; then the node processes alive here register again (a
    short wait, none for the dead: they are reported, not awaited)."""
    st = _wait_for(lambda: _status(c), deadline, "daemon serving", dproc, home / "daemon.log")

    def expected():  # a launcher that outlived its daemon: its nodes that are alive come back
        if lproc is not None or old_launcher is None:
            return n_local if lproc is not None else 0
        try:
            return len(old_launcher.children())
        except psutil.Error:
            return 0

    back = min(deadline, time.monotonic() + 10 + size * 0.01)
    while st["connected"] < expected() and time.monotonic() < back:
        if lproc is not None and lproc.poll() is not None:
            break
        time.sleep(0.05)
        st = _status(c) or st
    nodes = c.nodes()
    jobs = st["jobs"]
    st["recovered"] = {"jobs": dict(jobs), "queued": jobs.get("queued", 0) + jobs.get("held", 0),
                       "running": jobs.get("running", 0),
                       "finished": sum(v for k, v in jobs.items() if k in FINISHED),
                       "nodes_down": [n["node"] for n in nodes if n["state"] == "down"],
                       "nodes_not_back": [n["node"] for n in nodes
                                          if n["state"] != "down" and not n.get("connected")],
                       "grace_s": float(grace)}
    return st


@contextlib.contextmanager
def _signals_deferred(signums=(signal.SIGINT, signal.SIGTERM)):
    """SIGINT/SIGTERM that arrive in the block are handled after it, by the handlers that were
    in place (KeyboardInterrupt, SystemExit): so a process is never spawned and not recorded."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list = []
    before = {s: signal.signal(s, lambda signum, _f: got.append(signum)) for s in signums}
    try:
        yield
    finally:
        for s, h in before.items():
            signal.signal(s, h)
        for s in dict.fromkeys(got):
            h = before[s]
            if callable(h):
                h(s, None)
            elif h == signal.SIG_DFL:
                signal.raise_signal(s)


def _stop_started(started: list, kill=()) -> None:
    """Stop the processes of a failed start by pid: each with its descendants, collected before
    any is signalled (the launcher forwards SIGTERM to its nodes and waits for them; its nodes
    would end with it anyway, PR_SET_PDEATHSIG); SIGKILL for what is left after 5 s. A second
    Ctrl-C meanwhile is ignored: it would leave them running."""
    main = threading.current_thread() is threading.main_thread()
    before = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        everyone = []
        for p in started:
            try:
                proc = psutil.Process(p.pid)
                everyone += [proc, *proc.children(recursive=True)]
            except psutil.Error:
                pass
        for p in started:  # the tops: the daemon closes its journal, the launcher stops its nodes
            with contextlib.suppress(OSError):
                if p.poll() is None:
                    p.kill() if p in kill else p.terminate()
        _gone, alive = _wait_gone(everyone, 5)
        _escalate(alive, "kill")
        for p in started:
            with contextlib.suppress(Exception):
                p.wait(timeout=5)
    finally:
        if main:
            signal.signal(signal.SIGINT, before)


def _check_config(home: Path, settings: dict) -> tuple[dict, object]:
    """The configuration the daemon will run with (emulator.live.config), its policy stack
    built once to see that it can be; UsageError when not."""
    from emulator.live.recovery import pending_meta  # lazy: see start_cluster
    from scheduler.stack import build  # lazy: 43 ms (every policy), measured as in start_cluster

    meta = pending_meta(home)
    try:
        configmod.check_process(settings)
        cfg = configmod.resolve(meta.get("config"), configmod.given(**settings))
        configmod.check_format(meta, cfg)
        stack = build(configmod.stack_config(cfg))
    except (ValueError, KeyError) as e:  # KeyError: scheduler.registry.UnknownPolicy
        raise UsageError(configmod.message(e)) from None
    return cfg, stack.topology


def stop_cluster(home: Path, timeout: float = 15.0) -> dict:
    """Stop everything the cluster in ``home`` started, by pid; returns what was stopped."""
    from emulator.live.client import Client, ClientError  # lazy: see start_cluster

    procs = cluster_processes(home)
    everyone = [p for p in [procs["daemon"], procs["launcher"], *procs["tree"], procs["interconnect"]]
                if p is not None]
    pids = sorted(p.pid for p in everyone)
    if procs["daemon"] is not None:
        c = Client(home=home, timeout=3.0)
        try:
            c.shutdown()
        except ClientError:
            with contextlib.suppress(psutil.Error):
                procs["daemon"].terminate()
        finally:
            c.close()
    if procs["launcher"] is not None:
        # also after the daemon's shutdown (which stops the nodes): a restart the launcher has
        # pending is dropped, and it forwards SIGTERM to its nodes by pid
        with contextlib.suppress(psutil.Error):
            procs["launcher"].terminate()
    if procs["interconnect"] is not None:  # by pid like the rest; its tasks are being stopped anyway
        with contextlib.suppress(psutil.Error):
            procs["interconnect"].terminate()
    gone, alive = _wait_gone(everyone, timeout)
    late = cluster_processes(home)["interconnect"]  # one the daemon restarted after the pids were read
    if late is not None and late.pid not in pids:
        pids.append(late.pid)
        with contextlib.suppress(psutil.Error):
            late.terminate()
        alive += _wait_gone([late], timeout)[1]
    terminated, alive = _escalate(alive, "terminate")
    killed, alive = _escalate(alive, "kill")
    for f in ("daemon.pid", "launcher.pid", "nodes.json", "endpoints.json", "interconnect.pid", "net.sock"):
        (home / f).unlink(missing_ok=True)
    _stdin.sweep(home)  # the stdin FIFOs of `mcemu run`s killed by SIGKILL; a live run's stays
    return {"home": str(home), "stopped": pids, "terminated": terminated, "killed": killed,
            "was_running": bool(everyone)}
