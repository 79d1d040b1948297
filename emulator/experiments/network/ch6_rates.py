"""Dissertation Figures 6.8/6.9 (Scenario A, rule R2: the communication rate), on the
layouts of :mod:`.ch6_layouts`; shared settings in :mod:`.ch6_jobs`.
"""
from __future__ import annotations

import math

from emulator.experiments import register
from emulator.experiments.experiment import Check, Experiment, Panel, fmt
from emulator.experiments.network.common import PAPER
from emulator.experiments.network.ch6_jobs import LAYOUT_NOTE, OTHER, _base, _wormhole_text
from emulator.experiments.network.ch6_layouts import A_PIECES, interactions, interleaved_point, scenario_a


# ------------------------------------------------------------------ Figures 6.8 / 6.9 (R2)

GRID_A = [0, 25, 50, 100, 150, 250, 350, 500]
GRID_A_QUICK = [0, 100, 500]
GRID_A_OTHER = [0, 25, 100, 250, 500]


def _grid_a(quick):
    vals = GRID_A_QUICK if quick else GRID_A
    pts = [_base(quick, mtbs_in=a, mtbs_out=b, pieces=A_PIECES) for a in vals for b in vals]
    if not quick:
        pts += [_base(quick, study="orientation", mtbs_in=a, mtbs_out=b, pieces=OTHER[A_PIECES])
                for a in GRID_A_OTHER for b in GRID_A_OTHER]
    return pts


def _at(res, metric, a, b, **w) -> float:
    """``metric`` at (MTBS inside, MTBS outside) = (a, b)."""
    return res.mean(metric, mtbs_in=a, mtbs_out=b, **w)


def _pairs(vals):
    return [(a, b) for a in vals for b in vals if a < b]


def _miss(res, metric, a, b, **w) -> str:
    """One failed mirror comparison, with the 95% CI half-widths."""
    up, dn = res.get(mtbs_in=a, mtbs_out=b, **w), res.get(mtbs_in=b, mtbs_out=a, **w)
    diff = up.mean(metric) - dn.mean(metric)
    hw = math.hypot(up.ci(metric), dn.ci(metric))
    return (f"({a}, {b}) {fmt(up.mean(metric))} vs ({b}, {a}) {fmt(dn.mean(metric))}"
            + (" (within the 95% CIs)" if abs(diff) <= hw else ""))


def _rule_failures(res, prs, **w):
    """Pairs where putting the less frequent job inside does not help each job (by identity)."""
    bad = []
    for a, b in prs:
        x_out, y_in = _at(res, "delay@outside", b, a, **w), _at(res, "delay@inside", b, a, **w)
        x_in, y_out = _at(res, "delay@inside", a, b, **w), _at(res, "delay@outside", a, b, **w)
        if not (x_out < x_in and y_in < y_out):
            bad.append((a, b, x_out, x_in, y_in, y_out))
    return bad


