"""Lazy paper Figures 3 and 4: mean queueing delay against load, uniform and hyperexponential
residence times."""
from __future__ import annotations

from emulator.experiments import register
from emulator.experiments import verdict as V
from emulator.experiments._points import sim_point
from emulator.experiments.experiment import Check, Experiment, Panel
from emulator.experiments.lazy.common import (
    EVENT, EVENT_LABEL, FOUR, LOADS, NAMES, NOTES, PAPER, QUICK_LOADS, SERVICES, SIZES, _grid,
    common_settings, label,
)


RANGES = (" (3) The checks now cover the whole range the text states each claim for (it gives "
          "none, so every load): lazy's M below scan's at every load (before: loads >= 0.5 only); "
          "static 'performs very well' with uniform sizes at every load (before: load 0.9 only) and "
          "lazy 'performs close to the static scheme', M within a factor 2 of static's at every load "
          "(before: not checked). These sub-claims can flip a verdict without any number changing.")


FIG4_CAP = (
    " (4) The replication cap (issue 29): raised from 60 to 100, which brought 9 of the 53 points "
    "at the cap to the rule (1,963 more runs, about 13 minutes on the shared 2-core machine at nice 15). "
    "44 of 72 stay at the cap. 18 are past saturation (more than 50 jobs still waiting at T, or M "
    "above 50; loads 0.2-0.9): M grows with T there and 5% of it needs 115 to 1,601 runs. The other "
    "26 are below saturation (loads 0.1-0.7), most at light load, where M is close to 0 and a "
    "replication is decided by a few long waits behind a long job (Cx 4): 5% of M needs 129 to "
    "13,561 runs (stats.reps_needed on the 100 runs). Meeting the rule at all 44 takes about "
    "15,000 CPU-seconds at the runs' own times (4.3 CPU-hours): a Dask cluster's work, not this "
    "machine's. The intervals are those of the runs made, so the ties they leave are reported "
    "inconclusive, not decided.")


def _delay_exp(name, figure, service, claim, event=False, max_reps=30, cap_note=""):
    """``event``: also run lazy's event-check reading (``threshold_check=event``), as its own
    series; the checks use the default reading."""
    panels_def = [("uniform", service), ("normal", service)]

    def grid(quick):
        loads = QUICK_LOADS if quick else LOADS
        pts = _grid(FOUR, panels_def, loads, quick)
        if event:
            pts += _grid(("lazy",), panels_def, loads, quick, dparams=EVENT)
        return pts

    def check(res):
        c = Check()
        ratio = {}
        # dparams=None: the default readings (the event-check lazy has dparams)
        M = lambda s, x, **w: res.est("mean_queueing_delay", scheduler=s, load=x, dparams=None, **w)  # noqa: E731
        for size, _ in panels_def:
            w = dict(size=size)
            loads = res.values("load", **w)
            hi = max(loads)
            pairs = [(x, M("lazy", x, **w), M("scan-up", x, **w)) for x in loads]
            # the text states it for the whole figure, without a load range
            c(V.every(V.less(a, b) for _, a, b in pairs),
              f"{SIZES[size]}: lazy's M below scan's at every load ("
              + "; ".join(f"{x}: {a} vs {b}" for x, a, b in pairs) + ")")
            ms = {s: M(s, hi, **w) for s in FOUR}
            c(V.every(V.greater(ms["fcfs"], v) for s, v in ms.items() if s != "fcfs"),
              f"{SIZES[size]}: FCFS saturates first, the largest M at load {hi} ("
              + ", ".join(f"{NAMES[s]} {v}" for s, v in ms.items()) + ")")
            ratio[size] = ms["static"] / ms["lazy"]
            if size == "uniform":
                # "Static partitioning performs very well in case of uniform job size
                # distribution" and "lazy performs close to the static scheme": over the figure
                st = [(x, M("static", x, **w), M("scan-up", x, **w), M("fcfs", x, **w)) for x in loads]
                c(V.every(V.not_more(a, o) for _, a, b, f in st for o in (b, f)),
                  "uniform sizes: static does very well, M at most scan's and FCFS's at every load ("
                  + "; ".join(f"{x}: {a} vs {b}, {f}" for x, a, b, f in st) + ")")
                cl = [(x, M("lazy", x, **w), M("static", x, **w)) for x in loads]
                c(V.every(V.not_more(a, 2 * b) for _, a, b in cl),
                  "uniform sizes: lazy close to static, M at most twice static's at every load ("
                  + "; ".join(f"{x}: {a} vs {b}" for x, a, b in cl) + ")",
                  tol="a factor 2", why="the text gives no number for 'close'; on the figure's log axis a "
                  "factor 2 is the width of the band the curves are drawn in")
        c(V.greater(ratio["normal"], ratio["uniform"]),
          f"static deteriorates with normal sizes: static/lazy M at the highest load "
          f"{ratio['normal']} (normal) > {ratio['uniform']} (uniform)")
        return c

    # the paper's series alone in (a), (b), as the paper drew them; lazy's other reading (ours)
    # apart, in panels of its own beside the default reading
    panels = [Panel(f"({'ab'[i]}) {SIZES[s]}, {SERVICES[service]}", "mean_queueing_delay",
                    where={"size": s, "dparams": None}, series=label, ylabel="mean queueing delay M",
                    xlabel="input load", logy=True) for i, (s, _) in enumerate(panels_def)]
    if event:
        panels += [Panel(f"({'cd'[i]}) ours, not in the paper: lazy's two readings, {SIZES[s]}", "mean_queueing_delay",
                         where={"size": s, "scheduler": "lazy"}, series=label, ylabel="mean queueing delay M",
                         xlabel="input load", logy=True, linestyle=lambda lab: ":" if lab == EVENT_LABEL else "-")
                   for i, (s, _) in enumerate(panels_def)]
    extra = (f" '{EVENT_LABEL}' is lazy with `threshold_check=event` (not used by the checks), drawn apart in "
             "panels (c) and (d) beside the default reading." if event else "")
    return register(Experiment(
        name, PAPER, figure, f"mean queueing delay vs load, {SERVICES[service]}", claim, sim_point, grid,
        ("mean_queueing_delay", "utilization"), panels, check, max_reps=max_reps, layout=(2, 2) if event else None,
        settings=common_settings("Panels: (a) uniform sizes, (b) normal sizes. Loads 0.1-0.9 (quick: "
                                 f"{QUICK_LOADS}).{extra}"), notes=NOTES + RANGES + cap_note))


_delay_exp("lazy-fig3", "Figure 3", "uniform",
           "With uniformly distributed residence times, FCFS saturates early; scan and lazy beat "
           "FCFS and lazy's mean queueing delay is below scan's. Static partitioning does very well "
           "with uniform sizes (lazy comes close to it) but deteriorates with normal sizes.", event=True)
_delay_exp("lazy-fig4", "Figure 4", "hyperexp",
           "With hyperexponential residence times the gap between lazy and scan widens: scan "
           "deteriorates with the variability of residence times while lazy performs well, for "
           "uniform and normal sizes alike.",
           # heavy-tailed residence (Cx 4): the cap of 30 left 63 of 72 points short (issue 17), 60
           # left 53 and 100 leaves 44, most at light load, where M is near 0 with rare long waits
           # (issue 29: see FIG4_CAP)
           max_reps=100, cap_note=FIG4_CAP)
