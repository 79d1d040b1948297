"""Lazy paper Table I: system power X/M of FCFS, scan and lazy for cases A and B, beside the
paper's printed numbers.

Power is aggregated over replications as a ratio of means, mean(X) / mean(M), with a
delta-method 95% interval (emulator.experiments.stats.ratio_ci): the mean of per-replication
X/M let one replication with M near 0 decide a cell (45,647 +- 92,831 at load 0.1, case B,
for all three disciplines). The replications stop on X and M, each within 5%."""
from __future__ import annotations

import math

from emulator.experiments import register
from emulator.experiments import verdict as V
from emulator.experiments._points import sim_point
from emulator.experiments.experiment import Check, Experiment, Panel, fmt
from emulator.experiments.lazy.common import (
    CASES, EVENT, EVENT_LABEL, LOADS, NAMES, NOTES, PAPER, SERVICES, SIZES, base, common_settings, label,
)
from emulator.experiments.stats import derive_ratio


def power_point(params: dict, seed: int) -> dict:
    """:func:`sim_point` plus what the ratio-of-means power needs: ``x_plus_m`` (X + M of the
    replication, whose variance gives the covariance of X and M) and ``power_per_rep`` (X/M of
    the replication, the old estimator, kept for comparison)."""
    out = sim_point(params, seed)
    out["power_per_rep"] = out["power"]
    out["x_plus_m"] = out["throughput"] + out["mean_queueing_delay"]
    return out


def _derive(res) -> None:
    # power = mean(X) / mean(M) with its delta-method interval, in place of the runner's mean
    # of per-replication X/M (idempotent: it reads only X, M and X + M)
    derive_ratio(res.points, "power", "throughput", "mean_queueing_delay", "x_plus_m")


# ---------------------------------------------------------------- Table I

TABLE1 = {  # load: (A: FCFS, Scan, Lazy), (B: FCFS, Scan, Lazy)
    0.1: ((20.00, 0.04, 0.50), (1.333, 0.400, 0.250)),
    0.2: ((4.000, 0.16, 0.57), (0.200, 0.235, 0.381)),
    0.3: ((1.500, 0.31, 0.54), (0.031, 0.075, 0.444)),
    0.4: ((0.800, 0.38, 0.50), (0.003, 0.027, 0.444)),
    0.5: ((0.470, 0.34, 0.45), (0.003, 0.017, 0.365)),
    0.6: ((0.162, 0.26, 0.37), (0.003, 0.013, 0.277)),
    0.7: ((0.013, 0.17, 0.27), (0.004, 0.010, 0.175)),
    0.8: ((0.003, 0.09, 0.17), (0.004, 0.007, 0.087)),
    0.9: ((0.002, 0.04, 0.08), (0.005, 0.005, 0.031)),
}
THREE = ("fcfs", "scan-up", "lazy")
T1_CAP = 60  # 30 left 49 of 72 points short, 60 leaves 38 (issue 29: see the report's note (4))


def _t1_grid(quick):
    pts = []
    for case, (size, service) in CASES.items():
        for s in THREE + ("lazy-event",):
            for load in ([0.1, 0.5, 0.9] if quick else LOADS):
                kw = {"scheduler": "lazy", "dparams": EVENT} if s == "lazy-event" else {"scheduler": s}
                pts.append(base(quick, case=case, size=size, service=service, load=load, **kw))
    return pts


