"""``mcemu sweep``: a TOML grid of 2 disciplines x 3 loads x 3 seeds writes the CSV, the figure and
the report; flags give the same sweep; resume; the CI stopping rule; explicit seeds; gang and
trace sweeps; malformed TOML and unknown policies are one-line errors before any run; runs in
batches (the same numbers as one at a time, resumed after an interruption mid-batch, their sizes)."""
from __future__ import annotations

import csv
import dataclasses
import json
import math
import sys
from collections import deque
from pathlib import Path

import pytest

from emulator.cli import main
from emulator.experiments.executors import MAX_BATCH, Batcher, Inline, LocalPool
from emulator.experiments.runner import replicate
from emulator.sim import swf
from emulator.sweep import Sweep, SweepError, run_sweep
from emulator.sweep.output import experiment
from emulator.sweep.point import scaled_jobs

GRID = """\
name = "lazy-vs-fcfs"
topology = "hypercube:6"
scheduler = ["lazy", "fcfs"]
load = [0.3, 0.6, 0.9]
service = "exponential"
time = 300
seeds = 3
metric = "mean_queueing_delay"

[params.lazy]
threshold = 20
"""


def _csv(path: Path) -> list[dict]:
    with path.open() as f:
        return list(csv.DictReader(f))


def _sweep(tmp_path, *args) -> tuple[int, dict]:
    rc = main(["sweep", *map(str, args), "--out", str(tmp_path / "out"), "--jobs", "1", "--json"])
    return rc, {}


