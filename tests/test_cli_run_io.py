"""Where ``mcemu run`` / ``submit --command`` tasks run and what they read, as srun and mpiexec:
the caller's working directory (``-D DIR``: another; a missing one fails the task, which says
why), rank 0 reading the caller's stdin as it comes; and job ids that go on over ``down`` +
``up`` on one home, so that neither an output file nor a trace of an older job is taken for
the new one's."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from conftest import ROOT, wait_for
from emulator.cli.run import Output
from emulator.live import protocol as P
from emulator.live import recovery
from emulator.live.journal import Journal
from emulator.live.schema import MAX_PATH

UP_2x2 = ("--topology", "mesh:2x2", "--allocator", "first-fit", "--scheduler", "fcfs")

# every rank says where it runs; rank 0 echoes the lines of its stdin, the others say what they read
ECHO = """\
import os, sys
r = int(os.environ["MCEMU_RANK"])
print("cwd", os.getcwd())
if r == 0:
    while True:
        try:
            print("got", input())
        except EOFError:
            break
    print("eof")
else:
    print("read", repr(sys.stdin.read()))
"""


def mcemu(cluster, *args, cwd=None, stdin=None, inp=None, timeout=60):
    """``mcemu ARGS`` run from ``cwd`` with ``stdin`` (a file object) or ``inp`` (bytes, a pipe)."""
    p = subprocess.Popen([sys.executable, "-m", "emulator", *map(str, args)], env=cluster.env, cwd=cwd,
                         stdin=subprocess.PIPE if inp is not None else stdin, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    cluster.record(p)
    out, err = p.communicate(inp, timeout=timeout)
    return p.returncode, out.decode(), err.decode()


def lines_of(out: str, rank: int) -> list[str]:
    return [x[len(f"{rank}: "):] for x in out.splitlines() if x.startswith(f"{rank}: ")]


@pytest.mark.live
def test_ranks_run_in_the_callers_directory_and_rank_0_reads_its_stdin(cluster, tmp_path):
    cluster.up(*UP_2x2)
    work = tmp_path / "work"
    work.mkdir()
    (work / "echo.py").write_text(ECHO)
    # a relative script name, as `cd dir && mpiexec -n 2 python prog.py`
    rc, out, err = mcemu(cluster, "run", "-n", 2, "-l", sys.executable, "echo.py", cwd=work, inp=b"100\n1000\n0\n")
    assert rc == 0, (out, err)
    assert lines_of(out, 0) == [f"cwd {work}", "got 100", "got 1000", "got 0", "eof"]
    assert lines_of(out, 1) == [f"cwd {work}", "read ''"]  # the other ranks: /dev/null, as before
    assert not list((cluster.home / "input").iterdir())  # the FIFO goes with the command
    # --input none: rank 0 reads nothing; -D relative to the caller's directory
    (tmp_path / "other").mkdir()
    rc, out, err = mcemu(cluster, "run", "-n", 1, "-l", "--input", "none", "-D", "../other", sys.executable,
                         work / "echo.py", cwd=work, inp=b"ignored\n")
    assert rc == 0 and lines_of(out, 0) == [f"cwd {tmp_path / 'other'}", "eof"], (out, err)
    # a job without a directory (a client of the API) runs where the node agent runs, as before
    jid = cluster.client.submit({"nodes": 1}, 100, "plain", "pwd")
    wait_for(lambda: cluster.client.queue(jobs=[jid])["jobs"][0]["state"] == "completed", 30, "the plain job")
    assert (cluster.home / "output" / f"job{jid}.0.out").read_text().strip() != str(work)


@pytest.mark.live
def test_rank_0_gets_each_line_as_it_is_written_and_run_ends_with_its_job(cluster, tmp_path):
    """A pipe nobody closes (``tail -f log | mcemu run``) holds back neither the job nor ``run``."""
    cluster.up(*UP_2x2)
    prog = tmp_path / "two.py"
    prog.write_text("print('first', input(), flush=True)\nprint('second', input())\n")
    p = subprocess.Popen([sys.executable, "-m", "emulator", "run", "-n", "1", sys.executable, str(prog)],
                         env=cluster.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    cluster.record(p)
    p.stdin.write(b"a\n")
    p.stdin.flush()
    assert p.stdout.readline() == b"first a\n"  # before the second line was even written
    p.stdin.write(b"b\n")
    p.stdin.flush()
    assert p.stdout.readline() == b"second b\n"
    assert p.wait(30) == 0  # its stdin still open
    p.stdin.close()


def fifos(cluster, pid: int) -> list:
    """The stdin FIFOs ``mcemu run`` of ``pid`` made in the cluster's home."""
    return sorted((cluster.home / "input").glob(f"run-{pid}-*.fifo"))


