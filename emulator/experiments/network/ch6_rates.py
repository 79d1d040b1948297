"""Dissertation Figures 6.8/6.9 (Scenario A, rule R2: the communication rate), on the
layouts of :mod:`.ch6_layouts`; shared settings in :mod:`.ch6_jobs`.
"""
from __future__ import annotations


from emulator.experiments import register
from emulator.experiments import verdict as V
from emulator.experiments.experiment import Check, Experiment, Panel, fmt
from emulator.experiments.network.common import PAPER
from emulator.experiments.network.ch6_jobs import LAYOUT_NOTE, OTHER, _base, _wormhole_text
from emulator.experiments.network.ch6_layouts import A_PIECES, interactions, interleaved_point, scenario_a


# ------------------------------------------------------------------ Figures 6.8 / 6.9 (R2)

# dense at the low end, where the delays change fastest, and no gap over 100 us elsewhere: the
# contours of the figures (the text gives no grid; 200 and 400 added to the first run's values)
GRID_A = [0, 25, 50, 100, 150, 200, 250, 350, 400, 500]
GRID_A_QUICK = [0, 100, 500]
GRID_A_OTHER = [0, 25, 100, 250, 500]


def _grid_a(quick):
    vals = GRID_A_QUICK if quick else GRID_A
    pts = [_base(quick, mtbs_in=a, mtbs_out=b, pieces=A_PIECES) for a in vals for b in vals]
    if not quick:
        pts += [_base(quick, study="orientation", mtbs_in=a, mtbs_out=b, pieces=OTHER[A_PIECES])
                for a in GRID_A_OTHER for b in GRID_A_OTHER]
    return pts


def _at(res, metric, a, b, **w):
    """``metric`` at (MTBS inside, MTBS outside) = (a, b), with its CI."""
    return res.est(metric, mtbs_in=a, mtbs_out=b, **w)


def _pairs(vals):
    return [(a, b) for a in vals for b in vals if a < b]


def _rule(res, a, b, **w):
    """Putting the less frequent job (MTBS b) inside helps each job: (frequent job's outcome,
    rare job's outcome, the four delays)."""
    x_out, y_in = _at(res, "delay@outside", b, a, **w), _at(res, "delay@inside", b, a, **w)
    x_in, y_out = _at(res, "delay@inside", a, b, **w), _at(res, "delay@outside", a, b, **w)
    return V.less(x_out, x_in), V.less(y_in, y_out), (x_out, x_in, y_in, y_out)


def _check_a(res):
    c = Check()
    w = {"study": "main"}
    vals = res.values("mtbs_in", **w)
    prs = _pairs(vals)
    for role, fig in (("inside", "6.8"), ("outside", "6.9")):
        m = f"delay@{role}"
        out = {(a, b): V.greater(_at(res, m, a, b, **w), _at(res, m, b, a, **w)) for a, b in prs}
        bad = [k for k, o in out.items() if o != V.HOLDS]
        lo = min((_at(res, m, a, b, **w).mean / _at(res, m, b, a, **w).mean, a, b) for a, b in prs)
        c(V.every(out.values()), f"Fig {fig} ({role} job): every upper-triangle point (inside MTBS a < outside "
          f"MTBS b) has a higher {role} delay than its mirror (b, a) in the lower triangle, for all "
          f"{len(prs)} pairs of {vals} (smallest ratio {fmt(lo[0])} at (a, b) = ({lo[1]}, {lo[2]}))"
          + (f"; not beyond the CIs at {len(bad)} pairs: " + "; ".join(
              f"({a}, {b}) {_at(res, m, a, b, **w)} vs ({b}, {a}) {_at(res, m, b, a, **w)} ({out[a, b]})"
              for a, b in bad[:8]) if bad else ""))
        up = sum((_at(res, m, a, b, **w) for a, b in prs), V.Est(0.0)) / len(prs)
        dn = sum((_at(res, m, b, a, **w) for a, b in prs), V.Est(0.0)) / len(prs)
        c(V.greater(up, dn), f"Fig {fig}: the mean {role} delay over the upper triangle ({up} us) "
          f"exceeds that over the lower triangle ({dn} us)")
    if 25 in vals and 250 in vals:
        u = (_at(res, "delay@inside", 25, 250, **w), _at(res, "delay@outside", 25, 250, **w))
        d = (_at(res, "delay@inside", 250, 25, **w), _at(res, "delay@outside", 250, 25, **w))
        c(V.every([V.less(d[0], u[0]), V.less(d[1], u[1])]),
          f"(MTBS_in, MTBS_out) = (250, 25) is better for both jobs than (25, 250) (NETWORK.md 10): "
          f"inside {d[0]} vs {u[0]}, outside {d[1]} vs {u[1]} us")
    ov = {(a, b): (_at(res, "job_mean", b, a, **w), _at(res, "job_mean", a, b, **w)) for a, b in prs}
    out = {k: V.less(x, y) for k, (x, y) in ov.items()}
    worst = min(ov, key=lambda k: (ov[k][1] - ov[k][0]).mean)
    bad = [k for k, o in out.items() if o != V.HOLDS]
    c(V.every(out.values()),
      f"overall (the mean of the two jobs' delays): the less frequent job inside is better for all "
      f"{len(prs)} pairs (closest: MTBS {worst[0]} and {worst[1]}: {ov[worst][0]} vs {ov[worst][1]} us"
      + (f"; not beyond the CIs for {[(k, out[k]) for k in bad[:8]]}" if bad else "") + ")")
    rule = {(a, b): _rule(res, a, b, **w) for a, b in prs}
    bad = [(k, r) for k, r in rule.items() if V.every(r[:2]) != V.HOLDS]
    c(V.every(o for r in rule.values() for o in r[:2]),
      f"'more desirable for both jobs', job by job: for two jobs with MTBS a < b, putting the "
      f"less frequent one (b) inside lowers the delay of each of them, for all {len(prs)} pairs"
      + (f"; not beyond the CIs for {len(bad)} pairs, e.g. "
         + "; ".join(f"({a}, {b}): frequent job {xo} outside vs {xi} inside ({fo}), rare job {yi} "
                     f"inside vs {yo} outside ({ro})" for (a, b), (fo, ro, (xo, xi, yi, yo)) in bad[:3]) if bad else ""))
    return c


