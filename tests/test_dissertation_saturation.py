"""Dissertation chapters 7-8 (issue 29): a point past saturation (at the replication cap, or
carrying under 98% of its offered load) is told apart from a stable one, and a comparison is
scored only where some point it compares is below saturation."""
from __future__ import annotations

from emulator import experiments
from emulator.experiments import verdict as V
from emulator.experiments.dissertation.common import past_saturation
from emulator.experiments.experiment import PointResult, Results


def _pt(params, tat, util=0.4, load=0.4, capped=False, reps=10):
    st = {"mean_turnaround": (tat, 0.01 * tat), "utilization": (util, 0.001), "measured_load": (load, 0.001),
          "external_fragmentation": (0.4, 0.001), "ls_ratio": (1.2, 0.01)}
    return PointResult(params, reps, capped, st)


def test_past_saturation_reads_the_cap_and_the_carried_load():
    assert not past_saturation(_pt({}, 10.0))
    assert past_saturation(_pt({}, 10.0, capped=True, reps=30))
    assert past_saturation(_pt({}, 10.0, util=0.42, load=0.5))
    assert not past_saturation(_pt({}, 10.0, capped=True, reps=2))  # the quick form's cap says nothing


def test_window_check_scores_a_stable_load_and_marks_a_saturated_one():
    exp = experiments.get("bwq-window")
    pts = []
    for w, (t4, t7) in {1: (20.0, 3000.0), 4: (15.0, 2000.0), 8: (14.0, 2100.0)}.items():
        pts.append(_pt({"ws": w, "load": 0.4}, t4))
        pts.append(_pt({"ws": w, "load": 0.7}, t7, util=0.5, load=0.7))
    c = exp.check(Results(exp, pts, quick=False))
    assert [s.outcome for s in c.subs] == [V.HOLDS, V.SATURATED]
    assert "0.7" in c.subs[1].text and "carry less than their offered load" in c.subs[1].text
