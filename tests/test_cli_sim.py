"""`mcemu simulate` and `mcemu policies` as a user runs them: real subprocesses."""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from emulator.cli import main

REPO = Path(__file__).resolve().parents[1]
NASA = REPO.parent / "shared" / "traces" / "NASA-iPSC-1993-3.1-cln.swf.gz"


def mcemu(*args, check=True):
    p = subprocess.run([sys.executable, "-m", "emulator", *args], capture_output=True, text=True,
                       cwd=REPO, timeout=300)
    if check:
        assert p.returncode == 0, p.stderr
    return p


@pytest.mark.live
def test_policies_lists_every_kind():
    data = json.loads(mcemu("policies", "--json").stdout)
    for name in ("buddy", "free-list", "mss", "first-fit", "buddy-2d", "naive"):
        assert name in data["allocators"]
    for name in ("fcfs", "lazy", "scan-up", "helm", "bwq", "mq-scan", "static"):
        assert name in data["disciplines"]
    assert "multilevel" in data["gang"]
    assert {"rsr", "limit"} <= set(data["reductions"])


@pytest.mark.live
def test_simulate_json_has_design_metric_names_and_is_seeded():
    args = ("simulate", "--topology", "hypercube:6", "--allocator", "buddy", "--scheduler", "lazy",
            "--load", "0.6", "--time", "500", "--service", "hyperexp", "--seed", "4", "--json")
    a = json.loads(mcemu(*args).stdout)
    b = json.loads(mcemu(*args).stdout)
    m = a["metrics"]
    for k in ("generated", "completed", "allocated", "mean_queueing_delay", "utilization", "throughput",
              "power", "measured_load", "mean_turnaround", "external_fragmentation", "ls_ratio", "per_size"):
        assert k in m
    assert 0 < m["utilization"] <= 1
    assert a["metrics"] == b["metrics"]


@pytest.mark.live
def test_simulate_mesh_with_reduction():
    out = json.loads(mcemu("simulate", "--topology", "mesh:16x16", "--allocator", "first-fit",
                           "--scheduler", "fcfs", "--reduction", "rsr:2", "--load", "0.5",
                           "--jobs", "600", "--warmup", "100", "--json").stdout)
    assert out["metrics"]["counted_completions"] == 500


@pytest.mark.live
def test_bad_input_is_a_clear_error():
    p = mcemu("simulate", "--allocator", "nope", "--load", "0.5", "--time", "10", check=False)
    assert p.returncode == 2 and "unknown allocator 'nope'" in p.stderr and "buddy" in p.stderr
    p = mcemu("simulate", "--load", "0.5", "--time", "-3", check=False)
    assert p.returncode == 2 and "--time" in p.stderr
    p = mcemu("simulate", "--topology", "mesh:6x4", "--allocator", "buddy-2d", "--load", "0.5",
              "--time", "10", check=False)
    assert p.returncode == 2 and "buddy-2d" in p.stderr
    p = mcemu("simulate", "--reduction", "rsr:x", "--load", "0.5", "--time", "10", check=False)
    assert p.returncode == 2


@pytest.mark.live
def test_gang_simulation_runs():
    out = json.loads(mcemu("simulate", "--topology", "hypercube:4", "--allocator", "buddy", "--gang",
                           "multilevel", "--load", "0.8", "--jobs", "100", "--json").stdout)
    assert out["metrics"]["completed"] == 100


@pytest.mark.live
@pytest.mark.skipif(not NASA.exists(), reason="NASA trace not present at ../shared/traces")
def test_nasa_log_replays_every_job_and_writes_swf(tmp_path):
    out_swf = tmp_path / "nasa.swf"
    out = json.loads(mcemu("simulate", "--trace", str(NASA), "--topology", "hypercube:7",
                           "--allocator", "buddy", "--scheduler", "fcfs", "--write-swf", str(out_swf),
                           "--json").stdout)
    assert out["metrics"]["completed"] == 18239
    lines = [l for l in out_swf.read_text().splitlines() if l and not l.startswith(";")]
    assert len(lines) == 18239
    p = mcemu("simulate", "--trace", str(NASA), "--topology", "hypercube:6", "--allocator", "buddy",
              "--scheduler", "fcfs", check=False)
    assert p.returncode == 2 and "job" in p.stderr


# ------------------------------------------- bad input: one line on stderr, status 2 (in-process)


def _main(capsys, *args):
    rc = main(["simulate", *args])
    err = capsys.readouterr().err
    return rc, err


@pytest.mark.parametrize("args, match", [
    (("--param", "foo=1"), "scheduler 'fcfs'.*no parameters"),
    (("--gang", "round-robin", "--reduction", "rsr:1"), "--reduction does not apply"),
    (("--gang", "round-robin", "--scheduler", "lazy"), "--scheduler does not apply"),
    (("--gang", "round-robin", "--warmup", "5"), "--warmup does not apply"),
    (("--param", "threshold"), "--param must be KEY=VALUE"),
    (("--gang", "round-robin", "--param", "bogus=1"), "round-robin.*no parameters"),
])
def test_refused_options_are_one_line_errors(capsys, args, match):
    rc, err = _main(capsys, "--topology", "hypercube:4", "--load", "0.5", "--jobs", "20", *args)
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert __import__("re").search(match, err), err


def test_gang_none_is_a_plain_run_and_params_use_the_stack_parser(capsys):
    rc = main(["simulate", "--topology", "hypercube:4", "--load", "0.5", "--jobs", "20", "--gang", "none",
               "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["scheduler"] == "fcfs" and "gang" not in out
    rc = main(["simulate", "--topology", "hypercube:4", "--load", "0.5", "--jobs", "20", "--scheduler", "lazy",
               "--param", "threshold=2e1", "--param", "literal=off", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["params"] == {"threshold": 20.0, "literal": False}


def test_write_swf_into_a_directory_is_refused_before_the_run(capsys, tmp_path):
    rc, err = _main(capsys, "--topology", "hypercube:4", "--load", "0.5", "--jobs", "20",
                    "--write-swf", str(tmp_path))
    assert rc == 2 and "is a directory" in err and err.count("\n") == 1
    rc, err = _main(capsys, "--topology", "hypercube:4", "--load", "0.5", "--jobs", "20",
                    "--write-swf", str(tmp_path / "no" / "x.swf"))
    assert rc == 2 and "no directory" in err
    assert list(tmp_path.iterdir()) == [] and not Path(str(tmp_path) + ".part").exists()


def test_a_truncated_gzip_trace_is_a_one_line_error(capsys, tmp_path):
    full = gzip.compress("".join(f"{i} {i} 0 10 4 -1 -1 4 -1 -1 1 -1 -1 -1 -1 -1 -1 -1\n"
                                 for i in range(1, 300)).encode())
    cut = tmp_path / "cut.swf.gz"
    cut.write_bytes(full[:100])
    rc, err = _main(capsys, "--trace", str(cut), "--topology", "hypercube:4")
    assert rc == 2 and "gzip" in err and err.count("\n") == 1
