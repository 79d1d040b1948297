"""Standard Workload Format: parsing, replay as jobs, writing simulated schedules."""
from __future__ import annotations

import gzip
from pathlib import Path
from types import SimpleNamespace

import pytest

from emulator.sim.swf import SwfError, SwfRecord, read_jobs, read_swf, write_swf
from emulator.sim.workloads import generate
from scheduler.jobs import Job
from scheduler.topology import Request, parse_topology

TRACES = Path(__file__).resolve().parents[1] / ".." / "shared" / "traces"
NASA = TRACES / "NASA-iPSC-1993-3.1-cln.swf.gz"
needs_nasa = pytest.mark.skipif(not NASA.exists(), reason=f"the NASA iPSC/860 log is not at {NASA}")


def line(*vals):
    vals = list(vals) + [-1] * (18 - len(vals))
    return " ".join(str(v) for v in vals)


def write(tmp_path, text, name="t.swf"):
    p = tmp_path / name
    p.write_text(text)
    return p


# --------------------------------------------------------------------------- the real log


@needs_nasa
def test_nasa_log_replays_every_job_on_a_7_cube():
    jobs = read_jobs(NASA, "hypercube:7")
    assert len(jobs) == 18_239
    assert jobs.skipped_count == 0
    assert len(jobs.clamped) == 173  # run time 0 in the log: kept, not dropped
    topo = parse_topology("hypercube:7")
    sizes = set()
    for j in jobs:
        p = j.request.processors_needed
        assert j.request.kind == "processors" and p & (p - 1) == 0
        assert topo.normalize(j.request).processors_needed == p
        assert j.runtime > 0
        sizes.add(p)
    assert sizes == {1, 2, 4, 8, 16, 32, 64, 128}
    assert all(a.submit <= b.submit for a, b in zip(jobs, jobs[1:]))
    assert len({j.id for j in jobs}) == len(jobs)
    first = jobs[0]
    assert (first.id, first.submit, first.request.processors_needed, first.runtime) == (1, 0.0, 128, 1451.0)
    assert jobs.header["MaxNodes"] == "128"


@needs_nasa
def test_nasa_header():
    log = read_swf(NASA)
    assert (log.max_nodes, log.max_procs) == (128, 128)
    assert log.header["Computer"] == "Intel iPSC/860"
    assert log.header["Information"].splitlines() == [
        "http://www.nas.nasa.gov/", "http://www.cs.huji.ac.il/labs/parallel/workload/"]
    assert "start times" in log.header["Note"]
    assert len(log.records) == 18_239


@needs_nasa
def test_nasa_log_on_a_smaller_cube_names_the_job():
    with pytest.raises(SwfError, match=r"job 1 asks for 128 processors; hypercube:6 has 64"):
        read_jobs(NASA, "hypercube:6")


@needs_nasa
def test_nasa_time_unit():
    jobs = read_jobs(NASA, "hypercube:7", time_unit=60.0)
    assert jobs[0].runtime == pytest.approx(1451 / 60)
    assert jobs[1].submit == pytest.approx(1460 / 60)
    z = next(j for j in jobs if j.id == jobs.clamped[0])
    assert z.runtime == pytest.approx(0.5 / 60)


# --------------------------------------------------------------------------- parsing


def test_fields_run_time_and_sizes(tmp_path):
    p = write(tmp_path, "\n".join([
        "; MaxProcs: 32",
        line(1, 0, -1, 100, 8),
        line(2, 5, -1, 0, 4),             # run time 0: clamped
        line(3, 6, -1, 50, -1, -1, -1, 16),  # no allocated count: field 8
        line(4, 7, -1, -1, 2),            # unknown run time: skipped
        line(5, 8, -1, 10, -1),           # unknown size: skipped
        line(6, -1, -1, 10, 2),           # unknown submit: skipped
        "",
    ]))
    jobs = read_jobs(p, "mesh:8x4", min_runtime=2.0)
    assert [(j.id, j.submit, j.request, j.runtime) for j in jobs] == [
        (1, 0, Request.processors(8), 100),
        (2, 5, Request.processors(4), 2.0),
        (3, 6, Request.processors(16), 50),
    ]
    assert jobs.clamped == [2]
    assert jobs.skipped == {"unknown run time": [4], "unknown size": [5], "unknown submit time": [6]}
    assert jobs.summary()["skipped"] == {"unknown run time": 1, "unknown size": 1, "unknown submit time": 1}