def run_reading_stdin(cluster, prog):
    """``mcemu run -n 1 prog`` with a pipe as its stdin, once its FIFO is made and its rank 0 runs."""
    p = subprocess.Popen([sys.executable, "-m", "emulator", "run", "-n", "1", sys.executable, str(prog)],
                         env=cluster.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    cluster.record(p)
    assert p.stdout.readline() == b"ready\n"  # rank 0 has opened the FIFO: the job runs
    ct = round(psutil.Process(p.pid).create_time() * 100)
    assert [f.name.startswith(f"run-{p.pid}-{ct}-") for f in fifos(cluster, p.pid)] == [True]
    return p


@pytest.mark.live
def test_the_fifo_of_a_run_killed_by_sigkill_goes_at_the_next_run_and_at_down(cluster, tmp_path):
    """A killed ``mcemu run`` cannot remove its FIFO: the next ``run`` does, and ``down``; a live
    run's FIFO stays through both."""
    cluster.up(*UP_2x2)
    prog = tmp_path / "read.py"
    prog.write_text("import sys\nprint('ready', flush=True)\nsys.stdin.read()\n")
    killed = run_reading_stdin(cluster, prog)
    stale = fifos(cluster, killed.pid)
    killed.kill()
    killed.wait(10)
    assert [f for f in stale if f.exists()] == stale  # left behind
    live = run_reading_stdin(cluster, prog)  # the next run: the killed one's FIFO goes, its own is made
    assert not any(f.exists() for f in stale)
    mine = fifos(cluster, live.pid)
    killed = run_reading_stdin(cluster, prog)
    stale = fifos(cluster, killed.pid)
    killed.kill()
    killed.wait(10)
    cluster.down()
    assert not any(f.exists() for f in stale)
    assert live.poll() is None and all(f.exists() for f in mine)  # its command still runs
    live.terminate()
    live.wait(30)
    assert not any(f.exists() for f in mine)  # it removed its own as it ended


def test_a_sweep_removes_only_fifos_whose_maker_is_gone(tmp_path):
    """A pid reused by another process (another create time) counts as gone; the FIFO of a live
    maker, an older name of a live pid, another kind of file or another name stay."""
    import psutil

    from emulator.cli._stdin import sweep

    d = tmp_path / "input"
    d.mkdir()
    me, ct = os.getpid(), round(psutil.Process().create_time() * 100)
    nobody = 2 ** 22 + 7  # above Linux's PID_MAX_LIMIT: no process has it
    gone = [d / f"run-{me}-{ct + 500}-ab.fifo", d / f"run-{nobody}-{ct}-ab.fifo", d / f"run-{nobody}-ab.fifo"]
    kept = [d / f"run-{me}-{ct}-ab.fifo", d / f"run-{me}-cd.fifo", d / "other.fifo"]
    for f in gone + kept:
        os.mkfifo(f)
    kept.append(d / f"run-{nobody}-{ct}-ef.fifo")
    kept[-1].write_text("a plain file")
    assert sorted(sweep(tmp_path)) == sorted(gone)
    assert all(f.exists() for f in kept) and not any(f.exists() for f in gone)
    assert sweep(tmp_path / "nowhere") == []


@pytest.mark.live
def test_a_missing_directory_fails_the_task_which_says_why_and_harms_nothing(cluster, tmp_path):
    cluster.up(*UP_2x2)
    gone = tmp_path / "gone"
    rc, out, err = mcemu(cluster, "run", "-n", 2, "-l", "-D", gone, "true", stdin=subprocess.DEVNULL)
    why = f"cannot start task: its working directory {gone} is not a directory on this host"
    assert rc == 127, (out, err)
    assert all(why in lines_of(out, r)[0] for r in (0, 1)), out  # in each rank's output
    assert why in err  # and in the job's reason
    job = cluster.client.queue(all=True)["jobs"][-1]
    assert job["state"] == "failed" and job["cwd"] == str(gone)
    # the nodes and the daemon serve on
    rc, out, err = mcemu(cluster, "run", "-n", 4, "-l", "-D", tmp_path, "pwd", stdin=subprocess.DEVNULL)
    assert rc == 0 and all(lines_of(out, r) == [str(tmp_path)] for r in range(4)), (out, err)


@pytest.mark.live
def test_submit_command_runs_in_the_callers_directory_also_after_a_recovery(cluster, tmp_path):
    """The directory is journaled with the job: a daemon killed while it waits keeps it."""
    cluster.up(*UP_2x2)
    c = cluster.client
    big = c.submit({"shape": [2, 2]}, 1000, "big", "sleep 60")
    wait_for(lambda: c.queue(jobs=[big])["jobs"][0]["state"] == "running", 10, "the big job")
    rc, out, err = mcemu(cluster, "submit", "--nodes", 1, "--runtime", 10, "--command", "pwd", "--json", cwd=tmp_path)
    assert rc == 0, err
    jid = json.loads(out)["job"]
    os.kill(cluster.daemon_pid(), signal.SIGKILL)
    c.close()
    cluster._client = None
    wait_for(lambda: cluster.daemon_pid() is None, 5, "the daemon to be gone")
    cluster.mcemu("up", "--detach")
    cluster.record()
    cluster.client.cancel(big)
    wait_for(lambda: cluster.client.queue(jobs=[jid])["jobs"][0]["state"] == "completed", 30, "the pwd job")
    assert (cluster.home / "output" / f"job{jid}.0.out").read_text() == f"{tmp_path}\n"
    rc, out, err = mcemu(cluster, "submit", "--nodes", 1, "--runtime", 1, "-D", tmp_path)
    assert rc == 2 and "-D/--chdir goes with --command" in err


@pytest.mark.live
def test_job_ids_go_on_over_down_and_up_and_a_trace_starts_empty(cluster, tmp_path):
    cluster.up(*UP_2x2, "--network", "wormhole", "--net-time", "virtual")
    rc, out, err = mcemu(cluster, "run", "-n", 4, "true", stdin=subprocess.DEVNULL)
    assert rc == 0, err
    first = cluster.client.queue(all=True)["jobs"][-1]["id"]
    cluster.down()
    cluster.up(*UP_2x2, "--network", "wormhole", "--net-time", "virtual")
    # a stale rank file where the next job's trace goes (a home whose journal was removed)
    stale = cluster.home / "traces" / f"job-{first + 1}"
    stale.mkdir(parents=True)
    (stale / "rank-3.json").write_text("{}")
    rc, out, err = mcemu(cluster, "run", "-n", 2, "-l", sys.executable, ROOT / "docs/examples/transpose.py", 8,
                         stdin=subprocess.DEVNULL, timeout=120)
    assert rc == 0 and "0: transpose ok" in out, (out, err)
    jobs = cluster.client.queue(all=True)["jobs"]
    assert [j["id"] for j in jobs] == [first + 1]  # not 1 again
    assert sorted(f.name for f in stale.iterdir()) == ["rank-0.json", "rank-1.json"]
    doc = cluster.mcemu_json("net", "replay", stale)
    assert doc["messages"]["count"] == jobs[0]["comm"]["count"]


@pytest.mark.live
def test_a_submit_refuses_paths_it_cannot_use_and_changes_nothing(cluster):
    cluster.up(*UP_2x2)
    from emulator.live.client import DaemonError

    with pytest.raises(DaemonError, match="cwd only go with a command"):
        cluster.client.submit({"nodes": 1}, 10, cwd="/tmp")
    assert cluster.client.queue(all=True)["jobs"] == []


def test_the_schema_wants_absolute_bounded_paths():
    ok = {"v": P.VERSION, "type": "submit", "id": 1, "request": {"nodes": 1}, "runtime": 1.0, "command": "true"}
    assert P.validate({**ok, "cwd": "/a/b", "stdin": "/h/input/x.fifo"})["cwd"] == "/a/b"
    assert P.validate({**ok, "cwd": None})["cwd"] is None
    for bad in ("relative", "", "/a\0b", "/" + "x" * MAX_PATH, 5, b"/bytes"):
        for field in ("cwd", "stdin"):
            with pytest.raises(P.ProtocolError) as e:
                P.decode(P.packer().pack({**ok, field: bad}))
            assert e.value.code == "bad-field" and "absolute path" in str(e.value)
    run = {"v": P.VERSION, "type": "run", "job": 1, "attempt": 1, "rank": 0, "node": 0, "nodes": [0],
           "runtime_s": 1.0, "command": "true", "cwd": "/w", "stdin": "/i"}
    assert P.validate(dict(run)) == run


class Sink:
    """What Output writes, write by write."""

    def __init__(self):
        self.data = []

    def write(self, b):
        self.data.append(b)

    def flush(self):
        pass


def test_output_older_than_the_submit_is_another_jobs(tmp_path):
    """A file last written before ``run`` submitted is not shown; once the node truncates it for
    this job's rank, what it writes is."""
    f = tmp_path / "job7.0.out"
    f.write_bytes(b"an older job's line\n")
    os.utime(f, (time.time() - 3600, time.time() - 3600))
    sink = Sink()
    out = Output(tmp_path, 7, False, sink, since=time.time() - 0.5)
    out.poll(1)
    assert sink.data == []
    f.write_bytes(b"mine\n")  # truncated and written: now
    out.poll(1, final=True)
    assert b"".join(sink.data) == b"mine\n"


def test_a_line_ended_between_two_polls_is_one_line_at_the_end(tmp_path):
    """The last poll of a file whose line began at the previous one and ended since prints that
    line once, without an empty line after it (a 60 MB far rank showed one, 600,001 lines)."""
    f, sink = tmp_path / "job7.0.out", Sink()
    f.write_bytes(b"one\ntw")
    out = Output(tmp_path, 7, True, sink)
    out.poll(1)
    with open(f, "ab") as w:
        w.write(b"o\nthr")
    out.poll(1)
    with open(f, "ab") as w:
        w.write(b"ee\n")
    out.poll(1, final=True)
    assert b"".join(sink.data) == b"0: one\n0: two\n0: three\n"
    f.write_bytes(b"no newline at the end")
    out = Output(tmp_path, 7, False, sink := Sink())
    out.poll(1, final=True)
    assert b"".join(sink.data) == b"no newline at the end\n"


def test_a_new_journal_goes_on_after_the_closed_ones_ids(tmp_path):
    j = Journal(tmp_path / "journal.db")
    j.job({"id": 7, "name": "x", "request": {"nodes": 1}, "runtime": 1.0, "state": "completed", "submit": 0.0,
           "burn": 0, "attempt": 1, "faults": 0})
    j.commit()
    j.set_meta(config={}, closed=True)
    j.close()
    for _ in range(2):  # a cluster that ran no job keeps the count too
        journal, meta = recovery.open_journal(tmp_path)
        assert meta == {} and journal.get_meta() == {"last_job": 7}
        assert recovery.pending_meta(tmp_path) == {}  # no cluster to recover in it
        journal.set_meta(closed=True)
        journal.close()
