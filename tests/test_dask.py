"""Replications on Dask: a real ``dask scheduler`` and two ``dask worker`` processes on 127.0.0.1
(free ports, stopped by PID), ``mcemu reproduce lazy-fig4 --quick --dask tcp://...`` against a
local run (identical results.csv), short runs batched in a task, a worker killed mid-sweep (same
CSV), resume, and the one-line errors."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import free_port
from emulator.cli import main

distributed = pytest.importorskip("distributed")

pytestmark = pytest.mark.live

REPO = Path(__file__).resolve().parents[1]
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))


def _stop(p: subprocess.Popen, sig=signal.SIGTERM) -> None:
    """Stop a process we started, and its children (its own session), by its PID."""
    if p.poll() is None:
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            return
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=10)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A Dask scheduler and two one-thread workers; yields (address, [worker processes])."""
    log = tmp_path_factory.mktemp("dask-logs")
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs: list[subprocess.Popen] = []

    def start(name, *args):
        out = open(log / f"{name}.log", "w")
        p = subprocess.Popen([sys.executable, "-m", "dask", *args], stdout=out, stderr=subprocess.STDOUT,
                             env=ENV, start_new_session=True, cwd=log)
        procs.append(p)
        return p

    try:
        start("scheduler", "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard")
        workers = [start(f"worker{i}", "worker", address, "--nthreads", "1", "--nworkers", "1",
                         "--no-dashboard", "--host", "127.0.0.1", "--name", f"w{i}") for i in range(2)]
        client = distributed.Client(address, timeout=30)
        try:
            client.wait_for_workers(2, timeout=60)
        finally:
            client.close()
        yield address, workers
    finally:
        for p in reversed(procs):
            _stop(p)