def _check_a(res):
    c = Check()
    w = {"study": "main"}
    vals = res.values("mtbs_in", **w)
    prs = _pairs(vals)
    for role, fig in (("inside", "6.8"), ("outside", "6.9")):
        m = f"delay@{role}"
        bad = [(a, b) for a, b in prs if not _at(res, m, a, b, **w) > _at(res, m, b, a, **w)]
        lo = min((_at(res, m, a, b, **w) / _at(res, m, b, a, **w), a, b) for a, b in prs)
        c(not bad, f"Fig {fig} ({role} job): every upper-triangle point (inside MTBS a < outside MTBS b) "
          f"has a higher {role} delay than its mirror (b, a) in the lower triangle, for all "
          f"{len(prs)} pairs of {vals} (smallest ratio {fmt(lo[0])} at (a, b) = ({lo[1]}, {lo[2]}))"
          + (f"; fails at {len(bad)} pairs: " + "; ".join(_miss(res, m, a, b, **w) for a, b in bad[:8]) if bad else ""))
        up = [_at(res, m, a, b, **w) for a, b in prs]
        dn = [_at(res, m, b, a, **w) for a, b in prs]
        c(sum(up) / len(up) > sum(dn) / len(dn),
          f"Fig {fig}: the mean {role} delay over the upper triangle ({fmt(sum(up) / len(up))} us) "
          f"exceeds that over the lower triangle ({fmt(sum(dn) / len(dn))} us)")
    if 25 in vals and 250 in vals:
        u = (_at(res, "delay@inside", 25, 250, **w), _at(res, "delay@outside", 25, 250, **w))
        d = (_at(res, "delay@inside", 250, 25, **w), _at(res, "delay@outside", 250, 25, **w))
        c(d[0] < u[0] and d[1] < u[1],
          f"(MTBS_in, MTBS_out) = (250, 25) is better for both jobs than (25, 250) (NETWORK.md 10): "
          f"inside {fmt(d[0])} vs {fmt(u[0])}, outside {fmt(d[1])} vs {fmt(u[1])} us")
    ov = [(_at(res, "job_mean", b, a, **w), _at(res, "job_mean", a, b, **w), a, b)
          for a, b in prs]
    worst = min(ov, key=lambda t: t[1] - t[0])
    tied = []
    for a, b in prs:
        up, dn = res.get(mtbs_in=a, mtbs_out=b, **w), res.get(mtbs_in=b, mtbs_out=a, **w)
        if abs(up.mean("job_mean") - dn.mean("job_mean")) <= math.hypot(up.ci("job_mean"), dn.ci("job_mean")):
            tied.append((a, b))
    c(all(x < y for x, y, _, _ in ov),
      f"overall (the mean of the two jobs' delays): the less frequent job inside is better for all "
      f"{len(prs)} pairs (closest: MTBS {worst[2]} and {worst[3]}: {fmt(worst[0])} vs {fmt(worst[1])} us"
      + (f"; within the 95% CIs for {tied}" if tied else "") + ")"
      + ("" if all(x < y for x, y, _, _ in ov) else
         "; fails for " + str([(a, b) for x, y, a, b in ov if not x < y][:8])))
    bad = _rule_failures(res, prs, **w)
    c(not bad, f"'more desirable for both jobs', job by job: for two jobs with MTBS a < b, putting the "
      f"less frequent one (b) inside lowers the delay of each of them, for all {len(prs)} pairs"
      + (f"; fails for {len(bad)} pairs, always for the frequent job (a), which is faster inside, e.g. "
         + "; ".join(f"({a}, {b}): frequent job {fmt(xo)} outside vs {fmt(xi)} inside, rare job {fmt(yi)} "
                     f"inside vs {fmt(yo)} outside" for a, b, xo, xi, yi, yo in bad[:3]) if bad else ""))
    return c


