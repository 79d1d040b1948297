"""``mcemu net predict`` and ``mcemu net metrics``, and the model against the simulator
(NETWORK.md 10: equal at MTBS 0, an upper bound above it)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from emulator.cli import main


def run_json(capsys, *argv):
    assert main(["net", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_predict_stair_at_mtbs_0_equals_the_simulation(capsys):
    pred = run_json(capsys, "predict", "--mesh", "16x16", "--job", "stair:5@0,0:mtbs=0")
    assert [p["predicted_delay_us"] for p in pred["jobs"][0]["paths"]] == pytest.approx([50, 100, 200, 400, 400])
    sim = run_json(capsys, "simulate", "--mesh", "16x16", "--job", "stair:5@0,0:mtbs=0", "--messages", "300")
    assert [p["mean_delay_us"] for p in sim["paths"]] == pytest.approx([50, 100, 200, 400, 400])


@pytest.mark.parametrize("mtbs", [25, 100, 1000])
def test_homogeneous_model_bounds_the_stair_above(capsys, mtbs):
    job = f"stair:5@0,0:mtbs={mtbs}"
    pred = run_json(capsys, "predict", "--mesh", "16x16", "--job", job)["jobs"][0]["paths"]
    sim = run_json(capsys, "simulate", "--mesh", "16x16", "--job", job, "--messages", "2000", "--seed", "1")["paths"]
    for p, s in zip(pred, sim):
        # the model leaves out the hop term: compare L*T_t + contention
        assert s["mean_delay_us"] - s["hops"] * 0.05 <= p["predicted_delay_us"]


def test_predict_transpose_both_predictors(capsys):
    doc = run_json(capsys, "predict", "--mesh", "8x8", "--job", "transpose:4x4@2,2:mtbs=0",
                   "--job", "diagonal:2x2@0,0:mtbs=5")
    t, d = doc["jobs"]
    assert len(t["paths"]) == 12 and t["bound"]
    # row stairs at MTBS 0: rows of 0..3 paths each way, 25 * (2^(u+1)) with the bottom two equal
    assert t["mean_delay_us"] == pytest.approx(25 + 37.5)
    assert t["also"][0]["mean_delay_us"] == pytest.approx(25 + 38.888888, rel=1e-5)
    assert d["mean_delay_us"] == 25 and not d["bound"]


def test_predict_heterogeneous_stair_layouts(capsys):
    a = run_json(capsys, "predict", "--mesh", "16x16", "--model", "heterogeneous",
                 "--job", "stair:5@0,0:mtbs=0/50/250/250/500")["jobs"][0]["paths"]
    b = run_json(capsys, "predict", "--mesh", "16x16", "--model", "heterogeneous",
                 "--job", "stair:5@0,0:mtbs=500/250/250/50/0")["jobs"][0]["paths"]
    assert all(pb["predicted_delay_us"] < pa["predicted_delay_us"] for pa, pb in zip(a, b))


@pytest.mark.parametrize("argv,needle", [
    (["--job", "stair:3@0,0:mtbs=0/5/9"], "needs one MTBS"),
    (["--job", "ring:2x2@0,0"], "no analytic model for pattern 'ring'"),
    (["--job", "transpose:2x2@0,0", "--topology", "hypercube:3"], "--mesh WxH or --topology"),
])
def test_predict_refuses_what_it_cannot_model(capsys, argv, needle):
    assert main(["net", "predict", "--mesh", "8x8", *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


def test_predict_transpose_on_a_hypercube_is_refused(capsys):
    assert main(["net", "predict", "--topology", "hypercube:4", "--job", "transpose:4x4@****"]) == 2
    assert "needs the job on its own submesh" in capsys.readouterr().err


def test_metrics_of_the_texts_patterns(capsys):
    doc = run_json(capsys, "metrics", "--mesh", "20x20", "--job", "transpose:4x4@0,0",
                   "--job", "transpose:6x6@4,0", "--job", "transpose:12x12@0,6", "--job", "diagonal:4x4@10,0")
    by = {j["name"]: j for j in doc["jobs"]}
    assert by["j0"]["scl"] == pytest.approx(2 / 3) and by["j0"]["icl"] == pytest.approx(2 / 3)
    assert by["j1"]["scl"] == pytest.approx(4 / 3) and by["j2"]["icl"] == pytest.approx(10 / 3)
    assert by["j0"]["internal_competing_level"] == pytest.approx(4 / 3)
    assert by["j3"]["internal_competing_level"] == 0
    assert max(c["congestion"] for c in doc["channels"]) == doc["pattern"]["max_congestion"]


@pytest.mark.live
def test_the_command_runs_as_a_user_runs_it():
    out = subprocess.run([sys.executable, "-m", "emulator", "net", "simulate", "--mesh", "16x16",
                          "--job", "stair:5@0,0:mtbs=0", "--messages", "200"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "400.00" in out.stdout and "50.00" in out.stdout
