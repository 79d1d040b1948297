"""lazy-independent's check (the lazy paper's independent-demand runs) on hand-worked results:
which orderings of the dependent workload count, and when the independent one reproduces them."""
from __future__ import annotations

from emulator import experiments
from emulator.experiments import verdict as V
from emulator.experiments.experiment import PointResult, Results
from emulator.experiments.lazy import independent as I

EXP = experiments.get("lazy-independent")
W = dict(size="uniform", service="uniform")


def _results(values: dict, hw: float = 0.1, loads=(0.5,)) -> Results:
    """M = U = values[(demand, scheduler)] at every load, half-width ``hw``, for workload W;
    the other three workloads (Figure 3's normal sizes, Figure 4's two) 1.0 everywhere."""
    pts = []
    for p in EXP.grid(False):
        if p["load"] not in loads:
            continue
        v = values[p["demand"], p["scheduler"]] if (p["size"], p["service"]) == (W["size"], W["service"]) else 1.0
        pts.append(PointResult(p, 10, False, {"mean_queueing_delay": (v, hw), "utilization": (v, hw)}))
    return Results(EXP, pts, False)


DEP = {"static": 4.0, "fcfs": 10.0, "scan-up": 2.0, "lazy": 1.0}


def test_only_orderings_decided_under_dependent_demand_count():
    vals = {("dependent", s): v for s, v in DEP.items()}
    vals[("dependent", "lazy")] = 2.05  # ties scan inside the intervals: not an ordering
    vals.update({("independent", s): v for s, v in DEP.items()})
    rows = I.orderings(_results(vals), "mean_queueing_delay", **W)
    pairs = {(a, b) for _, a, b, _, _ in rows}
    assert pairs == {("fcfs", "static"), ("static", "scan-up"), ("static", "lazy"), ("fcfs", "scan-up"),
                     ("fcfs", "lazy")}  # the larger named first; scan/lazy left out
    assert all(d.mean > 0 for _, _, _, d, _ in rows)


def test_same_orderings_hold_a_reversed_one_fails_a_tie_is_inconclusive():
    base = {("dependent", s): v for s, v in DEP.items()}
    same = {**base, **{("independent", s): 3 * v for s, v in DEP.items()}}  # other scale, same order
    assert I.same_trend(I.orderings(_results(same), "mean_queueing_delay", **W)) == V.HOLDS
    rev = {**same, ("independent", "lazy"): 100.0}  # lazy now the worst: reverses three orderings
    assert I.same_trend(I.orderings(_results(rev), "mean_queueing_delay", **W)) == V.FAILS
    tie = {**same, ("independent", "lazy"): 6.0}  # = scan's 6: scan above lazy no longer shown,
    tie[("independent", "static")] = 6.05  # static - scan now inside the intervals
    assert I.same_trend(I.orderings(_results(tie), "mean_queueing_delay", **W)) == V.INCONCLUSIVE


def test_no_decided_ordering_is_inconclusive_and_the_check_scores_eight_sub_claims():
    vals = {(d, s): v for d in I.DEMANDS for s, v in DEP.items()}
    wide = _results(vals, hw=100.0)
    assert I.orderings(wide, "mean_queueing_delay", **W) == []
    c = EXP.check(wide)
    claims = [s for s in c.subs if s.role == "claim"]
    assert len(claims) == 8 and all(s.outcome == V.INCONCLUSIVE for s in claims)  # 4 workloads x (M, U)
    assert c.verdict == "inconclusive"
    assert sum(1 for s in c.subs if s.role == "sensitivity") == 8


def test_check_on_workload_with_reversal_fails_that_sub_claim_only():
    vals = {(d, s): v for d in I.DEMANDS for s, v in DEP.items()}
    vals[("independent", "fcfs")] = 0.5  # FCFS best under independent demand: every FCFS ordering reversed
    c = EXP.check(_results(vals, hw=0.01))
    out = {s.text.split(":")[0] + " " + s.text.split(" by ")[1][:1]: s.outcome for s in c.subs if s.role == "claim"}
    assert out["uniform sizes, uniform residence (Fig. 3) M"] == V.FAILS
    assert out["uniform sizes, uniform residence (Fig. 3) U"] == V.FAILS
    # the other three workloads are flat (1.0 for every discipline): nothing ordered, nothing judged
    assert sum(1 for o in out.values() if o == V.INCONCLUSIVE) == 6


def test_figure_4_workloads_are_judged_on_their_own_orderings():
    """A reversal in a hyperexponential workload fails that workload's sub-claims, not Figure 3's."""
    hw = dict(size="normal", service="hyperexp")
    pts = []
    for p in EXP.grid(False):
        if p["load"] != 0.5:
            continue
        v = 1.0
        if (p["size"], p["service"]) == (hw["size"], hw["service"]):
            v = DEP[p["scheduler"]] if p["demand"] == "dependent" else 20.0 - DEP[p["scheduler"]]
        pts.append(PointResult(p, 10, False, {"mean_queueing_delay": (v, 0.01), "utilization": (v, 0.01)}))
    c = EXP.check(Results(EXP, pts, False))
    bad = {s.text.split(":")[0] for s in c.subs if s.role == "claim" and s.outcome == V.FAILS}
    assert bad == {"normal sizes, hyperexponential residence (Fig. 4)"}
    assert c.verdict == "disagree"


def test_the_grid_covers_figures_3_and_4_with_both_demands_on_lazy_fig3s_seeds():
    from emulator.experiments.runner import seed_of
    from emulator.experiments.stats import rep_seed
    g = EXP.grid(False)
    assert {(p["demand"], p["size"], p["service"]) for p in g} == {
        (d, sz, sv) for d in I.DEMANDS for sz in ("uniform", "normal") for sv in ("uniform", "hyperexp")}
    assert len(g) == 2 * 4 * 4 * 9
    assert seed_of(EXP, 7) == rep_seed("lazy-fig3", 7)
    assert [p.where["service"] for p in EXP.panels] == ["uniform"] * 4 + ["hyperexp"] * 4
