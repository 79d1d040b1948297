"""Dissertation Figure 6.13 (Scenario A, rule R4: where to cut the outside job), on the
layouts of :mod:`.ch6_layouts`; shared settings in :mod:`.ch6_jobs`.
"""
from __future__ import annotations


from emulator.experiments import register
from emulator.experiments import verdict as V
from emulator.experiments.experiment import Check, Experiment, Panel, fmt
from emulator.experiments.network.common import PAPER
from emulator.experiments.network.ch6_jobs import LAYOUT_NOTE, OTHER, _base, _wormhole_text
from emulator.experiments.network.ch6_layouts import (
    A_PIECES, FIRST_CUT, MIDDLE_CUT, crossing_counts, interactions, interleaved_point, scenario_a,
)


# ------------------------------------------------------------------ Figure 6.13 (R4)

IN_R4 = [25, 100, 250]
IN_R4_QUICK = [100]
IN_R4_OTHER = [100]
OUT_R4 = [0, 10, 25, 50, 75, 100, 150, 250, 350, 500]
OUT_R4_QUICK = [0, 100, 500]


def _grid_r4(quick):
    outs = OUT_R4_QUICK if quick else OUT_R4
    pts = [_base(quick, cut=cut, mtbs_in=a, mtbs_out=b, pieces=A_PIECES) for cut in (FIRST_CUT, MIDDLE_CUT)
           for a in (IN_R4_QUICK if quick else IN_R4) for b in outs]
    if not quick:
        pts += [_base(quick, study="orientation", cut=cut, mtbs_in=a, mtbs_out=b, pieces=OTHER[A_PIECES])
                for cut in (FIRST_CUT, MIDDLE_CUT) for a in IN_R4_OTHER for b in outs]
    return pts


def _r4_label(p):
    return f"{'first' if p['cut'] == FIRST_CUT else 'second'} method, MTBS in {p['mtbs_in']}"


def _r4_lower(res, metric, **w):
    """{MTBS_in: [MTBS_out where the first method is lower]}"""
    outs = res.values("mtbs_out", **w)
    return {a: [b for b in outs if res.mean(metric, cut=FIRST_CUT, mtbs_in=a, mtbs_out=b, **w)
                < res.mean(metric, cut=MIDDLE_CUT, mtbs_in=a, mtbs_out=b, **w)]
            for a in res.values("mtbs_in", **w)}


def _threshold(lower, outs):
    upper = [b for b in outs if all(x in lower for x in outs if x >= b)]
    theta = min(upper) if upper else None
    return theta, theta is not None and set(lower) == {b for b in outs if b >= theta}


def _check_r4(res):
    c = Check()
    w = {"study": "main"}
    ins, outs = res.values("mtbs_in", **w), res.values("mtbs_out", **w)

    def d(metric, cut, a, b):
        return res.est(metric, cut=cut, mtbs_in=a, mtbs_out=b, **w)

    def lower(metric, a, b):  # the first method lower than the second
        return V.less(d(metric, FIRST_CUT, a, b), d(metric, MIDDLE_CUT, a, b))

    def not_lower(metric, a, b):
        return V.not_more(d(metric, MIDDLE_CUT, a, b), d(metric, FIRST_CUT, a, b))

    out = {(a, b): lower("delay@outside", a, b) for a in ins for b in outs}
    bad = [k for k, o in out.items() if o != V.HOLDS]
    lo_out = _r4_lower(res, "delay@outside", **w)
    c(V.every(out.values()), f"outside job: the first method gives a lower delay than the second at every MTBS of "
      f"the outside job in {outs} (MTBS inside {ins})"
      + (f"; not beyond the CIs at {len(bad)} of {len(out)} points "
         f"({sum(out[k] == V.INCONCLUSIVE for k in bad)} of them inconclusive), the first method lower (means) only "
         "at MTBS_out " + "; ".join(f"{lo_out[a]} (MTBS in {a})" for a in ins) + "; e.g. "
         + "; ".join(f"in {a}, out {b}: {d('delay@outside', FIRST_CUT, a, b)} vs "
                     f"{d('delay@outside', MIDDLE_CUT, a, b)}" for a, b in bad[:3]) if bad else ""))
    top = max(outs)
    c(V.every(lower("delay@inside", a, top) for a in ins),
      f"inside job, low outside rate: the first method is lower at MTBS_out = {top} for every "
      "MTBS inside (" + "; ".join(
          f"in {a}: {d('delay@inside', FIRST_CUT, a, top)} vs {d('delay@inside', MIDDLE_CUT, a, top)}"
          for a in ins) + ")")
    c(V.every(not_lower("delay@inside", a, 0) for a in ins) if 0 in outs else False,
      "inside job, high outside rate: the first method is not lower at MTBS_out = 0 (saturation) "
      "for any MTBS inside (" + "; ".join(
          f"in {a}: {d('delay@inside', FIRST_CUT, a, 0)} vs {d('delay@inside', MIDDLE_CUT, a, 0)}"
          for a in ins if 0 in outs) + ")")
    # one threshold theta per MTBS inside: the first method lower at every MTBS_out >= theta, not
    # lower below it
    one = [V.some(V.every([lower("delay@inside", a, b) for b in outs if b >= t]
                          + [not_lower("delay@inside", a, b) for b in outs if b < t]) for t in outs[1:])
           for a in ins]
    thr = {a: _threshold(lv, outs) for a, lv in _r4_lower(res, "delay@inside", **w).items()}
    c(V.every(one),
      "'only if the communication rate of the outside job is not too high': a single threshold, the "
      "first method lower for the inside job exactly at MTBS_out >= theta; theta (means) = "
      + ", ".join(f"{thr[a][0]} us (MTBS in {a})" for a in ins)
      + "; per MTBS inside: " + ", ".join(f"{a}: {o}" for a, o in zip(ins, one)))
    return c


