"""``mcemu run --connect tcp://...`` from a host that cannot read the daemon's ``output/`` asks
the daemon for the ranks' output (``tail``: emulator.live.client_handlers ``on_tail``): in
memory first (offsets, a file begun afresh, a job not started, the owner's only, bounded
replies), then a real cluster on tcp and ``mcemu run`` from another home with the admin's key."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from conftest import ALLOCATOR, SCHEDULER, free_port
from emulator.live.auth import Principal
from emulator.live.client_handlers import TAIL_BYTES
from tests.fixtures.stub_daemon import Stub


def _running(s: Stub):
    s.register_all()
    assert s.call("submit", request={"cube": 2}, runtime=50.0, command="echo hi")["type"] == "ok"
    (jr,) = s.d.jobs.values()
    assert jr.state == "running"
    return jr


def test_tail_reads_each_rank_from_its_offset_and_a_shorter_file_from_its_start(tmp_path):
    s = Stub(tmp_path)
    jr = _running(s)
    out = tmp_path / "output"
    (out / f"job{jr.id}.0.out").write_bytes(b"zero\nmore")
    (out / f"job{jr.id}.2.out").write_bytes(b"new\n")  # a new attempt's file: shorter than asked
    r = s.call("tail", job=jr.id, at=[0, 0, 9, 0])
    assert r["type"] == "ok" and r["data"]["state"] == "running" and r["data"]["attempt"] == 1
    assert r["data"]["data"] == [[0, b"zero\nmore"], [0, b""], [0, b"new\n"], [0, b""]]
    assert s.call("tail", job=jr.id, at=[5, 0])["data"]["data"] == [[5, b"more"], [0, b""]]
    assert s.call("tail", job=jr.id, at=[9])["data"]["data"] == [[9, b""]]


def test_a_file_last_written_before_the_attempt_started_is_an_earlier_attempts(tmp_path):
    s = Stub(tmp_path)
    jr = _running(s)
    f = tmp_path / "output" / f"job{jr.id}.1.out"
    f.write_bytes(b"attempt 1 of a requeued job\n")
    old = time.time() - 60
    os.utime(f, (old, old))  # its rank of this attempt has not started (and truncated it) yet
    assert s.call("tail", job=jr.id, at=[0, 0])["data"]["data"] == [[0, b""], [0, b""]]
    f.write_bytes(b"attempt 2\n")  # now it has
    assert s.call("tail", job=jr.id, at=[0, 0])["data"]["data"] == [[0, b""], [0, b"attempt 2\n"]]


def test_a_reply_carries_at_most_tail_bytes_a_share_a_rank_and_says_when_there_is_more(tmp_path):
    s = Stub(tmp_path)
    jr = _running(s)
    big = bytes(range(256)) * (TAIL_BYTES // 256)
    (tmp_path / "output" / f"job{jr.id}.0.out").write_bytes(big + b"tail\n")  # a rank that prints fast
    (tmp_path / "output" / f"job{jr.id}.1.out").write_bytes(b"a line\n")
    half = TAIL_BYTES // 2
    r = s.call("tail", job=jr.id, at=[0, 0])["data"]
    assert r["data"] == [[0, big[:half]], [0, b"a line\n"]] and r["more"]  # the other rank is not starved
    r = s.call("tail", job=jr.id, at=[half, 7])["data"]
    assert r["data"] == [[half, big[half:]], [7, b""]] and r["more"]
    r = s.call("tail", job=jr.id, at=[len(big), 7])["data"]
    assert r["data"] == [[len(big), b"tail\n"], [7, b""]] and not r["more"]
    # offsets past the job's ranks are not looked at
    assert len(s.call("tail", job=jr.id, at=[0] * 1000)["data"]["data"]) == 4


def test_with_many_ranks_each_has_its_share_and_the_reply_stays_within_its_bound(tmp_path):
    s = Stub(tmp_path, topology="mesh:8x8", allocator="first-fit")
    s.register_all()
    assert s.call("submit", request={"shape": [8, 8]}, runtime=50.0, command="echo hi")["type"] == "ok"
    (jr,) = s.d.jobs.values()
    for r in range(64):
        (tmp_path / "output" / f"job{jr.id}.{r}.out").write_bytes(b"x" * (TAIL_BYTES // 32))
    r = s.call("tail", job=jr.id, at=[0] * 64)["data"]
    assert [len(d) for _, d in r["data"]] == [TAIL_BYTES // 64] * 64 and r["more"]


def test_a_job_not_started_has_no_output_and_only_its_owner_and_the_admin_read_it(tmp_path):
    s = Stub(tmp_path)
    jr = _running(s)
    (tmp_path / "output" / f"job{jr.id}.0.out").write_bytes(b"secret\n")
    # a second job waits for the first's nodes: a file of its name would be no one's yet
    assert s.call("submit", request={"cube": 2}, runtime=5.0, command="true")["type"] == "ok"
    (tmp_path / "output" / "job2.0.out").write_bytes(b"an older cluster's\n")
    assert s.call("tail", job=2, at=[0])["data"] == {"data": [], "state": "queued", "attempt": 0, "more": False}
    assert s.call("tail", job=99, at=[0])["code"] == "unknown-job"
    s.d.peers.update({b"bob": Principal("bob", "client", None, "B" * 40),
                      b"boss": Principal("boss", "admin", None, "A" * 40)})
    r = s.call("tail", ident=b"bob", job=jr.id, at=[0])
    assert r["type"] == "error" and r["code"] == "forbidden" and "only its own" in r["message"]
    assert s.call("tail", ident=b"boss", job=jr.id, at=[0])["data"]["data"] == [[0, b"secret\n"]]


@pytest.mark.parametrize("fields, code", [({"job": 1, "at": [-1]}, "bad-field"), ({"job": 1, "at": "0"}, "bad-field"),
                                          ({"job": 1}, "missing-field"), ({"job": "../x", "at": [0]}, "bad-field"),
                                          ({"job": 1, "at": [0], "path": "/etc/passwd"}, "unknown-field")])
def test_a_bad_tail_is_refused_and_the_daemon_serves_on(tmp_path, fields, code):
    import msgpack

    from emulator.live import protocol as P

    s = Stub(tmp_path)
    _running(s)
    s.d.handle([b"c", msgpack.packb({"v": P.VERSION, "type": "tail", "id": 7, **fields}, use_bin_type=True)])
    (reply,) = [P.decode(f, max_size=P.MAX_REPLY) for _, f in s.d.outbox]
    s.d.outbox.clear()
    assert reply["type"] == "error" and reply["code"] == code
    assert s.call("ping")["data"] == {"pong": True}


PROG = """\
import os, sys
r = int(os.environ["MCEMU_RANK"])
for i in range(int(sys.argv[1])):
    print("line", i, "of", r)
