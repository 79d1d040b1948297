"""``figure.png`` of ``mcemu reproduce``: one subplot per panel of the experiment, with 95%
confidence bars and an open marker where a point reached the replication cap.

A panel of kind ``contour`` draws its metric over two parameters, as the dissertation's Figs
6.8/6.9 do: ``x`` on the x axis and the parameter named by ``series`` (a string) on the y axis,
gray filled bands between labelled level lines, the diagonal x = y dashed, a dot per point (open
where the point reached the cap). Its ``linestyle`` is asked for the style of the panel's title:
a style other than solid marks the panel as ours (an extra, not the paper's): its level lines take
that style on a blue scale, so the paper's panels read as in the paper."""
from __future__ import annotations

import math
from pathlib import Path

from emulator.experiments.experiment import Experiment, ReproduceError, Results, _hashable, _sort_key
from emulator.experiments.report import _panel_rows, _xmetric_means


def plot(exp: Experiment, res: Results, path: Path) -> None:
    import matplotlib  # lazy: 530 ms, and the runner (mcemu reproduce --list, the tests) imports this module

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after use("Agg"): no display is needed

    n = len(exp.panels)
    rows, cols = exp.layout or ((1, n) if n <= 3 else (math.ceil(n / 2), 2))
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 4.0 * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    for ax, panel in zip(axes.flat, exp.panels):
        if panel.kind == "contour":
            _contour(fig, ax, res, panel)
            continue
        series = _panel_rows(res, panel)
        if panel.kind == "bar":
            xs = sorted({t[0] for v in series.values() for t in v}, key=_sort_key)
            width = 0.8 / max(1, len(series))
            for i, (lab, pts) in enumerate(series.items()):
                pos = {t[0]: t for t in pts}
                idx = [j for j, x in enumerate(xs) if x in pos]
                ys = [pos[xs[j]][1] for j in idx]
                es = [_finite(pos[xs[j]][2]) for j in idx]
                ax.bar([j - 0.4 + width * (i + 0.5) for j in idx], ys, width, yerr=es, capsize=3, label=lab)
            ax.set_xticks(range(len(xs)))
            ax.set_xticklabels([str(x) for x in xs])
        else:
            measured = _xmetric_means(res, panel)  # x: a measured metric (chapter 7's utilization)
            for lab, pts in series.items():
                if measured:  # in the offered load's order: past saturation a curve bends back
                    pts = [(measured.get((lab, t[0]), math.nan), *t[1:]) for t in pts]
                xs = [t[0] for t in pts]
                ys = [t[1] for t in pts]
                es = [_finite(t[2]) for t in pts]
                line = ax.errorbar(xs, ys, yerr=es, marker="o", ms=4, capsize=3, label=lab,
                                   ls=panel.linestyle(lab) if panel.linestyle else "-")
                capx = [t[0] for t in pts if t[3]]
                if capx:
                    capy = [t[1] for t in pts if t[3]]
                    ax.plot(capx, capy, "o", mfc="white", ms=7, color=line[0].get_color())
        if panel.hline:
            vals = [p.mean(panel.hline) for p in res.select(**panel.where)]
            vals = [v for v in vals if math.isfinite(v)]
            if vals and panel.kind != "bar":
                ax.axhline(sum(vals) / len(vals), ls="--", color="k", lw=1, label=panel.hline)
        if panel.hline and panel.kind == "bar":
            xs = sorted({t[0] for v in series.values() for t in v}, key=_sort_key)
            for j, x in enumerate(xs):
                vals = [p.mean(panel.hline) for p in res.select(**panel.where)
                        if _hashable(p.params.get(panel.x)) == x]
                if vals:
                    ax.hlines(sum(vals) / len(vals), j - 0.45, j + 0.45, colors="k", linestyles="--", lw=1.2)
        if panel.logy and any(t[1] > 0 for v in series.values() for t in v if math.isfinite(t[1])):
            ax.set_yscale("log")
        ax.set_title(panel.title, fontsize=10)
        ax.set_xlabel(panel.xlabel or panel.x)
        ax.set_ylabel(panel.ylabel or panel.metric)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    quick = " (quick form)" if res.quick else ""
    key = ("error bars: 95% CI; open marker: replication cap reached" if any(p.kind != "contour" for p in exp.panels)
           else "contours of the means at the dots (open: replication cap reached); red dashed: x = y")
    fig.suptitle(f"{exp.paper}, {exp.figure}: {exp.title}{quick}\n{key}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _contour(fig, ax, res: Results, panel) -> None:
    """The metric over (x, y) = (params[panel.x], params[panel.series]) on the grid of the
    points matching ``where``; a missing grid cell stays blank."""
    import numpy as np

    pts = res.select(**panel.where)
    if not pts:  # a study the quick form does not run
        ax.set_visible(False)
        return
    xs = sorted({p.params.get(panel.x) for p in pts}, key=_sort_key)
    ys = sorted({p.params.get(panel.series) for p in pts}, key=_sort_key)
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in xs + ys)
    if not numeric or min(len(xs), len(ys)) < 2:
        raise ReproduceError(f"contour panel {panel.title!r}: {panel.x} and {panel.series} must each take "
                             f"two numeric values at least, got {xs} and {ys}")
    z = np.full((len(ys), len(xs)), np.nan)
    for p in pts:
        z[ys.index(p.params[panel.series]), xs.index(p.params[panel.x])] = p.mean(panel.metric)
    style = panel.linestyle(panel.title) if panel.linestyle else "-"
    ours = style not in ("-", "solid")
    levels = _levels(np.nanmin(z), np.nanmax(z))
    z = np.ma.masked_invalid(z)
    filled = ax.contourf(xs, ys, z, levels=levels, cmap="Blues" if ours else "Greys", alpha=0.85)
    lines = ax.contour(xs, ys, z, levels=levels, colors="k", linewidths=0.7, linestyles=style)
    ax.clabel(lines, lines.levels[::2], fmt="%g", fontsize=7, inline=True)
    fig.colorbar(filled, ax=ax, fraction=0.046, pad=0.03)
    lo, hi = max(xs[0], ys[0]), min(xs[-1], ys[-1])
    ax.plot([lo, hi], [lo, hi], "--", color="tab:red", lw=1)
    done = [(p.params[panel.x], p.params[panel.series], p.capped) for p in pts]
    ax.plot([d[0] for d in done if not d[2]], [d[1] for d in done if not d[2]], ".", color="k", ms=3)
    ax.plot([d[0] for d in done if d[2]], [d[1] for d in done if d[2]], "o", mfc="white", mec="k", ms=4)
    ax.set_aspect("equal", adjustable="box")
    ax.set_title(panel.title, fontsize=10)
    ax.set_xlabel(panel.xlabel or panel.x)
    ax.set_ylabel(panel.ylabel or str(panel.series))


def _levels(lo: float, hi: float):
    """Level values over [lo, hi]: evenly spaced, or spaced by ratio (2 significant digits)
    when the values span more than a factor of 3 (delays that climb steeply at one corner would
    otherwise leave the rest of the map in one band)."""
    import numpy as np
    from matplotlib.ticker import MaxNLocator

    if lo > 0 and hi / lo > 3:
        vals = [float(f"{v:.2g}") for v in np.geomspace(lo, hi, 14)]
        vals = sorted(set(vals))
        if vals[0] > lo:
            vals[0] = float(np.floor(lo))
        if vals[-1] < hi:
            vals[-1] = float(np.ceil(hi))
        return vals
    return MaxNLocator(nbins=9).tick_values(lo, hi)


def _finite(v):
    return v if isinstance(v, (int, float)) and math.isfinite(v) else 0.0
