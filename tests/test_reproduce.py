"""``mcemu reproduce``: the runner's confidence-interval and replication logic, resume after an
interruption, the CLI, and every registered experiment's --quick form end to end."""
from __future__ import annotations

import csv
import json
import math
import random
import struct

import pytest

from emulator import experiments
from emulator.cli import main
from emulator.experiments.runner import (CSV_TAIL, Check, Experiment, Panel, mean_ci, precise_enough, rep_seed,
                                run_experiment, t975)

# ------------------------------------------------------------------ statistics


def test_mean_ci_hand_worked():
    m, hw, n = mean_ci([1.0, 2.0, 3.0])
    # s = 1, t_{0.975,2} = 4.303: hw = 4.303 / sqrt(3)
    assert (m, n) == (2.0, 3)
    assert hw == pytest.approx(4.303 / math.sqrt(3))
    m, hw, n = mean_ci([5.0, float("nan"), float("inf"), 7.0])
    assert (m, n) == (6.0, 2) and hw == pytest.approx(12.706 * 1.0)
    assert mean_ci([4.0])[1] == math.inf
    assert math.isnan(mean_ci([])[0])


def test_t_quantiles_decrease_to_normal():
    qs = [t975(df) for df in range(1, 200)]
    assert all(a > b for a, b in zip(qs, qs[1:]))
    assert qs[-1] == pytest.approx(1.96, abs=0.02)


def test_stopping_rule():
    assert precise_enough([10.0, 10.0, 10.0], 0.05)  # no spread
    assert not precise_enough([10.0], 0.05)  # one value: no interval yet
    assert not precise_enough([5.0, 15.0, 10.0], 0.05)
    assert precise_enough([10.0, 10.1, 9.9, 10.0], 0.05)
    assert precise_enough([float("nan")] * 3, 0.05)  # nothing to improve


def test_seeds_are_distinct_and_stable():
    seeds = [rep_seed("x", r) for r in range(100)]
    assert len(set(seeds)) == 100
    assert seeds == [rep_seed("x", r) for r in range(100)]
    assert rep_seed("y", 0) != rep_seed("x", 0)


# ------------------------------------------------------------------ a synthetic experiment

CALLS: list = []


def noisy_point(params, seed):
    """mean 10, relative spread ``noise``; deterministic in the seed."""
    CALLS.append((params["noise"], seed))
    rng = random.Random(seed)
    return {"y": 10.0 * (1 + params["noise"] * rng.uniform(-1, 1)), "z": float(params["noise"])}


def _synthetic(name="synthetic", max_reps=12):
    def grid(quick):
        return [{"noise": n} for n in ([0.0, 0.05, 2.0] if not quick else [0.0, 2.0])]

    def check(res):
        c = Check()
        c(res.mean("y", noise=0.0) == 10.0, "the noiseless point has mean 10")
        c(res.get(noise=2.0).capped, "the very noisy point hits the cap")
        return c

    return Experiment(name, "test paper", "Figure 0", "synthetic", "y is 10", noisy_point, grid, ("y", "z"),
                      [Panel("y vs noise", "y", x="noise", series=lambda p: "y")], check,
                      settings="none", min_reps=3, max_reps=max_reps, quick_reps=2)


def test_replications_follow_the_ci(tmp_path):
    CALLS.clear()
    s = run_experiment(_synthetic(), tmp_path, jobs=1, progress=False)
    pts = {p["params"]["noise"]: p for p in s["points"]}
    assert pts[0.0]["replications"] == 3 and not pts[0.0]["capped"]  # min reps, exact
    assert 3 <= pts[0.05]["replications"] < 12 and not pts[0.05]["capped"]
    assert pts[2.0]["replications"] == 12 and pts[2.0]["capped"]
    m = pts[0.05]["metrics"]["y"]
    assert m["ci95"] <= 0.05 * m["mean"]
    assert s["verdict"] == "agree"
    assert len(CALLS) == s["replications_computed"] == sum(p["replications"] for p in s["points"])
    # replication r of every point gets the same seed (common random numbers)
    by_noise = {}
    for noise, seed in CALLS:
        by_noise.setdefault(noise, []).append(seed)
    assert by_noise[0.0] == [rep_seed("synthetic", r) for r in range(3)]
    assert by_noise[2.0][:3] == by_noise[0.0]


def test_quick_caps_replications(tmp_path):
    CALLS.clear()
    s = run_experiment(_synthetic(), tmp_path, quick=True, jobs=1, progress=False)
    assert [p["replications"] for p in s["points"]] == [2, 2]
    assert s["quick"] and "Quick form" in (tmp_path / "synthetic" / "REPORT.md").read_text()