def test_unsorted_submits_are_sorted_stably(tmp_path):
    p = write(tmp_path, "\n".join([line(1, 10, -1, 5, 1), line(2, 3, -1, 5, 1), line(3, 10, -1, 5, 1)]))
    assert [j.id for j in read_jobs(p, "hypercube:2")] == [2, 1, 3]


@pytest.mark.parametrize("bad,match", [
    (line(2, 5, -1, 10)[:-3], r"t\.swf:3: an SWF job line needs 18 fields, found 17"),
    (line(2, 5, -1, "ten", 4), r"t\.swf:3: field 4 \(run time\) is not a number: 'ten'"),
    (line(2, 5, -1, 10, 4.5), r"t\.swf:3: field 5 \(allocated processors\) must be an integer"),
])
def test_malformed_line_names_its_line(tmp_path, bad, match):
    p = write(tmp_path, "; Version: 2.2\n" + line(1, 0, -1, 10, 4) + "\n" + bad + "\n")
    with pytest.raises(SwfError, match=match):
        read_swf(p)
    with pytest.raises(SwfError, match=match):
        read_jobs(p, "hypercube:4")


_TRICKY = [
    "-", "1-2", "--1", "-1-", "- 1", "+1", "1_0", "0x10", "1e3", "1.0", "nan", "\u0663", "\xa0",
    "9223372036854775807", "9223372036854775808", "-9223372036854775809", "99999999999999999999999",
    "007", "-0", "-007",
]


@pytest.mark.parametrize("tok", _TRICKY)
@pytest.mark.parametrize("where", [0, 1, 17])
def test_fast_columns_agree_with_read_swf_or_decline(tmp_path, tok, where):
    """The column reader's values are int()'s, or it declines (None) and read_swf decides."""
    from emulator.sim.swf.log import FIELDS
    from emulator.sim.swf.replay import _fast_columns

    vals = [str(v) for v in (3, 2, -1, 10, 4)] + ["-1"] * 13
    vals[where] = tok
    text = ("\n; Version: 2.2\n" + line(1, 0, -1, 10, 4) + "\n" + "\t".join(vals) + "  \n" + line(5, 9, -1, 7, 2)
            + "\n \n\n")
    p = write(tmp_path, text)
    wanted = tuple(range(18))
    fast = _fast_columns(p, wanted)
    try:
        log = read_swf(p)
    except SwfError:
        assert fast is None
        return
    if fast is None:
        return
    comments, columns, lines = fast
    columns = [c.tolist() for c in columns]
    assert comments == log.comments and list(lines) == log.lines == [3, 4, 5]
    assert columns == [[r.values()[i] for r in log.records] for i in wanted]
    assert all(type(v) is int for col in columns for v in col)
    assert len(FIELDS) == len(columns)


@pytest.mark.parametrize("text", [
    line(1, 0, -1, 10, 4) + "\n" + line(2, 5, -1, 10)[:-3],  # 17 fields
    line(1, 0, -1, 10, 4)[:-3] + "\n" + line(2, 5, -1, 10)[:-3],  # 17 fields on every line
    line(1, 0, -1, 10, 4) + " 7\n" + line(2, 5, -1, 10) + " 7",  # 19
    line(1, 0, -1, 10, 4) + "\r\n" + line(2, 5, -1, 10),
    line(1, 0, -1, 10, 4) + "\n" + line(2, 5, -1, 10) + " ;x",
    line(1, 0, -1, 10, 4) + "\n\n" + line(2, 5, -1, 10),  # a blank line among the jobs
    line(1, 0, -1, 10, 4) + "\n \t\n" + line(2, 5, -1, 10),
    line(1, 0, -1, 10, 4) + "\n; a comment\n" + line(2, 5, -1, 10),
    "; \xe9t\xe9\n" + line(1, 0, -1, 10, 4) + "\n" + line(2, 5, -1, 10) + " \xe9",
])
def test_fast_columns_decline_what_is_unusual(tmp_path, text):
    from emulator.sim.swf.replay import _fast_columns

    assert _fast_columns(write(tmp_path, text), (0, 1)) is None


def test_fast_columns_of_a_log_without_jobs(tmp_path):
    from emulator.sim.swf.replay import _fast_columns

    comments, columns, lines = _fast_columns(write(tmp_path, "; Version: 2.2\n\n"), (0, 3))
    assert (comments, [c.tolist() for c in columns], list(lines)) == ([" Version: 2.2"], [[], []], [])
    assert len(read_jobs(write(tmp_path, "; Version: 2.2\n"), "hypercube:2")) == 0