def _mcemu(*args, **kw):
    return subprocess.Popen([sys.executable, "-m", "emulator", *map(str, args)], env=ENV, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def _lines(path: Path) -> int:
    try:
        return len(path.read_text().splitlines())
    except FileNotFoundError:
        return 0


def _processing_on(client, name: str, sweep: subprocess.Popen, deadline: float) -> bool:
    """Wait until the worker called ``name`` holds a task (while ``sweep`` runs)."""
    while sweep.poll() is None and time.monotonic() < deadline:
        info = client.scheduler_info()["workers"]
        where = [a for a, w in info.items() if w.get("name") == name]
        if where and client.processing(workers=where).get(where[0]):
            return True
        time.sleep(0.002)
    return False


def test_dask_batches_short_runs(cluster, tmp_path):
    """A sweep of short runs on the cluster: several runs to a task, the numbers of one process."""
    from emulator.experiments.executors import DaskPool, Inline
    from emulator.sweep import Sweep, run_sweep

    sweep = Sweep.from_dict({"name": "b", "topology": "hypercube:5", "scheduler": ["fcfs", "lazy"],
                             "load": [0.3, 0.7], "time": 150, "seeds": 8})
    one = run_sweep(sweep, tmp_path / "one", executor=Inline(), progress=False)
    pool = DaskPool(cluster[0], timeout=30)
    tasks, outcome = [], pool.outcome  # the runs each task did
    pool.outcome = lambda h: tasks.append(len(outcome(h))) or outcome(h)
    try:
        run_sweep(sweep, tmp_path / "dask", executor=pool, progress=False)
    finally:
        pool.close()
    assert sum(tasks) == one["replications_computed"] == 32 and len(tasks) < 32 and max(tasks) > 1
    assert (tmp_path / "dask" / "b" / "results.csv").read_text() == (tmp_path / "one" / "b" / "results.csv").read_text()


def test_dask_matches_local_and_survives_a_dead_worker(cluster, tmp_path):
    address, workers = cluster
    assert main(["reproduce", "lazy-fig4", "--quick", "--out", str(tmp_path / "local"), "--json"]) == 0
    local = (tmp_path / "local" / "lazy-fig4" / "results.csv").read_text()
    total = _lines(tmp_path / "local" / "lazy-fig4" / "runs.jsonl")

    p = _mcemu("reproduce", "lazy-fig4", "--quick", "--dask", address, "--out", tmp_path / "dask", "--json")
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert '"executor": "Dask at tcp://127.0.0.1' in out
    assert (tmp_path / "dask" / "lazy-fig4" / "results.csv").read_text() == local

    # one worker killed (SIGKILL, with its nanny) while it runs a task of the sweep: its runs go to the other
    runs = tmp_path / "kill" / "lazy-fig4" / "runs.jsonl"
    watch = distributed.Client(address, timeout=30)
    p = _mcemu("reproduce", "lazy-fig4", "--quick", "--dask", address, "--out", tmp_path / "kill", "--json")
    try:
        busy = _processing_on(watch, "w1", p, time.monotonic() + 60)
        done_at_kill = _lines(runs)
        running_at_kill = p.poll() is None
        os.killpg(workers[1].pid, signal.SIGKILL)
        out, err = p.communicate(timeout=120)
    finally:
        watch.close()
        if p.poll() is None:
            p.kill()
            p.wait()
    workers[1].wait(timeout=10)
    assert busy and running_at_kill and done_at_kill < total, "the sweep ended before the worker was killed"
    assert p.returncode == 0, err
    assert (tmp_path / "kill" / "lazy-fig4" / "results.csv").read_text() == local
    assert _lines(runs) == total  # every replication once: none lost, none twice

    # resume: everything is in runs.jsonl, nothing is computed again (on the one worker left)
    p = _mcemu("reproduce", "lazy-fig4", "--quick", "--dask", address, "--out", tmp_path / "kill", "--json")
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert '"replications_computed": 0' in out


def test_resume_a_local_run_on_dask_local(tmp_path):
    """Half the replications locally, the rest on ``--dask local:1``: the same CSV as all local."""
    base = tmp_path / "all"
    assert main(["reproduce", "lazy-fig4", "--quick", "--jobs", "1", "--out", str(base), "--json"]) == 0
    lines = (base / "lazy-fig4" / "runs.jsonl").read_text().splitlines()
    part = tmp_path / "part" / "lazy-fig4"
    part.mkdir(parents=True)
    (part / "runs.jsonl").write_text("\n".join(lines[::2]) + "\n")
    p = _mcemu("reproduce", "lazy-fig4", "--quick", "--dask", "local:1", "--out", tmp_path / "part", "--json")
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert f'"replications_computed": {len(lines) - len(lines[::2])}' in out
    assert (part / "results.csv").read_text() == (base / "lazy-fig4" / "results.csv").read_text()


@pytest.mark.parametrize("args, words", [
    (["--dask", "tcp://127.0.0.1:{port}", "--dask-timeout", "0.5"], "cannot reach the Dask scheduler"),
    (["--dask", "local:0"], "N >= 1"),
    (["--dask", "local:2", "--jobs", "2"], "--jobs is the local pool's"),
])
def test_dask_errors_are_one_line(tmp_path, capsys, args, words):
    args = [a.format(port=free_port()) for a in args]
    assert main(["reproduce", "lazy-fig4", "--quick", "--out", str(tmp_path), *args]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "lazy-fig4").exists()  # nothing started


def test_dask_is_imported_only_when_asked():
    code = ("import sys; from emulator.cli import main; "
            "main(['reproduce', '--list', '--json']); "
            "from emulator.experiments import runner; "
            "print('distributed' in sys.modules or 'dask' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "False"


def test_results_come_straight_from_workers_only_when_they_can_be_reached():
    import socket

    from emulator.experiments.executors import _reachable

    with socket.create_server(("127.0.0.1", 0)) as srv:
        port = srv.getsockname()[1]
        assert _reachable([f"tcp://127.0.0.1:{port}"])
        assert not _reachable([f"tcp://127.0.0.1:{port}", f"tcp://127.0.0.1:{free_port()}"])
    assert not _reachable([]) and not _reachable([f"tls://127.0.0.1:{port}"])
