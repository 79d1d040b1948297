"""Lazy paper Figures 3 and 4: mean queueing delay against load, uniform and hyperexponential
residence times."""
from __future__ import annotations

from emulator.experiments import register
from emulator.experiments._points import sim_point
from emulator.experiments.experiment import Check, Experiment, Panel, fmt
from emulator.experiments.lazy.common import (
    FOUR, LOADS, NAMES, NOTES, PAPER, QUICK_LOADS, SERVICES, SIZES, _grid, _loads_from, common_settings,
    label,
)


def _delay_exp(name, figure, service, claim):
    panels_def = [("uniform", service), ("normal", service)]

    def grid(quick):
        return _grid(FOUR, panels_def, QUICK_LOADS if quick else LOADS, quick)

    def check(res):
        c = Check()
        ratio = {}
        for size, _ in panels_def:
            w = dict(size=size)
            hi = max(res.values("load", **w))
            mids = _loads_from(res, 0.5, **w)
            pairs = [(x, res.mean("mean_queueing_delay", scheduler="lazy", load=x, **w),
                      res.mean("mean_queueing_delay", scheduler="scan-up", load=x, **w)) for x in mids]
            c(all(a < b for _, a, b in pairs),
              f"{SIZES[size]}: lazy's M below scan's at every load >= 0.5 ("
              + "; ".join(f"{x}: {fmt(a)} vs {fmt(b)}" for x, a, b in pairs) + ")")
            ms = {s: res.mean("mean_queueing_delay", scheduler=s, load=hi, **w) for s in FOUR}
            c(max(ms, key=ms.get) == "fcfs",
              f"{SIZES[size]}: FCFS saturates first, the largest M at load {hi} ("
              + ", ".join(f"{NAMES[s]} {fmt(v)}" for s, v in ms.items()) + ")")
            ratio[size] = ms["static"] / ms["lazy"]
            if size == "uniform":
                c(ms["static"] < ms["scan-up"] and ms["static"] < ms["fcfs"],
                  f"uniform sizes: static does very well, M below scan's and FCFS's at load {hi} "
                  f"(static {fmt(ms['static'])}, scan {fmt(ms['scan-up'])}, FCFS {fmt(ms['fcfs'])})")
        c(ratio["normal"] > ratio["uniform"],
          f"static deteriorates with normal sizes: static/lazy M at the highest load "
          f"{fmt(ratio['normal'])} (normal) > {fmt(ratio['uniform'])} (uniform)")
        return c

    panels = [Panel(f"({'ab'[i]}) {SIZES[s]}, {SERVICES[service]}", "mean_queueing_delay", where={"size": s},
                    series=label, ylabel="mean queueing delay M", xlabel="input load", logy=True)
              for i, (s, _) in enumerate(panels_def)]
    return register(Experiment(
        name, PAPER, figure, f"mean queueing delay vs load, {SERVICES[service]}", claim, sim_point, grid,
        ("mean_queueing_delay", "utilization"), panels, check,
        settings=common_settings("Panels: (a) uniform sizes, (b) normal sizes. Loads 0.1-0.9 (quick: "
                                 f"{QUICK_LOADS})."), notes=NOTES))


_delay_exp("lazy-fig3", "Figure 3", "uniform",
           "With uniformly distributed residence times, FCFS saturates early; scan and lazy beat "
           "FCFS and lazy's mean queueing delay is below scan's. Static partitioning does very well "
           "with uniform sizes (lazy comes close to it) but deteriorates with normal sizes.")
_delay_exp("lazy-fig4", "Figure 4", "hyperexp",
           "With hyperexponential residence times the gap between lazy and scan widens: scan "
           "deteriorates with the variability of residence times while lazy performs well, for "
           "uniform and normal sizes alike.")