def test_job_larger_than_the_machine_is_named(tmp_path):
    p = write(tmp_path, "\n".join([line(1, 0, -1, 10, 4), line(77, 1, -1, 10, 33)]))
    with pytest.raises(SwfError, match=r":2: job 77 asks for 33 processors; mesh:8x4 has 32"):
        read_jobs(p, "mesh:8x4")
    assert len(read_jobs(p, "hypercube:6")) == 2


def test_duplicate_job_number(tmp_path):
    p = write(tmp_path, "\n".join([line(1, 0, -1, 10, 4), line(1, 1, -1, 10, 4)]))
    with pytest.raises(SwfError, match="job number 1 repeats"):
        read_jobs(p, "hypercube:4")


def test_gzip_is_recognized_by_magic(tmp_path):
    p = tmp_path / "log.txt"  # no .gz suffix
    with gzip.open(p, "wt") as f:
        f.write("; MaxNodes: 16\n" + line(1, 0, -1, 10, 4) + "\n")
    log = read_swf(p)
    assert log.max_nodes == 16 and log.records == [SwfRecord(1, 0, -1, 10, 4)]


def test_bad_options(tmp_path):
    p = write(tmp_path, line(1, 0, -1, 10, 4))
    with pytest.raises(SwfError):
        read_jobs(p, "hypercube:4", time_unit=0)
    with pytest.raises(SwfError):
        read_jobs(p, "hypercube:4", min_runtime=-1)


# --------------------------------------------------------------------------- writing


@pytest.mark.parametrize("name", ["out.swf", "out.swf.gz"])
def test_round_trip_generated_jobs(tmp_path, name):
    jobs = list(generate("mesh:16x16", 0.7, "processors", "hyperexp", seed=3, jobs=2000))
    p = tmp_path / name
    assert write_swf(p, jobs, {"MaxProcs": 256, "Note": "generated\nby a test"}) == 2000
    if name.endswith(".gz"):
        assert p.read_bytes()[:2] == b"\x1f\x8b"
    back = read_jobs(p, "mesh:16x16")
    assert [(j.id, j.submit, j.request, j.runtime) for j in back] == \
           [(j.id, j.submit, j.request, j.runtime) for j in jobs]
    assert back.header["MaxProcs"] == "256"
    assert back.header["Note"] == "generated\nby a test"
    assert back.header["Version"] == "2.2"


def test_round_trip_cube_jobs_keep_their_size(tmp_path):
    jobs = list(generate("hypercube:6", 0.5, "normal", "uniform", seed=1, jobs=300))
    p = tmp_path / "c.swf"
    write_swf(p, jobs)
    topo = parse_topology("hypercube:6")
    back = read_jobs(p, topo)
    assert [topo.normalize(j.request) for j in back] == [j.request for j in jobs]


def test_write_simulated_schedule_fills_wait_and_run(tmp_path):
    recs = [
        SimpleNamespace(id=2, submit=4.0, start=9.5, end=12.0, asked=8, given=4, folds=1, runtime=1.25),
        SimpleNamespace(id=1, submit=0.0, start=0.0, end=3.0, asked=4, given=4, folds=0, runtime=3.0),
    ]
    p = tmp_path / "sched.swf"
    write_swf(p, recs, {"MaxNodes": 16}, time_unit=2.0)
    log = read_swf(p)
    assert [r.job for r in log.records] == [1, 2]  # submit order
    r = log.records[1]
    assert (r.submit, r.wait, r.run, r.procs, r.req_procs, r.status) == (8, 11, 5, 4, 8, 1)
    assert (r.cpu, r.user, r.think) == (-1, -1, -1)
    text = p.read_text().splitlines()
    assert text[0] == "; Version: 2.2" and text[1] == "; MaxNodes: 16"
    assert all(len(t.split()) == 18 for t in text if not t.startswith(";"))
    # replaying the schedule runs each job as it ran: on the processors it got
    back = read_jobs(p, "hypercube:4", time_unit=2.0)
    assert [(j.id, j.submit, j.runtime, j.request.processors_needed) for j in back] == \
           [(1, 0.0, 3.0, 4), (2, 4.0, 2.5, 4)]


def test_write_integer_times(tmp_path):
    p = tmp_path / "i.swf"
    write_swf(p, [Job(1, 0.4, Request.cube(2), 2.6)], integer_times=True)
    assert read_swf(p).records[0].values()[:5] == (1, 0, -1, 3, 4)


def test_failed_write_leaves_the_old_file(tmp_path):
    p = tmp_path / "keep.swf"
    write_swf(p, [SwfRecord(1, 0, -1, 10, 4)])
    before = p.read_text()
    with pytest.raises(SwfError, match="cannot write"):
        write_swf(p, [SwfRecord(2, 0, -1, 10, 4), object()])
    with pytest.raises(SwfError, match="unknown SWF field"):
        write_swf(p, [{"job": 1, "runtime": 3}])
    assert p.read_text() == before
    assert list(tmp_path.iterdir()) == [p]