def test_resume_keeps_partial_work(tmp_path):
    """Interrupt, then resume the *same* grid: only the missing replications run."""
    CALLS.clear()
    exp = _synthetic("partial")
    with pytest.raises(KeyboardInterrupt):
        orig = exp.point

        def boom(params, seed, _n=[0]):
            _n[0] += 1
            if _n[0] > 5:
                raise KeyboardInterrupt
            return orig(params, seed)
        exp.point = boom
        run_experiment(exp, tmp_path, jobs=1, progress=False)
    exp.point = orig
    runs = tmp_path / "partial" / "runs.jsonl"
    assert len(runs.read_text().splitlines()) == 5  # every finished replication was kept
    with runs.open("a") as f:
        f.write('{"key": "cut short')  # a line torn by the interruption is ignored
    CALLS.clear()
    s = run_experiment(exp, tmp_path, jobs=1, progress=False)
    assert len(CALLS) == s["replications_computed"]
    ref = run_experiment(_synthetic("partial"), tmp_path / "ref", jobs=1, progress=False)
    assert s["replications_computed"] == ref["replications_computed"] - 5
    assert [p["metrics"] for p in s["points"]] == [p["metrics"] for p in ref["points"]]
    CALLS.clear()
    third = run_experiment(exp, tmp_path, jobs=1, progress=False)
    assert third["replications_computed"] == 0 and CALLS == []


def test_process_pool_matches_serial(tmp_path):
    a = run_experiment(_synthetic("pool"), tmp_path / "a", jobs=1, progress=False)
    b = run_experiment(_synthetic("pool"), tmp_path / "b", jobs=2, progress=False)
    assert [p["metrics"] for p in a["points"]] == [p["metrics"] for p in b["points"]]


# ------------------------------------------------------------------ the verdict


@pytest.mark.parametrize("outcomes, verdict", [
    ((), "inconclusive"),
    ((True,), "agree"),
    ((True, True, True), "agree"),
    ((False,), "disagree"),
    ((False, False, False), "disagree"),
    ((True, False), "partly agree"),
    ((False, False, True), "partly agree"),
    (("inconclusive", "inconclusive"), "inconclusive"),  # nothing decided
    ((True, "inconclusive"), "partly agree"),  # a tie is not a win
    ((False, "inconclusive"), "disagree"),  # nor a loss, but nothing held
    (("holds", "fails", "inconclusive"), "partly agree"),
])
def test_verdict_is_computed_from_the_checks(outcomes, verdict):
    c = Check()
    for i, ok in enumerate(outcomes):
        assert c(ok, f"claim {i}") is (ok is True or ok == "holds")
    c.sensitivity(False, "another reading")  # shown, never scored
    c.note("not informative", "identical by construction")
    assert c.items == [(ok is True or ok == "holds", f"claim {i}") for i, ok in enumerate(outcomes)]
    assert c.verdict == verdict
    assert sum(c.counts.values()) == len(outcomes)


def test_ties_are_inconclusive_everywhere():
    from emulator.experiments.verdict import Est, close, greater, less, not_more, within
    a, b = Est(6.685, 1.11), Est(6.652, 1.11)  # lazy-table1's FCFS vs scan at load 0.1
    assert greater(a, b) == less(b, a) == not_more(b, a) == "inconclusive"
    assert greater(Est(10, 1), Est(5, 1)) == "holds" and greater(Est(5, 1), Est(10, 1)) == "fails"
    assert within(Est(0.01, 0.001), 0.02) == "holds" and within(Est(0.05, 0.001), 0.02) == "fails"
    assert within(Est(0.01, 0.05), 0.02) == "inconclusive"
    assert close(Est(100), Est(95), 0.1) == "holds" and close(Est(200), Est(100), 0.1) == "fails"


def test_a_tolerance_needs_its_reason():
    with pytest.raises(ValueError, match="reason"):
        Check()(True, "x within 10%", tol="10%")


def doubling_point(params, seed):
    return {"y": 2.0 * params["x"]}


def _claims(name, claims):
    """An experiment whose point gives y = 2x; each claim (x, y, text) holds iff y is 2x."""
    def check(res):
        c = Check()
        for x, y, text in claims:
            c(res.mean("y", x=x) == y, text)
        return c

    return Experiment(name, "test paper", "Figure 0", "doubling", "y is twice x", doubling_point,
                      lambda quick: [{"x": 1}, {"x": 2}], ("y",), [Panel("y vs x", "y", x="x", series=lambda p: "y")],
                      check, settings="none", deterministic=True)


def check_block(report: str) -> list[str]:
    """REPORT.md from the first sub-claim after "## Check" (and its policy line) to the verdict line."""
    lines = report.splitlines()
    start = lines.index("## Check") + 4
    end = next(i for i, ln in enumerate(lines) if ln.startswith("**Verdict: "))
    return lines[start:end + 1]