sys.stdout.write("no newline at the end of " + str(r))
"""


@pytest.mark.live
def test_mcemu_run_from_another_home_over_tcp_streams_every_rank_once(cluster, tmp_path):
    cluster.mcemu("keys", "init", "--admin", "boss")
    port = free_port()
    cluster.up("--topology", "hypercube:2", "--allocator", ALLOCATOR, "--scheduler", SCHEDULER,
               "--listen", f"127.0.0.1:{port}")
    prog, n = tmp_path / "prog.py", 20_000  # 300 KiB a rank: many replies of TAIL_BYTES
    prog.write_text(PROG)
    elsewhere = tmp_path / "laptop"
    elsewhere.mkdir()
    env = dict(cluster.env, MCEMU_HOME=str(elsewhere))  # a client that has none of the daemon's files
    p = subprocess.Popen([sys.executable, "-m", "emulator", "run", "--connect", f"tcp://127.0.0.1:{port}",
                          "--key", str(cluster.home / "keys" / "issued" / "boss.toml"), "-n", "4", "--label",
                          sys.executable, str(prog), str(n)], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    cluster.record(p)
    lines: list[str] = []
    t = threading.Thread(target=lambda: lines.extend(iter(p.stdout.readline, "")), daemon=True)
    t.start()
    try:
        rc = p.wait(120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(5)
    t.join(5)
    err = p.stderr.read()
    assert rc == 0, err
    assert "stays on the nodes' host" not in err
    for r in range(4):
        mine = [x.rstrip("\n") for x in lines if x.startswith(f"{r}: ")]
        assert mine == [f"{r}: line {i} of {r}" for i in range(n)] + [f"{r}: no newline at the end of {r}"], \
            (r, len(mine), mine[-2:])
    assert not (elsewhere / "output").exists() or not any((elsewhere / "output").iterdir())


class _Daemon:
    """A daemon of another host as Output sees it: ``tail`` answers from the files it holds."""

    def __init__(self):
        self.files, self.attempt, self.asked = {}, 1, []

    def tail(self, job, at):
        self.asked.append(list(at))
        rows = []
        for r, off in enumerate(at):
            data = self.files.get(r, b"")
            start = 0 if len(data) < off else off
            rows.append([start, data[start:start + 4]])  # small replies: the end is asked for again
        return {"data": rows, "state": "running", "attempt": self.attempt}


def test_the_reader_of_a_far_daemon_reads_each_attempt_once_and_ends_every_line():
    import io

    from emulator.cli.run import Output

    d, sink = _Daemon(), io.BytesIO()
    out = Output(None, 1, True, sink=sink, client=d)
    d.files = {0: b"one\ntwo\n", 1: b"x\n"}
    out.poll(2)
    out.poll(2)
    assert sink.getvalue() == b"0: one\n1: x\n0: two\n"
    # requeued: the new attempt's files are as long as the old ones already; a reply of the new
    # attempt to the old offsets is not taken, and once the requeue is seen they are read anew
    d.attempt, d.files = 2, {0: b"ONE\nTWO\n", 1: b"y\nno newline"}
    out.poll(2)
    assert sink.getvalue() == b"0: one\n1: x\n0: two\n"
    out.again(0.0)
    out.poll(2, final=True)
    assert sink.getvalue() == b"0: one\n1: x\n0: two\n0: ONE\n1: y\n0: TWO\n1: no newline\n"
    assert d.asked[-1] == [8, 12]