def _table_a(res):
    w = {"study": "orientation"}
    if not res.select(**w):
        return ""
    prs = _pairs(res.values("mtbs_in", **w))
    held = {m: sum(_at(res, m, a, b, **w).mean > _at(res, m, b, a, **w).mean for a, b in prs)
            for m in ("delay@inside", "delay@outside", "job_mean")}
    rule = sum(V.every(_rule(res, a, b, **w)[:2]) == V.HOLDS for a, b in prs)
    u = (_at(res, "delay@inside", 25, 250, **w), _at(res, "delay@outside", 25, 250, **w))
    d = (_at(res, "delay@inside", 250, 25, **w), _at(res, "delay@outside", 250, 25, **w))
    return (
        f"**The other orientation** (ours, a sensitivity study; the dashed blue panels; pieces "
        f"{OTHER[A_PIECES]}: the jobs share a channel in "
        f"{interactions(scenario_a(0, 0, pieces=OTHER[A_PIECES]))['pairs']} inside/outside path pairs "
        f"instead of {interactions(scenario_a(0, 0))['pairs']}), MTBS {GRID_A_OTHER}, {len(prs)} mirror "
        f"pairs: upper triangle higher for the inside job in {held['delay@inside']}, for the outside "
        f"job in {held['delay@outside']}, for the mean of the two jobs (i.e. overall better with the "
        f"less frequent job inside) in {held['job_mean']}; each job better off with the less "
        f"frequent job inside in {rule} (beyond the CIs). (250, 25) vs (25, 250): inside {d[0]} vs "
        f"{u[0]}, outside {d[1]} vs {u[1]} us. With little interaction each job's "
        "delay follows its own rate, and the claim for the outside job fails.")


def _contour(fig, role, study, ours=False):
    """A contour panel of one job's delay over (MTBS inside: x, MTBS outside: y), as the figures
    draw it; the report's table has a row per MTBS inside, a column per MTBS outside."""
    head = f"ours (not in the paper): other orientation, {role}" if ours else f"Fig {fig}: {role} job"
    return Panel(f"{head}, mean delay (us)", f"delay@{role}", x="mtbs_in", series="mtbs_out", kind="contour",
                 where={"study": study}, xlabel="MTBS of the inside job (us)",
                 ylabel="MTBS of the outside job (us)", linestyle=(lambda _: "--") if ours else None)


register(Experiment(
    "net-fig6-8", PAPER, "Figures 6.8 and 6.9",
    "Scenario A: job delays over (MTBS inside, MTBS outside)",
    "Two 4x4 transposes, the inside one contiguous, the outside one split around it (Fig 6.7). "
    "Over MTBS_inside (x) and MTBS_outside (y) in 0..500: 'For both figures, the contention delay "
    "represented in the upper triangle [inside job communicates more] is greater than [...] in the "
    "bottom triangle. This means that it is more desirable for both jobs if the job that "
    "communicates less frequently is to the inside of the job that communicates frequently' (§6.2.2).",
    interleaved_point, _grid_a, ("delay@inside", "delay@outside", "job_mean"),
    [_contour("6.8", "inside", "main"), _contour("6.9", "outside", "main"),
     _contour("6.8", "inside", "orientation", ours=True), _contour("6.9", "outside", "orientation", ours=True)],
    _check_a,
    settings=lambda quick: (
        f"Scenario A on the rebuilt layout, outside job cut in the middle, pieces {A_PIECES} "
        f"(NETWORK.md 8.23). MTBS of each job {GRID_A_QUICK if quick else GRID_A} us (the full grid). "
        + ("" if quick else f"Sensitivity: the pieces {OTHER[A_PIECES]}, MTBS {GRID_A_OTHER}. ")
        + _wormhole_text(quick)),
    notes=(LAYOUT_NOTE + " Scenario A's cut is not stated; we cut in the middle as Scenario B "
           "does (NETWORK.md 8.19). The figures are drawn as the dissertation drew them: contour maps "
           "of each job's delay over (MTBS inside, MTBS outside), gray bands between labelled levels, "
           "the diagonal dashed (the upper triangle lies above it); the dots are the points run (the "
           "text gives no grid). Our sensitivity study, the other orientation, is drawn apart in the "
           "lower panels (dashed levels on a blue scale). 'Better for both jobs' is checked in two "
           "readings: the figures' (each contour's upper-triangle value against its mirror point, "
           "the same role with the two rates exchanged) and the rule's (each job, followed by its "
           "own rate, is better off when the less frequent job is inside); the overall mean of "
           "the two jobs is also given."),
    table=_table_a, stop_on=("delay@inside", "delay@outside"), min_reps=3, max_reps=8, quick_reps=2,
    layout=(2, 2),
))
__all__ = ["GRID_A"]