@pytest.mark.parametrize("claims, verdict, lines", [
    ([(1, 2.0, "y is 2 at 1"), (2, 4.0, "y is 4 at 2")], "agree",
     ["- [x] holds: y is 2 at 1", "- [x] holds: y is 4 at 2", "",
      "**Verdict: agree** (2 hold, 0 fail, 0 inconclusive of 2 sub-claims)."]),
    ([(1, 2.0, "y is 2 at 1"), (2, 5.0, "y is 5 at 2")], "partly agree",
     ["- [x] holds: y is 2 at 1", "- [ ] does not hold: y is 5 at 2", "",
      "**Verdict: partly agree** (1 hold, 1 fail, 0 inconclusive of 2 sub-claims)."]),
    ([(1, 3.0, "y is 3 at 1"), (2, 5.0, "y is 5 at 2")], "disagree",
     ["- [ ] does not hold: y is 3 at 1", "- [ ] does not hold: y is 5 at 2", "",
      "**Verdict: disagree** (0 hold, 2 fail, 0 inconclusive of 2 sub-claims)."]),
])
def test_verdict_and_report_follow_known_checks(tmp_path, claims, verdict, lines):
    s = run_experiment(_claims("claims", claims), tmp_path, jobs=1, progress=False)
    assert s["verdict"] == verdict
    assert [{k: c[k] for k in ("holds", "claim")} for c in s["checks"]] == [
        {"holds": ln.startswith("- [x]"), "claim": t} for ln, (_, _, t) in zip(lines, claims)]
    assert json.loads((tmp_path / "claims" / "results.json").read_text())["verdict"] == verdict
    assert check_block((tmp_path / "claims" / "REPORT.md").read_text()) == lines


def assert_verdict_follows_the_checks(summary: dict, report: str) -> None:
    """The summary's verdict is Check.verdict of the summary's own checks, and REPORT.md lists
    exactly those checks and that verdict with its count."""
    checks = summary["checks"]
    assert checks, "an experiment must check at least one sub-claim"
    again = Check()
    for c in checks:
        {"claim": again, "sensitivity": again.sensitivity}.get(c["role"], lambda o, t: again.note(o, t))(
            c["outcome"], c["claim"])
    assert summary["verdict"] == again.verdict
    assert summary["counts"] == again.counts
    block = check_block(report)
    assert len(block) == len(checks) + 2 and block[-1].startswith(f"**Verdict: {summary['verdict']}** (")
    for line, c in zip(block, checks):
        assert c["claim"] in line and (line.startswith("- [x] holds: ") == (c["outcome"] == "holds"
                                                                           and c["role"] == "claim"))


# ------------------------------------------------------------------ CLI


def test_cli_list_names_every_experiment(capsys):
    assert main(["reproduce", "--list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [e["name"] for e in listed] and {e["name"] for e in listed} == set(experiments.names())
    assert all(e["paper"] and e["figure"] for e in listed)
    for want in ("lazy-fig3", "lazy-table1", "rsr-fig5", "helm-compare", "bwq-shapes", "nasa-replay"):
        assert want in experiments.names()


def test_cli_unknown_name_lists_names(capsys):
    assert main(["reproduce", "no-such-figure"]) == 2
    err = capsys.readouterr().err
    assert "no-such-figure" in err and "lazy-fig3" in err and "helm-compare" in err


def test_cli_json_run(tmp_path, capsys):
    assert main(["reproduce", "lazy-fig6", "--quick", "--jobs", "1", "--out", str(tmp_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["experiment"] == "lazy-fig6"
    assert_verdict_follows_the_checks(doc, (tmp_path / "lazy-fig6" / "REPORT.md").read_text())


# ------------------------------------------------------------------ every experiment, quick


def _png_size(path):
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", head[16:24])


@pytest.mark.parametrize("name", experiments.names())
def test_quick_form_outputs(name, tmp_path):
    exp = experiments.get(name)
    if name == "nasa-replay":
        from emulator.experiments._points import trace_path
        from emulator.experiments.nasa import TRACE

        if not trace_path(TRACE).exists():
            pytest.skip(f"the NASA log is not at {trace_path(TRACE)}")
    s = run_experiment(exp, tmp_path, quick=True, jobs=1, progress=False)
    out = tmp_path / name
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert rows, "empty results.csv"
    cols = list(rows[0])
    assert cols[-len(CSV_TAIL):] == CSV_TAIL
    npoints = len(exp.grid(True))
    # every metric a point has (a check may read any), the plotted ones at least
    assert len(rows) >= npoints * len(exp.metrics)
    assert {r["metric"] for r in rows} >= set(exp.metrics)
    for r in rows:
        float(r["mean"]), float(r["ci95"])
        assert int(r["replications"]) >= 1 and r["capped"] in ("0", "1")
    w, h = _png_size(out / "figure.png")
    assert w > 300 and h > 200
    import matplotlib.image

    assert matplotlib.image.imread(str(out / "figure.png")).shape[:2] == (h, w)
    report = (out / "REPORT.md").read_text()
    assert "## The paper's claim" in report and "## Settings used" in report
    verdicts = [ln for ln in report.splitlines() if ln.startswith("**Verdict: ")]
    assert len(verdicts) == 1
    assert_verdict_follows_the_checks(s, report)
    assert (out / "runs.jsonl").exists()
    from emulator.experiments.rerender import load_results  # the verdict from results.csv alone

    again = exp.check(load_results(exp, out, quick=True))
    assert (again.verdict, again.counts) == (s["verdict"], s["counts"])
