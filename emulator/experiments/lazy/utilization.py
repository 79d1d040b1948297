"""Lazy paper Figures 5-7: system utilization at three loads, against load (lazy and scan) and
against system size."""
from __future__ import annotations

from emulator.experiments import register
from emulator.experiments._points import sim_point
from emulator.experiments.experiment import Check, Experiment, Panel, fmt
from emulator.experiments.lazy.common import (
    FOUR, NAMES, NOTES, PAPER, SERVICES, SIZES, _grid, base, common_settings, label,
)


# ---------------------------------------------------------------- Figure 5

FIG5_LOADS = [0.3, 0.6, 0.9]


def _fig5_grid(quick):
    return _grid(FOUR, [("uniform", "hyperexp"), ("normal", "hyperexp")], [0.3, 0.9] if quick else FIG5_LOADS, quick)


def _fig5_check(res):
    c = Check()
    for size in SIZES:
        w = dict(size=size)
        lo, hi = min(res.values("load", **w)), max(res.values("load", **w))
        u = {s: res.mean("utilization", scheduler=s, load=hi, **w) for s in FOUR}
        c(min(u, key=u.get) == "static",
          f"{SIZES[size]}: static has the lowest utilization at load {hi} ("
          + ", ".join(f"{NAMES[s]} {fmt(v, 3)}" for s, v in u.items()) + ")")
        ul = [res.mean("utilization", scheduler=s, load=lo, **w) for s in ("fcfs", "scan-up", "lazy")]
        c(max(ul) - min(ul) <= 0.02,
          f"{SIZES[size]}: FCFS (buddy), scan and lazy almost equal at light load {lo} "
          f"(spread {fmt(max(ul) - min(ul), 2)} <= 0.02)")
        c(u["lazy"] >= max(u["fcfs"], u["scan-up"]),
          f"{SIZES[size]}: lazy's utilization the highest of FCFS/scan/lazy at load {hi}")
    return c


register(Experiment(
    "lazy-fig5", PAPER, "Figure 5", "system utilization at three input loads (hyperexponential residence)",
    "Static partitioning has a much lower utilization than the others (idle partitions while "
    "other queues wait); buddy (FCFS), scan and lazy are about equal at light load and lazy "
    "gives the best utilization as the load increases.",
    sim_point, _fig5_grid, ("utilization", "mean_queueing_delay"),
    [Panel(f"({'ab'[i]}) {SIZES[s]}, hyperexponential residence", "utilization", where={"size": s},
           series=label, ylabel="utilization U", xlabel="input load", kind="bar")
     for i, s in enumerate(SIZES)],
    _fig5_check,
    settings=common_settings(f"The three loads are not in the surviving text; we use {FIG5_LOADS} "
                             "(quick: 0.3, 0.9). 'Buddy' in the text is FCFS with the buddy allocator."),
    notes=NOTES + " Below saturation every discipline carries the offered load, so utilization "
    "only separates the disciplines once one of them saturates."))

# ---------------------------------------------------------------- Figure 6

FIG6_LOADS = [round(0.1 * i, 1) for i in range(1, 11)]


def _fig6_grid(quick):
    return _grid(("scan-up", "lazy"), [("uniform", "hyperexp"), ("uniform", "uniform")],
                 [0.5, 0.9] if quick else FIG6_LOADS, quick)


def _fig6_check(res):
    c = Check()
    w = dict(service="hyperexp")
    loads = res.values("load", **w)
    d = [(x, res.mean("utilization", scheduler="lazy", load=x, **w) - res.mean("utilization", scheduler="scan-up", load=x, **w))
         for x in loads]
    c(all(v >= -0.005 for _, v in d) and d[-1][1] > 0,
      "hyperexponential: lazy's utilization >= scan's at every load (-0.005 tolerance) and higher at "
      "the highest load (lazy - scan: " + ", ".join(f"{x}: {v:+.3f}" for x, v in d) + ")")
    w = dict(service="uniform")
    d = [(x, res.mean("utilization", scheduler="lazy", load=x, **w) - res.mean("utilization", scheduler="scan-up", load=x, **w))
         for x in res.values("load", **w)]
    c(all(abs(v) <= 0.02 for _, v in d),
      "uniform residence: lazy and scan almost identical, |difference| <= 0.02 at every load ("
      + ", ".join(f"{x}: {v:+.3f}" for x, v in d) + ")")
    return c


register(Experiment(
    "lazy-fig6", PAPER, "Figure 6", "utilization of lazy and scan vs load",
    "With hyperexponential residence times lazy's utilization is better than scan's; with "
    "uniform residence times the two are almost identical.",
    sim_point, _fig6_grid, ("utilization",),
    [Panel(f"({'ab'[i]}) {SERVICES[sv]}, uniform sizes", "utilization", where={"service": sv},
           series=label, ylabel="utilization U", xlabel="input load")
     for i, sv in enumerate(("hyperexp", "uniform"))],
    _fig6_check,
    settings=common_settings("Uniform sizes (the caption does not name the size distribution). Loads "
                             "0.1-1.0 (quick: 0.5, 0.9)."),
    notes=NOTES))

# ---------------------------------------------------------------- Figure 7

FIG7_DIMS = [5, 6, 7, 8, 9, 10]
FIG7_LOADS = {"light": 0.3, "heavy": 0.9}


def _fig7_grid(quick):
    pts = []
    for lname, load in FIG7_LOADS.items():
        for n in ([5, 7] if quick else FIG7_DIMS):
            for s in FOUR:
                pts.append(base(quick, topology=f"hypercube:{n}", dim=n, scheduler=s, size="uniform",
                                service="hyperexp", load=load, level=lname))
    return pts


def _fig7_check(res):
    c = Check()
    for lname in FIG7_LOADS:
        rows = []
        for n in res.values("dim", level=lname):
            u = {s: res.mean("utilization", scheduler=s, dim=n, level=lname) for s in FOUR}
            rows.append((n, u["lazy"], max(v for s, v in u.items() if s != "lazy")))
        c(all(l >= o - 0.005 for _, l, o in rows),
          f"{lname} load: lazy's utilization >= the best other scheme's at every system size "
          "(0.005 tolerance; " + ", ".join(f"{n}-cube: {fmt(l, 3)} vs {fmt(o, 3)}" for n, l, o in rows) + ")")
    return c


register(Experiment(
    "lazy-fig7", PAPER, "Figure 7", "utilization vs system size",
    "Lazy shows better utilization than static, FCFS and scan irrespective of the system size, "
    "at light load (a) and at heavy load (b).",
    sim_point, _fig7_grid, ("utilization",),
    [Panel(f"({'ab'[i]}) {lname} load ({load})", "utilization", x="dim", where={"level": lname},
           series=label, ylabel="utilization U", xlabel="cube dimension n")
     for i, (lname, load) in enumerate(FIG7_LOADS.items())],
    _fig7_check,
    settings=common_settings("System sizes: 5- to 10-cubes (quick: 5, 7), sizes uniform over 0..n-1 "
                             "('mean job size = (system size/2)-cube'). The caption gives neither the "
                             "residence distribution nor the loads: we use hyperexponential residence "
                             f"(as in Figures 5, 6a and 8) and loads {FIG7_LOADS}."),
    notes=NOTES))
