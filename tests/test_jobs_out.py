"""``mcemu simulate --jobs-out jobs.csv``: Batsim's jobs.csv columns, one row per completed job, a
consistent schedule (no node given to two jobs at once), interval-set node lists."""
from __future__ import annotations

import csv
import json

import pytest

from emulator.cli import main
from emulator.sim.batsim import COLUMNS, interval_set

BATSIM = ["job_id", "workload_name", "submission_time", "requested_number_of_resources", "requested_time",
          "success", "final_state", "starting_time", "execution_time", "finish_time", "waiting_time",
          "turnaround_time", "stretch", "allocated_resources", "consumed_energy", "metadata"]


def nodes_of(text: str) -> list[int]:
    out = []
    for part in text.split():
        a, _, b = part.partition("-")
        out.extend(range(int(a), int(b or a) + 1))
    return out


@pytest.mark.parametrize("nodes, text", [
    ([0, 1, 2, 3, 8], "0-3 8"), ([5], "5"), ([7, 6, 5, 4], "4-7"), ([1, 3, 5], "1 3 5"), ([0, 1, 3, 4, 9, 10], "0-1 3-4 9-10"),
])
def test_interval_set(nodes, text):
    assert interval_set(nodes) == text
    assert nodes_of(text) == sorted(nodes)


def _rows(path):
    with open(path, newline="") as f:
        r = csv.DictReader(f)
        return r.fieldnames, list(r)


def test_jobs_out_is_a_batsim_jobs_csv(tmp_path, capsys):
    out = tmp_path / "jobs.csv"
    assert main(["simulate", "--topology", "hypercube:5", "--scheduler", "lazy", "--reduction", "rsr:2",
                 "--load", "0.8", "--jobs", "300", "--seed", "3", "--jobs-out", str(out), "--json"]) == 0
    m = json.loads(capsys.readouterr().out)
    cols, rows = _rows(out)
    assert [c for c in cols if c != "profile"] == BATSIM and tuple(cols) == COLUMNS
    assert len(rows) == m["metrics"]["completed"] == 300
    busy = []
    for r in rows:
        sub, start, end = float(r["submission_time"]), float(r["starting_time"]), float(r["finish_time"])
        assert r["success"] == "1" and r["final_state"] == "COMPLETED_SUCCESSFULLY"
        assert float(r["waiting_time"]) == pytest.approx(start - sub)
        assert float(r["execution_time"]) == pytest.approx(end - start)
        assert float(r["turnaround_time"]) == pytest.approx(end - sub)
        assert float(r["stretch"]) == pytest.approx((end - sub) / (end - start))
        nodes = nodes_of(r["allocated_resources"])
        assert nodes and all(0 <= n < 32 for n in nodes)
        asked = int(r["requested_number_of_resources"])
        assert len(nodes) <= asked and asked & (asked - 1) == 0  # folded jobs run on fewer
        busy.append((start, end, set(nodes)))
    # a Gantt chart without overlap: no node runs two jobs at once
    busy.sort(key=lambda t: t[0])
    for i, (s1, e1, n1) in enumerate(busy):
        for s2, e2, n2 in busy[i + 1:]:
            if s2 >= e1:
                break
            assert not (n1 & n2)
    assert any(len(nodes_of(r["allocated_resources"])) < int(r["requested_number_of_resources"]) for r in rows)
    waits = [float(r["waiting_time"]) for r in rows]
    assert max(waits) > 0


SWF = "\n".join(f"{i} {100 * i} 0 {50 + i} 4 -1 -1 4 -1 -1 1 -1 -1 -1 -1 -1 -1 -1" for i in range(1, 21)) + "\n"


def test_trace_times_in_seconds(tmp_path, capsys):
    trace = tmp_path / "t.swf"
    trace.write_text(SWF)
    out = tmp_path / "jobs.csv"
    assert main(["simulate", "--trace", str(trace), "--topology", "hypercube:3", "--time-unit", "10",
                 "--jobs-out", str(out), "--json"]) == 0
    capsys.readouterr()
    _, rows = _rows(out)
    assert len(rows) == 20 and {r["workload_name"] for r in rows} == {"t.swf"}
    first = next(r for r in rows if r["job_id"] == "1")
    assert float(first["submission_time"]) == pytest.approx(100.0)
    assert float(first["execution_time"]) == pytest.approx(51.0)


@pytest.mark.parametrize("extra, words", [
    (["--gang", "multilevel"], "--jobs-out does not apply to a gang run"),
    (["--jobs-out", "{tmp}"], "is a directory"),
    (["--jobs-out", "{tmp}/no/such/jobs.csv"], "no directory"),
])
def test_jobs_out_errors(tmp_path, capsys, extra, words):
    extra = [a.format(tmp=tmp_path) for a in extra]
    if "--jobs-out" not in extra:
        extra += ["--jobs-out", str(tmp_path / "j.csv")]
    assert main(["simulate", "--topology", "hypercube:4", "--load", "0.5", "--jobs", "20", *extra]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "j.csv").exists()