def _matrix(res, metric, title, **w):
    xs = res.values("mtbs_in", **w)
    ys = sorted(res.values("mtbs_out", **w), reverse=True)
    lines = [f"**{title}** ({metric}, us; rows: MTBS of the outside job, top = 500 as on the "
             "figure's y axis; columns: MTBS of the inside job; the diagonal in bold: the upper "
             "triangle lies above it)", "", "| out \\ in | " + " | ".join(str(x) for x in xs) + " |",
             "|" + "---|" * (len(xs) + 1)]
    for y in ys:
        cells = []
        for x in xs:
            v = fmt(res.mean(metric, mtbs_in=x, mtbs_out=y, **w))
            cells.append(f"**{v}**" if x == y else v)
        lines.append(f"| {y} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _table_a(res):
    out = ["The contour figures as numbers. " + _matrix(res, "delay@inside", "Fig 6.8, inside job", study="main"),
           _matrix(res, "delay@outside", "Fig 6.9, outside job", study="main")]
    w = {"study": "orientation"}
    if res.select(**w):
        prs = _pairs(res.values("mtbs_in", **w))
        held = {m: sum(_at(res, m, a, b, **w) > _at(res, m, b, a, **w) for a, b in prs)
                for m in ("delay@inside", "delay@outside", "job_mean")}
        rule = len(prs) - len(_rule_failures(res, prs, **w))
        u = (_at(res, "delay@inside", 25, 250, **w), _at(res, "delay@outside", 25, 250, **w))
        d = (_at(res, "delay@inside", 250, 25, **w), _at(res, "delay@outside", 250, 25, **w))
        out.append(
            f"**The other orientation** (pieces {OTHER[A_PIECES]}: the jobs share a channel in "
            f"{interactions(scenario_a(0, 0, pieces=OTHER[A_PIECES]))['pairs']} inside/outside path pairs "
            f"instead of {interactions(scenario_a(0, 0))['pairs']}), MTBS {GRID_A_OTHER}, {len(prs)} mirror "
            f"pairs: upper triangle higher for the inside job in {held['delay@inside']}, for the outside "
            f"job in {held['delay@outside']}, for the mean of the two jobs (i.e. overall better with the "
            f"less frequent job inside) in {held['job_mean']}; each job better off with the less "
            f"frequent job inside in {rule}. (250, 25) vs (25, 250): inside {fmt(d[0])} vs "
            f"{fmt(u[0])}, outside {fmt(d[1])} vs {fmt(u[1])} us. With little interaction each job's "
            "delay follows its own rate, and the claim for the outside job fails.\n\n"
            + _matrix(res, "delay@inside", "Other orientation, inside job", **w) + "\n\n"
            + _matrix(res, "delay@outside", "Other orientation, outside job", **w))
    return "\n\n".join(out)


register(Experiment(
    "net-fig6-8", PAPER, "Figures 6.8 and 6.9",
    "Scenario A: job delays over (MTBS inside, MTBS outside)",
    "Two 4x4 transposes, the inside one contiguous, the outside one split around it (Fig 6.7). "
    "Over MTBS_inside (x) and MTBS_outside (y) in 0..500: 'For both figures, the contention delay "
    "represented in the upper triangle [inside job communicates more] is greater than [...] in the "
    "bottom triangle. This means that it is more desirable for both jobs if the job that "
    "communicates less frequently is to the inside of the job that communicates frequently' (§6.2.2).",
    interleaved_point, _grid_a, ("delay@inside", "delay@outside", "job_mean"),
    [Panel("Fig 6.8 (inside job) vs MTBS inside", "delay@inside", x="mtbs_in", where={"study": "main"},
           series=lambda p: f"MTBS out {p['mtbs_out']}", ylabel="inside job delay (us)",
           xlabel="MTBS of the inside job (us)"),
     Panel("Fig 6.9 (outside job) vs MTBS inside", "delay@outside", x="mtbs_in", where={"study": "main"},
           series=lambda p: f"MTBS out {p['mtbs_out']}", ylabel="outside job delay (us)",
           xlabel="MTBS of the inside job (us)"),
     Panel("Fig 6.8 (inside job) vs MTBS outside", "delay@inside", x="mtbs_out", where={"study": "main"},
           series=lambda p: f"MTBS in {p['mtbs_in']}", ylabel="inside job delay (us)",
           xlabel="MTBS of the outside job (us)"),
     Panel("Fig 6.9 (outside job) vs MTBS outside", "delay@outside", x="mtbs_out", where={"study": "main"},
           series=lambda p: f"MTBS in {p['mtbs_in']}", ylabel="outside job delay (us)",
           xlabel="MTBS of the outside job (us)")],
    _check_a,
    settings=lambda quick: (
        f"Scenario A on the rebuilt layout, outside job cut in the middle, pieces {A_PIECES} "
        f"(NETWORK.md 8.23). MTBS of each job {GRID_A_QUICK if quick else GRID_A} us (the full grid). "
        + ("" if quick else f"Sensitivity: the pieces {OTHER[A_PIECES]}, MTBS {GRID_A_OTHER}. ")
        + _wormhole_text(quick)),
    notes=(LAYOUT_NOTE + " Scenario A's cut is not stated; we cut in the middle as Scenario B "
           "does (NETWORK.md 8.19). The contours are shown as line panels (each job's delay "
           "against one MTBS, one curve per value of the other) and as the matrices above: the "
           "framework's figure draws lines and bars only. 'Better for both jobs' is checked in two "
           "readings: the figures' (each contour's upper-triangle value against its mirror point, "
           "the same role with the two rates exchanged) and the rule's (each job, followed by its "
           "own rate, is better off when the less frequent job is inside); the overall mean of "
           "the two jobs is also given."),
    table=_table_a, stop_on=("delay@inside", "delay@outside"), min_reps=3, max_reps=8, quick_reps=2,
    layout=(2, 2),
))
__all__ = ["GRID_A"]