def test_write_schedule_of_a_real_simulation(tmp_path):
    from emulator.sim.metrics import JobRecord
    from emulator.sim.simulator import simulate
    from emulator.sim.swf import write_schedule

    jobs = list(generate("hypercube:5", 0.9, "uniform", "exponential", seed=2, jobs=400))
    res = simulate("hypercube:5", "naive", "fcfs", jobs, keep_records=True)
    assert len(res.records) == 400 and all(isinstance(r, JobRecord) for r in res.records)
    p = tmp_path / "run.swf.gz"
    assert write_schedule(p, res.records, topology="hypercube:5", note="fcfs test") == 400
    log = read_swf(p)
    assert (log.max_nodes, log.header["Installation"], log.header["Note"]) == (32, "hypercube:5", "fcfs test")
    by_id = {j.id: j for j in jobs}
    waits = 0
    for r in log.records:
        j = by_id[r.job]
        assert r.submit == j.submit and r.status == 1 and r.wait >= 0
        assert r.run == pytest.approx(j.runtime) and r.procs == j.request.processors_needed
        waits += r.wait > 0
    assert waits > 0  # at load 0.9 some jobs queued


def test_truncated_or_corrupt_gzip_is_a_clear_error(tmp_path):
    full = tmp_path / "full.swf.gz"
    with gzip.open(full, "wt") as f:
        f.write("".join(line(i, i, -1, 10, 4) + "\n" for i in range(1, 400)))
    cut = tmp_path / "cut.swf.gz"
    cut.write_bytes(full.read_bytes()[:120])
    with pytest.raises(SwfError, match="cut.swf.gz.*gzip"):
        read_jobs(cut, "hypercube:4")
    bad = tmp_path / "bad.swf.gz"
    bad.write_bytes(b"\x1f\x8b" + b"x" * 30)
    with pytest.raises(SwfError, match="bad.swf.gz.*gzip"):
        read_swf(bad)


def test_writing_onto_a_directory_is_refused_and_leaves_nothing(tmp_path):
    d = tmp_path / "out"
    d.mkdir()
    with pytest.raises(SwfError, match="directory"):
        write_swf(d, [SwfRecord(1, 0, -1, 10, 4)])
    with pytest.raises(OSError):  # the directory of the output does not exist
        write_swf(tmp_path / "none" / "x.swf", [SwfRecord(1, 0, -1, 10, 4)])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert list(d.iterdir()) == []


@pytest.mark.parametrize("time_unit", [1.0, 3.0, 0.1])
def test_column_replay_equals_the_loop(tmp_path, monkeypatch, time_unit):
    """read_jobs builds the usual log's jobs column by column (_plain_jobs); the loop that
    handles every case gives the same jobs, clamps and header."""
    import emulator.sim.swf.replay as swf

    text = "\n".join(["; Version: 2.2", "; MaxNodes: 16",
                      line(7, 40, -1, 5, 4, -1, -1, 4, 100, -1, 1, 3),
                      line(3, 10, -1, 0, -1, -1, -1, 3, -1, -1, 1, -1),  # run 0, size from field 8
                      "",
                      line(9, 10, -1, 7, 16, -1, -1, -1, 50, -1, 0, 2),
                      line(4, 0, -1, 12345678901, 1, -1, -1, 1, 7, -1, 1, 0)])
    p = write(tmp_path, text)
    fast = swf.read_jobs(p, "hypercube:4", time_unit=time_unit, min_runtime=0.25)
    monkeypatch.setattr(swf, "_plain_jobs", lambda *a: None)
    slow = swf.read_jobs(p, "hypercube:4", time_unit=time_unit, min_runtime=0.25)
    key = lambda j: (j.id, j.submit, j.request, j.runtime, j.name, j.meta)  # noqa: E731
    assert [key(j) for j in fast] == [key(j) for j in slow]
    assert [j.id for j in fast] == [4, 3, 9, 7]
    assert all(type(j.id) is int and type(j.submit) is float and type(j.runtime) is float for j in fast)
    assert all(type(v) in (int, float) for j in fast for v in j.meta.values())
    assert (fast.clamped, fast.skipped, fast.header, fast.time_unit, fast.path) == \
        (slow.clamped, slow.skipped, slow.header, slow.time_unit, slow.path) == ([3], {}, fast.header, time_unit, str(p))
    assert fast.header["MaxNodes"] == "16"