def _table_r4(res):
    lines = ["**Layouts.** Crossing paths per row: first method "
             f"{crossing_counts(scenario_a(0, 0, FIRST_CUT))}, second {crossing_counts(scenario_a(0, 0, MIDDLE_CUT))}; "
             "inside/outside path pairs sharing a channel: first "
             f"{interactions(scenario_a(0, 0, FIRST_CUT))['pairs']}, second "
             f"{interactions(scenario_a(0, 0, MIDDLE_CUT))['pairs']}."]
    w = {"study": "orientation"}
    if res.select(**w):
        outs = res.values("mtbs_out", **w)
        lo_out, lo_in = _r4_lower(res, "delay@outside", **w), _r4_lower(res, "delay@inside", **w)
        lines += ["", f"**The other orientation** (pieces {OTHER[A_PIECES]}; path pairs sharing a channel: first "
                  f"{interactions(scenario_a(0, 0, FIRST_CUT, OTHER[A_PIECES]))['pairs']}, second "
                  f"{interactions(scenario_a(0, 0, MIDDLE_CUT, OTHER[A_PIECES]))['pairs']}): the first method is "
                  "lower for the outside job at MTBS_out " + "; ".join(f"{v} (MTBS in {a})" for a, v in lo_out.items())
                  + ", for the inside job at " + "; ".join(f"{v} (MTBS in {a})" for a, v in lo_in.items()), "",
                  "| MTBS out | inside: first / second | outside: first / second |", "|---|---|---|"]
        for a in res.values("mtbs_in", **w):
            for b in outs:
                g = {(m, cut): res.mean(m, cut=cut, mtbs_in=a, mtbs_out=b, **w)
                     for m in ("delay@inside", "delay@outside") for cut in (FIRST_CUT, MIDDLE_CUT)}
                lines.append(f"| {b} (in {a}) | {fmt(g['delay@inside', FIRST_CUT])} / "
                             f"{fmt(g['delay@inside', MIDDLE_CUT])} "
                             f"| {fmt(g['delay@outside', FIRST_CUT])} / {fmt(g['delay@outside', MIDDLE_CUT])} |")
    return "\n".join(lines)


register(Experiment(
    "net-fig6-13", PAPER, "Figure 6.13",
    "Scenario A: where to cut the outside job",
    "Cutting the outside transpose between logical columns 0|1 (first method: one row with "
    "congestion 3, three with 1) or 1|2 (second method: 2 per row). 'The communication delay of "
    "the outside job for the first partitioning method is lower than the second partitioning method "
    "for all ranges of communication rates of the outside job. However, the communication delay of "
    "the inside job for the first partitioning method is lower [...] only if the communication "
    "rate of the outside job is not too high', because the congested row saturates (§6.2.4).",
    interleaved_point, _grid_r4, ("delay@inside", "delay@outside", "job_mean"),
    [Panel("Fig 6.13: inside job", "delay@inside", x="mtbs_out", where={"study": "main"}, series=_r4_label,
           ylabel="inside job delay (us)", xlabel="MTBS of the outside job (us)"),
     Panel("outside job (discussed in the text)", "delay@outside", x="mtbs_out", where={"study": "main"},
           series=_r4_label, ylabel="outside job delay (us)", xlabel="MTBS of the outside job (us)")],
    _check_r4,
    settings=lambda quick: (
        f"Scenario A (two 4x4 transposes) with the first and the middle cut, pieces {A_PIECES}; MTBS of "
        f"the outside job {OUT_R4_QUICK if quick else OUT_R4} us, of the inside job "
        f"{IN_R4_QUICK if quick else IN_R4} us (not stated in the text; one curve per value). "
        + ("" if quick else f"Sensitivity: the pieces {OTHER[A_PIECES]} at MTBS inside {IN_R4_OTHER}. ")
        + _wormhole_text(quick)),
    notes=(LAYOUT_NOTE + " For the first method the left piece is logical column 0 (1 column) and "
           "the right piece columns 1-3, so the inside job sits at physical columns 1-4. The inside "
           "job's MTBS for Fig 6.13 is not stated: we show 25, 100 and 250. 'Not too high' has no "
           "number in the text (NETWORK.md 8.21): the check asks for a single threshold theta and "
           "reports it. The 'overall congestion factor' the rule minimises is the number of "
           "crossing paths: 6 for the first method, 8 for the second."),
    table=_table_r4, stop_on=("delay@inside", "delay@outside"), min_reps=3, max_reps=8, quick_reps=2,
    layout=(1, 2),
))

__all__ = ["IN_R4", "OUT_R4"]