def test_toml_grid_writes_csv_figure_report(tmp_path, capsys):
    grid = tmp_path / "grid.toml"
    grid.write_text(GRID)
    assert main(["sweep", str(grid), "--out", str(tmp_path / "out"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    out = tmp_path / "out" / "lazy-vs-fcfs"
    rows = _csv(out / "results.csv")
    delay = [r for r in rows if r["metric"] == "mean_queueing_delay"]
    assert len(delay) == 6
    assert {(r["scheduler"], float(r["load"])) for r in delay} == {(s, x) for s in ("lazy", "fcfs")
                                                                  for x in (0.3, 0.6, 0.9)}
    assert all(r["replications"] == "3" and r["capped"] == "0" for r in rows)
    assert {r["dparams"] for r in delay if r["scheduler"] == "lazy"} == {'{"threshold": 20}'}
    assert (out / "figure.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = (out / "REPORT.md").read_text()
    assert 'scheduler = ["lazy", "fcfs"]' in report and "| load | lazy | fcfs |" in report
    assert "3 per point" in report
    assert len((out / "runs.jsonl").read_text().splitlines()) == 18 == summary["replications_computed"]
    # the settings written beside the results run the same sweep again: all from runs.jsonl
    assert main(["sweep", str(out / "sweep.toml"), "--out", str(tmp_path / "out"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["replications_computed"] == 0
    assert _csv(out / "results.csv") == rows

    # the same sweep from flags, on one process: the same numbers
    assert main(["sweep", "--name", "lazy-vs-fcfs", "--topology", "hypercube:6", "--scheduler", "lazy,fcfs",
                 "--load", "0.3,0.6,0.9", "--service", "exponential", "--time", "300", "--seeds", "3",
                 "--out", str(tmp_path / "flags"), "--jobs", "1", "--json"]) == 0
    capsys.readouterr()
    flag_rows = _csv(tmp_path / "flags" / "lazy-vs-fcfs" / "results.csv")
    lazy_fcfs = [r for r in rows if r["scheduler"] == "fcfs"]
    assert [r for r in flag_rows if r["scheduler"] == "fcfs"] == lazy_fcfs


@pytest.mark.parametrize("text, words", [
    ('name = "x"\nload = [0.1, \n', "malformed TOML"),
    ('scheduler = ["lazy", "nope"]\nload = 0.5\ntime = 100\n', "unknown discipline 'nope'"),
    ('allocator = "frame-sliding"\ntopology = "hypercube:5"\ntime = 100\n', "does not work on hypercube:5"),
    ('gang = ["multilevel", "nope"]\ntime = 100\n', "unknown gang policy 'nope'"),
    ('reduction = "rsr:x"\ntime = 100\n', "rsr"),
    ('colour = "red"\n', "unknown setting 'colour'"),
    ('load = [0.5, -1]\ntime = 100\n', "load must be a number > 0"),
    ('scheduler = "lazy"\ntime = 100\n[params.lazy]\nthreshold = "x"\nbogus = 1\n', "lazy"),
    ('time = 100\nmetric = "happiness"\n', "unknown metric 'happiness'"),
    ('load = 0.5\n', "give time"),
])
def test_bad_grid_is_one_line_before_any_run(tmp_path, capsys, text, words):
    grid = tmp_path / "bad.toml"
    grid.write_text(text)
    assert main(["sweep", str(grid), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out").exists()  # nothing started


def test_missing_file_and_no_settings(tmp_path, capsys):
    assert main(["sweep", str(tmp_path / "none.toml")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["sweep"]) == 2
    assert "GRID.toml" in capsys.readouterr().err


def test_ci_rule_and_explicit_seeds(tmp_path, capsys):
    assert main(["sweep", "--name", "ci", "--topology", "hypercube:5", "--scheduler", "fcfs", "--load", "0.3,0.7",
                 "--time", "200", "--precision", "0.2", "--min-reps", "3", "--max-reps", "8",
                 "--out", str(tmp_path), "--jobs", "1", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    for p in s["points"]:
        m = p["metrics"]["mean_queueing_delay"]
        assert 3 <= p["replications"] <= 8
        assert p["capped"] == (m["ci95"] > 0.2 * abs(m["mean"]))
        assert p["capped"] == (p["replications"] == 8) or not p["capped"]
    assert main(["sweep", "--name", "seeded", "--topology", "hypercube:4", "--load", "0.5", "--time", "50",
                 "--seeds", "11,12", "--out", str(tmp_path), "--jobs", "1", "--json"]) == 0
    capsys.readouterr()
    seeds = sorted(json.loads(ln)["seed"] for ln in (tmp_path / "seeded" / "runs.jsonl").read_text().splitlines())
    assert seeds == [11, 12]


def test_gang_and_mixed_sweeps(tmp_path, capsys):
    assert main(["sweep", "--name", "g", "--topology", "hypercube:4", "--gang", "none,multilevel,round-robin",
                 "--load", "0.4,0.8", "--time", "60", "--seeds", "2", "--out", str(tmp_path), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert {(p["params"]["scheduler"], p["params"]["gang"]) for p in s["points"]} == {
        ("fcfs", None), (None, "multilevel"), (None, "round-robin")}
    assert all(p["metrics"]["mean_turnaround"]["mean"] > 0 for p in s["points"])
    report = (tmp_path / "g" / "REPORT.md").read_text()
    assert "| load | fcfs | multilevel | round-robin |" in report
    assert main(["sweep", "--gang", "multilevel", "--scheduler", "lazy", "--time", "60",
                 "--out", str(tmp_path)]) == 2
    assert "do not apply to gang runs" in capsys.readouterr().err


SWF = "\n".join(f"{i} {10 * i} 0 {20 + i % 7} {2 ** (i % 4)} -1 -1 {2 ** (i % 4)} -1 -1 1 -1 -1 -1 -1 -1 -1 -1"
                for i in range(1, 61)) + "\n"


def test_trace_sweep_scales_the_load(tmp_path, capsys):
    trace = tmp_path / "t.swf"
    trace.write_text("; MaxNodes: 16\n" + SWF)
    assert main(["sweep", "--name", "tr", "--trace", str(trace), "--topology", "hypercube:4",
                 "--scheduler", "fcfs,lazy", "--load", "0.4,0.8", "--out", str(tmp_path), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert len(s["points"]) == 4 and all(p["replications"] == 1 for p in s["points"])
    for sched in ("fcfs", "lazy"):
        lo, hi = (next(p for p in s["points"] if p["params"]["scheduler"] == sched and p["params"]["load"] == x)
                  for x in (0.4, 0.8))
        assert hi["metrics"]["mean_queueing_delay"]["mean"] >= lo["metrics"]["mean_queueing_delay"]["mean"]
    # the scaling itself: offered load = processor-time asked / (nodes x span)
    jobs = list(swf.read_jobs(str(trace), "hypercube:4"))
    scaled = scaled_jobs(jobs, "hypercube:4", 0.5)
    span = scaled[-1].submit - scaled[0].submit
    work = sum((1 << j.request.a if j.request.kind == "cube" else j.request.a) * j.runtime for j in scaled)
    assert work / (16 * span) == pytest.approx(0.5)
    assert main(["sweep", "--trace", str(trace), "--service", "exponential", "--out", str(tmp_path)]) == 2
    assert "does not apply to a trace" in capsys.readouterr().err


@pytest.mark.live
def test_sweep_on_dask_local_matches_local(tmp_path, capsys):
    pytest.importorskip("distributed")
    args = ["sweep", "--name", "d", "--topology", "hypercube:5", "--scheduler", "lazy,scan-up", "--load", "0.5,0.8",
            "--time", "150", "--seeds", "2", "--json"]
    assert main(args + ["--out", str(tmp_path / "a"), "--jobs", "1"]) == 0
    assert main(args + ["--out", str(tmp_path / "b"), "--dask", "local:1"]) == 0
    capsys.readouterr()
    assert (tmp_path / "a" / "d" / "results.csv").read_text() == (tmp_path / "b" / "d" / "results.csv").read_text()


def test_sweep_object_api():
    s = Sweep.from_dict({"scheduler": ["lazy", "fcfs"], "load": [0.3, 0.6], "time": 100, "seeds": 2})
    assert len(s.points()) == 4 and s.x == "load" and s.reps == (2, 2)
    with pytest.raises(SweepError, match="max_reps"):
        Sweep.from_dict({"time": 10, "min_reps": 5, "max_reps": 2})


def test_dask_not_installed_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    assert main(["sweep", "--time", "10", "--dask", "local:1", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "pip install 'mcemu[dask]'" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- batches of runs in one task

BATCHED = {"name": "b", "topology": "hypercube:5", "scheduler": ["fcfs", "lazy"], "load": [0.3, 0.7], "time": 150}


class _Batching(Inline):
    """In this process, but batching as a pool of two would; remembers each task's size (the
    runs it was given) and the runs it did (a task stops starting runs at its time limit)."""

    workers = 2

    def __init__(self, batch_s=0.05):
        self.batch_s, self.tasks, self.did = batch_s, [], []

    def submit(self, fn, *args):
        self.tasks.append(len(args[1]))
        return super().submit(fn, *args)

    def outcome(self, h):
        value = super().outcome(h)
        self.did.append(len(value))
        return value


def _runs(path: Path) -> dict:
    out = {}
    for ln in path.read_text().splitlines():
        r = json.loads(ln)
        assert (r["key"], r["rep"]) not in out, "a replication logged twice"
        out[(r["key"], r["rep"])] = (r["seed"], r["metrics"])
    return out


def test_batches_give_the_numbers_of_single_runs(tmp_path):
    """The CI rule (later checkpoints claim more runs) on one process, in batches, and on a real
    pool of two processes: the same runs, seeds and numbers."""
    sweep = Sweep.from_dict({**BATCHED, "precision": 0.1, "min_reps": 3, "max_reps": 10})
    one = run_sweep(sweep, tmp_path / "one", executor=Inline(), progress=False)
    batching = _Batching()
    run_sweep(sweep, tmp_path / "batched", executor=batching, progress=False)
    pool = LocalPool(2)
    try:
        run_sweep(sweep, tmp_path / "pool", executor=pool, progress=False)
    finally:
        pool.close()
    runs = one["replications_computed"]
    assert sum(batching.did) == runs and max(batching.did) > 1 and len(batching.did) < runs
    for other in ("batched", "pool"):
        assert _runs(tmp_path / other / "b" / "runs.jsonl") == _runs(tmp_path / "one" / "b" / "runs.jsonl")
        assert (tmp_path / other / "b" / "results.csv").read_text() == (tmp_path / "one" / "b" / "results.csv").read_text()


def test_a_task_past_its_time_limit_hands_back_the_runs_it_did_not_start(tmp_path):
    """Every task stops after its first run (a limit of nanoseconds): the rest go back to the
    queue and run later, each once, with its own seed: the numbers of one process."""
    sweep = Sweep.from_dict({**BATCHED, "seeds": 5})
    one = run_sweep(sweep, tmp_path / "one", executor=Inline(), progress=False)
    batching = _Batching(batch_s=1e-9)
    run_sweep(sweep, tmp_path / "cut", executor=batching, progress=False)
    assert batching.tasks[:2] == [10, 10] and set(batching.did) == {1} and len(batching.did) == 20
    assert one["replications_computed"] == 20
    assert _runs(tmp_path / "cut" / "b" / "runs.jsonl") == _runs(tmp_path / "one" / "b" / "runs.jsonl")
    assert (tmp_path / "cut" / "b" / "results.csv").read_text() == (tmp_path / "one" / "b" / "results.csv").read_text()


def _stopping(point, after, error):
    calls = [0]

    def run(params, seed):
        calls[0] += 1
        if calls[0] > after:
            raise error
        return point(params, seed)
    return run, calls


def test_a_sweep_interrupted_mid_batch_resumes(tmp_path):
    sweep = Sweep.from_dict({**BATCHED, "seeds": 12})
    ref = run_sweep(sweep, tmp_path / "ref", executor=Inline(), progress=False)
    total = ref["replications_computed"]
    # a long target: nothing timed yet, the 48 runs are dealt to the two workers, 24 a task
    exp = experiment(sweep)
    point, calls = _stopping(exp.point, 30, KeyboardInterrupt())
    batching = _Batching(batch_s=10.0)
    with pytest.raises(KeyboardInterrupt):
        replicate(dataclasses.replace(exp, point=point), tmp_path / "out" / "b", progress=False, executor=batching)
    logged = len((tmp_path / "out" / "b" / "runs.jsonl").read_text().splitlines())
    assert batching.tasks == [24, 24] and logged == 24
    assert 0 < logged < calls[0] - 1  # runs of the batch cut short were done, and are not logged
    again = run_sweep(sweep, tmp_path / "out", executor=_Batching(), progress=False)
    assert again["replications_computed"] == total - logged
    assert _runs(tmp_path / "out" / "b" / "runs.jsonl") == _runs(tmp_path / "ref" / "b" / "runs.jsonl")
    assert (tmp_path / "out" / "b" / "results.csv").read_text() == (tmp_path / "ref" / "b" / "results.csv").read_text()


def test_a_run_that_fails_mid_batch_keeps_the_runs_before_it(tmp_path):
    exp = experiment(Sweep.from_dict({**BATCHED, "seeds": 12}))
    point, _ = _stopping(exp.point, 9, ValueError("bad point"))
    batching = _Batching(batch_s=10.0)
    with pytest.raises(ValueError, match="bad point"):
        replicate(dataclasses.replace(exp, point=point), tmp_path / "b", progress=False, executor=batching)
    assert batching.tasks == [24, 24]  # the failure came inside a batch, at its 10th run
    assert len((tmp_path / "b" / "runs.jsonl").read_text().splitlines()) == 9


def test_batch_sizes():
    q = deque((k, r) for k in "ab" for r in range(3))
    b = Batcher(0.5, workers=2)
    assert b.in_flight == 4 and b.limit == 1.0
    # nothing timed yet: the queue dealt out, a stride through it per worker, then one run a task
    assert b.take(q) == [("a", 0), ("a", 2), ("b", 1)]
    assert b.take(q) == [("a", 1), ("b", 0), ("b", 2)] and not q
    q = deque(("a", r) for r in range(1000))
    assert b.take(q) == [("a", 0)]
    assert len(Batcher(0.5, workers=1).take(deque(("a", r) for r in range(5000)))) == MAX_BATCH
    b.observe("a", 0.01)
    assert len(b.take(q)) == 50  # 0.5 s of 10 ms runs
    q = deque(("a", r) for r in range(40))
    assert len(b.take(q)) == 10  # 0.4 s queued over 2 workers x SPREAD 2: a quarter of it
    q = deque(("a", r) for r in range(12))
    assert len(b.take(q)) == 6  # under the floor (0.1 s) but not past one worker's half
    b.observe("slow", 0.1)
    q = deque([("new", 0), ("new", 1)] + [("a", r) for r in range(100)])
    assert b.take(q) == [("new", 0), ("new", 1)] + [("a", r) for r in range(30)]  # unseen: as the slowest
    b.observe("fast", 0.0)
    assert len(b.take(deque(("fast", r) for r in range(5000)))) == MAX_BATCH
    single = Batcher(0.0, workers=4)
    assert single.in_flight == math.inf and single.limit is None
    assert single.take(deque([("a", 0), ("a", 1)])) == [("a", 0)]
    single.observe("a", 0.001)
    assert single.take(deque([("a", 0), ("a", 1)])) == [("a", 0)]