@pytest.mark.parametrize("users, req_times, keys", [
    ((3, 0, 7), (100, 5, 9), {"swf_line", "user", "requested_time"}),  # every job knows both
    ((3, 0, 7), (-1, -1, -1), {"swf_line", "user"}),  # the NASA log: no requested times
    ((3, -1, 7), (100, -1, -1), None),  # a mix: each job as it is
])
def test_replayed_metas_column_by_column_equal_the_loop(tmp_path, monkeypatch, users, req_times, keys):
    import emulator.sim.swf.replay as swf

    text = "\n".join(line(i + 1, 10 * i, -1, 5, 2, -1, -1, 2, r, -1, 1, u)
                     for i, (u, r) in enumerate(zip(users, req_times)))
    p = write(tmp_path, text)
    fast = [j.meta for j in swf.read_jobs(p, "hypercube:2", time_unit=2.0)]
    monkeypatch.setattr(swf, "_plain_jobs", lambda *a: None)
    slow = [j.meta for j in swf.read_jobs(p, "hypercube:2", time_unit=2.0)]
    assert fast == slow
    assert [type(v) for m in fast for v in m.values()] == [type(v) for m in slow for v in m.values()]
    if keys is not None:
        assert all(set(m) == keys for m in fast)
    else:
        assert [set(m) for m in fast] == [{"swf_line", "user", "requested_time"}, {"swf_line"}, {"swf_line", "user"}]
    assert fast[0]["swf_line"] == 1 and (keys is None or "requested_time" not in keys or fast[0]["requested_time"] == 50.0)


def test_blank_lines_and_comments_among_the_jobs_are_read_the_long_way(tmp_path):
    from emulator.sim.swf.replay import _fast_columns

    text = "; Version: 2.2\n\n; é\n" + line(1, 0, -1, 10, 4) + "\n\n; note\n" + line(2, 5, -1, 10, 2) + "\n"
    p = write(tmp_path, text)
    assert _fast_columns(p, (0,)) is None
    jobs = read_jobs(p, "hypercube:3")
    assert [(j.id, j.meta["swf_line"]) for j in jobs] == [(1, 4), (2, 7)]
    assert read_swf(p).comments == [" Version: 2.2", " é", " note"]
    p = write(tmp_path, text.replace("\n\n; note", ""), "u.swf")
    comments, columns, lines = _fast_columns(p, (0, 1))
    assert (comments, [c.tolist() for c in columns], list(lines)) == ([" Version: 2.2", " é"], [[1, 2], [0, 5]], [4, 5])


def test_a_replayed_jobs_meta_is_made_when_read_and_behaves_as_a_jobs(tmp_path):
    """The usual log's jobs make their meta dict when it is first read (issue 18); reading,
    setting, dataclasses.replace, copy and pickle behave as for a plain Job."""
    import copy
    import dataclasses
    import pickle

    from scheduler.jobs import Job

    text = "; Version: 2.2\n" + "\n".join(line(i + 1, 10 * i, -1, 5, 2, -1, -1, 2, 60, -1, 1, 7 + i)
                                          for i in range(3))
    jobs = read_jobs(write(tmp_path, text), "hypercube:2", time_unit=2.0)
    a, b, c = jobs
    assert isinstance(a, Job)
    assert b.meta == {"swf_line": 3, "user": 8, "requested_time": 30.0}
    assert b.meta is b.meta  # made once, then kept
    b.meta["note"] = 1
    assert b.meta["note"] == 1
    c.meta = {"mine": True}
    assert c.meta == {"mine": True}
    moved = dataclasses.replace(a, submit=99.0)
    assert (moved.id, moved.submit, moved.runtime, moved.meta) == (1, 99.0, 2.5, a.meta)
    for clone in (copy.copy(a), pickle.loads(pickle.dumps(a))):
        assert type(clone) is Job
        assert (clone.id, clone.submit, clone.request, clone.runtime, clone.meta) == \
            (a.id, a.submit, a.request, a.runtime, {"swf_line": 2, "user": 7, "requested_time": 30.0})
    assert pickle.loads(pickle.dumps(c)).meta == {"mine": True}
    with pytest.raises(Exception, match="run time"):  # a Job's own checks still hold
        dataclasses.replace(a, runtime=-1.0)


def test_a_time_unit_that_makes_a_time_infinite_is_refused_as_before(tmp_path):
    from scheduler.jobs import JobError

    p = write(tmp_path, line(1, 10, -1, 5, 2))
    with pytest.raises(JobError, match="submit time"):
        read_jobs(p, "hypercube:2", time_unit=1e-320)