def _t1_table(res):
    _derive(res)
    lines = ["**Table I beside ours** — system power X/M (paper | ours)", "",
             "| load | A FCFS | A Scan | A Lazy | B FCFS | B Scan | B Lazy |", "|---|---|---|---|---|---|---|"]
    for load in res.values("load"):
        cells = []
        for ci, case in enumerate(CASES):
            for si, s in enumerate(THREE):
                ours = res.mean("power", case=case, scheduler=s, load=load, dparams=None)
                paper = TABLE1.get(load, ((math.nan,) * 3,) * 2)[ci][si]
                cells.append(f"{fmt(paper, 3)} \\| {fmt(ours, 3)}")
        lines.append(f"| {load} | " + " | ".join(cells) + " |")
    lines += ["", "**Lazy's two readings and the two estimators** — power X/M of lazy: ratio of means "
              "(the table's) for the default release check and the event check; in brackets the "
              "mean of per-replication X/M (the estimator used before)", "",
              "| load | A release | A event | B release | B event |", "|---|---|---|---|---|"]
    for load in res.values("load"):
        cells = []
        for case in CASES:
            for dp in (None, EVENT):
                p = res.get(case=case, scheduler="lazy", load=load, dparams=dp)
                cells.append(f"{fmt(p.mean('power'), 3)} ({fmt(p.mean('power_per_rep'), 3)})")
        lines.append(f"| {load} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _log(e):
    """ln of an estimate (first order: half-width hw / mean)."""
    if not (e.mean > 0 and math.isfinite(e.mean)):
        return V.Est(math.nan, math.inf)
    return V.Est(math.log(e.mean), e.hw / e.mean)


def _spread(pw, s, loads):
    """Mean over the loads of |ln(power_A / power_B)| (half-widths in quadrature)."""
    ds = [_log(pw("A", s, x)) - _log(pw("B", s, x)) for x in loads]
    ds = [V.Est(abs(d.mean), d.hw) for d in ds if math.isfinite(d.mean)]
    if not ds:
        return V.Est(math.nan, math.inf)
    return V.Est(sum(d.mean for d in ds) / len(ds), math.sqrt(sum(d.hw ** 2 for d in ds)) / len(ds))


def _t1_check(res):
    _derive(res)
    c = Check()
    loads = res.values("load")
    pw = lambda case, s, x: res.est("power", case=case, scheduler=s, load=x, dparams=None)  # noqa: E731
    c(V.every(V.greater(pw("A", "lazy", x), pw("A", "scan-up", x)) for x in loads),
      "case A: lazy's power above scan's at every load (" +
      ", ".join(f"{x}: {pw('A', 'lazy', x)} vs {pw('A', 'scan-up', x)}" for x in loads) + ")")
    hi = [x for x in loads if x >= 0.7] or loads[-1:]  # "under high load": the top third of the table
    c(V.every(V.greater(pw("A", "lazy", x), pw("A", "fcfs", x)) for x in hi),
      "case A: lazy's power above FCFS's under high load (" +
      ", ".join(f"{x}: {pw('A', 'lazy', x)} vs {pw('A', 'fcfs', x)}" for x in hi) + ")")
    lo = loads[0]
    c(V.every(V.greater(pw("A", "fcfs", lo), pw("A", s, lo)) for s in ("scan-up", "lazy")),
      f"case A: FCFS has the highest power at light load {lo} (FCFS {pw('A', 'fcfs', lo)}, scan "
      f"{pw('A', 'scan-up', lo)}, lazy {pw('A', 'lazy', lo)})")
    c(V.every(V.greater(pw("B", s, lo), pw("B", "lazy", lo)) for s in ("fcfs", "scan-up")),
      f"case B: FCFS and scan above lazy at very light load {lo} "
      f"(FCFS {pw('B', 'fcfs', lo)}, scan {pw('B', 'scan-up', lo)}, lazy {pw('B', 'lazy', lo)})")
    mid = [x for x in loads if x >= 0.3]  # "from moderate load on": the table's 0.3 and up
    c(V.every(V.greater(pw("B", "lazy", x), pw("B", s, x)) for x in mid for s in ("fcfs", "scan-up")),
      "case B: lazy's power the highest from load 0.3 up (" +
      "; ".join(f"{x}: lazy {pw('B', 'lazy', x)}, FCFS {pw('B', 'fcfs', x)}, scan {pw('B', 'scan-up', x)}"
                for x in mid) + ")")
    sp = {s: _spread(pw, s, loads) for s in THREE}
    c(V.every(V.less(sp["lazy"], sp[s]) for s in ("fcfs", "scan-up")),
      "lazy's power varies least from case A to case B (mean over the loads of |ln(power_A/power_B)|: "
      + ", ".join(f"{NAMES[s]} {v}" for s, v in sp.items()) + ")")
    return c


register(Experiment(
    "lazy-table1", PAPER, "Table I", "system power of a 10-cube",
    "FCFS has the highest power under uniform sizes and residence (case A) at light load; lazy's "
    "power is better than scan's and, under high load, better than FCFS's. With normal sizes and "
    "hyperexponential residence (case B) FCFS and scan are better at very light load, lazy from "
    "moderate load on; lazy's power varies least from one workload to the other.",
    power_point, _t1_grid, ("power", "mean_queueing_delay", "throughput", "power_per_rep"),
    # the paper's three series alone in (a), (b); lazy's other reading (ours) apart in (c), (d)
    [Panel(f"({'ab'[i]}) case {case}: {SIZES[sz]}, {SERVICES[sv]}", "power", where={"case": case, "dparams": None},
           series=label, ylabel="system power X/M", xlabel="input load", logy=True)
     for i, (case, (sz, sv)) in enumerate(CASES.items())]
    + [Panel(f"({'cd'[i]}) ours, not in the paper: lazy's two readings, case {case}", "power",
             where={"case": case, "scheduler": "lazy"}, series=label, ylabel="system power X/M", xlabel="input load",
             logy=True, linestyle=lambda lab: ":" if lab == EVENT_LABEL else "-") for i, case in enumerate(CASES)],
    _t1_check, stop_on=("mean_queueing_delay", "throughput"), max_reps=T1_CAP, layout=(2, 2),
    settings=common_settings("Case A: uniform sizes, uniform residence; case B: normal sizes, "
                             "hyperexponential residence. Loads 0.1-0.9 (quick: 0.1, 0.5, 0.9). "
                             "Power = X/M with X = C/T jobs per time unit, aggregated as the ratio of "
                             "the replications' mean X to their mean M, its 95% interval by the delta "
                             "method (`emulator/experiments/stats.py: ratio_ci`); `power_per_rep` in "
                             f"results.csv is the mean of per-replication X/M. '{EVENT_LABEL}' is lazy "
                             "with `threshold_check=event`, not used by the checks."),
    notes=NOTES + " Power at light load divides by a delay close to zero, so it is very sensitive "
    "there (the paper's FCFS 20.00 at load 0.1 is such a number). (3) Power is now the ratio of the "
    "mean throughput to the mean delay over the replications, with a delta-method interval; before, "
    "it was the mean of per-replication X/M, which one replication with M near 0 could dominate "
    "(case B, load 0.1: 45,647 +- 92,831 for all three disciplines). The replications now stop on M "
    "and X (each within 5%) instead of on that mean. So FCFS's and scan's cells moved too, through the "
    "estimator and the number of replications, not through their runs. (4) The replication cap (issue 29): "
    "raised from 30 to 60, which brought 11 of the 49 points at the cap to the rule (1,321 more runs, "
    "281 s on the shared 2-core machine at nice 15). 38 of 72 stay at the cap. 12 are past saturation "
    "(more than 50 jobs waiting at T, or M above 50; loads 0.4-0.9, mostly case B), where M grows with "
    "T: 61 to 556 runs would meet the rule. The other 26 are below saturation, most at light load, "
    "where M is close to 0 and a few long waits decide a replication: 62 to 12,102 runs. All 38 would "
    "take about 9,400 CPU-seconds (2.6 CPU-hours): a Dask cluster's work, not this machine's; the "
    "ties the intervals leave are reported inconclusive.", table=_t1_table))
