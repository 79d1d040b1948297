"""The text outputs of ``mcemu reproduce``: ``results.csv``, the JSON summary, ``REPORT.md`` (the
paper's claim, our numbers as tables, the computed verdict) and the folder's ``README.md``
index of every experiment."""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from emulator import experiments
from emulator.experiments import verdict
from emulator.experiments.experiment import Check, Experiment, Panel, Results, _hashable, _sort_key, fmt

CSV_TAIL = ["metric", "mean", "ci95", "replications", "capped"]


def write_csv(path: Path, exp: Experiment, res: Results) -> None:
    cols: list[str] = []
    for p in res.points:
        for k in p.params:
            if k not in cols and k not in CSV_TAIL:
                cols.append(k)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols + CSV_TAIL)
        for p in res.points:
            row = [json.dumps(p.params[c], sort_keys=True) if isinstance(p.params.get(c), (dict, list))
                   else p.params.get(c, "") for c in cols]
            # every metric the point has (not only the plotted ones): a check may read any, and
            # a reader recomputes the verdict from this file alone
            for m in list(exp.metrics) + [m for m in p.stats if m not in exp.metrics]:
                mu, hw = p.stats.get(m, (math.nan, math.nan))
                w.writerow(row + [m, repr(mu), repr(hw), p.reps, int(p.capped)])


def _panel_rows(res: Results, panel: Panel):
    """{series label: [(x, mean, ci, capped), ...]} sorted by x."""
    series: dict[str, list] = {}
    for p in res.select(**panel.where):
        lab = panel.label(p.params)
        if panel.xmetrics:
            for xv, m in panel.xmetrics:
                if m in p.stats:
                    series.setdefault(lab, []).append((xv, p.mean(m), p.ci(m), p.capped))
        else:
            series.setdefault(lab, []).append((_hashable(p.params.get(panel.x)), p.mean(panel.metric),
                                               p.ci(panel.metric), p.capped))
    for v in series.values():
        v.sort(key=lambda t: _sort_key(t[0]))
    return series


def _xmetric_means(res: Results, panel: Panel) -> dict:
    """{(series label, x): mean of ``panel.xmetric``} for a panel that draws a measured metric on
    its x axis (empty for the others)."""
    if not panel.xmetric or panel.xmetrics:
        return {}
    return {(panel.label(p.params), _hashable(p.params.get(panel.x))): p.mean(panel.xmetric)
            for p in res.select(**panel.where) if panel.xmetric in p.stats}


def panel_table(res: Results, panel: Panel, exact: bool = False) -> str:
    series = _panel_rows(res, panel)
    xs = sorted({t[0] for v in series.values() for t in v}, key=_sort_key)
    labs = list(series)
    what = "one deterministic run" if exact else "mean ± 95% CI half-width; * = cap reached"
    measured = _xmetric_means(res, panel)
    if measured:
        what += f"; in brackets: the measured {panel.xmetric}, the figure's x"
    if panel.kind == "contour":  # its ylabel names the y axis (a parameter), not the metric
        title = f"{panel.metric} ({what}); rows: {panel.xlabel or panel.x}, columns: {panel.ylabel or panel.series}"
    else:
        title = f"{panel.ylabel or panel.metric} ({what})"
    head = f"| {panel.x if measured else panel.xlabel or panel.x} | " + " | ".join(labs) + " |"
    lines = [f"**{panel.title}** — {title}", "", head, "|" + "---|" * (len(labs) + 1)]
    for x in xs:
        cells = []
        for lab in labs:
            hit = [t for t in series[lab] if t[0] == x]
            if not hit:
                cells.append("")
                continue
            _, mu, hw, capped = hit[0]
            cells.append((fmt(mu) if exact else f"{fmt(mu)} ± {fmt(hw, 2)}" + ("*" if capped else ""))
                         + (f" [{fmt(measured[lab, x])}]" if (lab, x) in measured else ""))
        lines.append(f"| {x} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_report(path: Path, exp: Experiment, res: Results, check: Check, quick: bool, summary: dict) -> None:
    capped = [p for p in res.points if p.capped]
    min_r, cap = exp.caps(quick)
    lines = [f"# {exp.name}: {exp.title}", "",
             f"*{exp.paper}, {exp.figure}.*" + (" **Quick form** (reduced grid, short runs: "
                                                 "not for conclusions)." if quick else ""), "",
             "## The paper's claim", "", exp.claim, "",
             "## Settings used", "", exp.settings_text(quick).strip(), "",
             ("Replications: one run per point (deterministic)." if exp.deterministic else
              "Replications: independent seeds per replication (the same seeds across the points "
              "of this experiment: common random numbers), "
                f"at least {min_r}, at most {cap}, until the 95% confidence half-width of "
                f"{', '.join(exp.stop_on or exp.metrics[:1])} is within {exp.precision:.0%} of its mean."),
             "", "## Our numbers", "", "![figure](figure.png)", ""]
    for panel in exp.panels:
        lines += [panel_table(res, panel, exp.deterministic), ""]
    if exp.table:
        lines += [exp.table(res), ""]
    lines += ["## Check", "", POLICY, ""] + check_lines(check)
    lines += ["", f"**Verdict: {check.verdict}** ({verdict.count_text(check.subs)}).", ""]
    if exp.notes:
        lines += ["## Why we think so", "", exp.notes.strip(), ""]
    lines += ["## Replications", "",
              f"{len(res.points)} points, {sum(p.reps for p in res.points)} replications "
              f"({summary['replications_computed']} computed in this invocation, "
              f"{summary['wall_seconds']:.1f} s)."]
    if capped:
        why = ("the quick form's cap: its short runs are not meant to meet the target" if quick else
               "runs disagree too much: past saturation the delay grows with the run, and "
               "heavy-tailed service (hyperexponential, Cx 4) needs far more runs")
        lines.append(f"{len(capped)} point(s) reached the cap of {cap} replications without the "
                     f"target precision ({why}):")
        stop = (exp.stop_on or exp.metrics[:1])[0]
        for p in capped[:40]:
            rel = p.ci(stop) / abs(p.mean(stop)) if p.mean(stop) else math.nan
            lines.append(f"- {_short(p.params)}: {stop} half-width {fmt(rel * 100, 3)}% of the mean")
    path.write_text("\n".join(lines) + "\n")


POLICY = ("Judged under the one verdict policy (`emulator/experiments/verdict.py`): a sub-claim holds "
          "or fails only when it does so beyond the 95% confidence intervals, a difference inside them "
          "is inconclusive; sensitivity rows (the other reading of an ambiguous text) and rows marked "
          "not informative or not reproducible in saturation are shown but not scored.")
_BOX = {verdict.HOLDS: "x", verdict.FAILS: " ", verdict.INCONCLUSIVE: "~"}


def check_lines(check: Check) -> list[str]:
    out = []
    for s in check.subs:
        head = {"claim": "", "sensitivity": "sensitivity row (not scored), "}.get(s.role, "")
        box = "-" if s.role == "note" else ("s" if s.role == "sensitivity" else _BOX[s.outcome])
        line = f"- [{box}] {head}{verdict.mark(s.outcome)}: {s.text}"
        if s.basis:
            line += f" [{s.basis}]"
        if s.tol:
            line += f" *Tolerance: {s.tol} ({s.why}).*"
        out.append(line)
    return out


def _short(params: dict) -> str:
    keep = ("topology", "allocator", "scheduler", "reduction", "size", "service", "load", "iatm", "jobs",
            "dparams", "study")
    return ", ".join(f"{k}={json.dumps(params[k]) if isinstance(params[k], dict) else params[k]}"
                     for k in keep if k in params and params[k] not in (None, {}, ""))


def _index_row(out_dir: Path, exp) -> tuple[str, str, dict | None]:
    """(verdict line, quick mark, counts) of one experiment's committed outputs."""
    report = out_dir / exp.name / "REPORT.md"
    text = report.read_text()
    line = next((ln for ln in text.splitlines() if ln.startswith("**Verdict:")), "no verdict")
    quick = " (quick form)" if "**Quick form**" in text else ""
    try:
        summary = json.loads((out_dir / exp.name / "results.json").read_text())
        return line, quick, {"verdict": summary["verdict"], **summary["counts"]}
    except (OSError, ValueError, KeyError):
        return line, quick, None


def write_index(out_dir: Path) -> Path:
    """``DIR/README.md``: every experiment of the registry with its figure, its verdict and the
    counts of its sub-claims (held, failed, inconclusive), so a reader sees the results without
    running anything."""
    out_dir = Path(out_dir)
    rows, sections, tally = [], [], {v: 0 for v in verdict.VERDICTS}
    for exp in experiments.all_experiments():
        if not (out_dir / exp.name / "REPORT.md").exists():
            rows.append(f"| {exp.name} | {exp.paper}, {exp.figure} | not run yet | | | |")
            continue
        line, quick, c = _index_row(out_dir, exp)
        if c is None:
            cells = f"{line}{quick} | | | "
        else:
            tally[c["verdict"]] = tally.get(c["verdict"], 0) + 1
            cells = f"**{c['verdict']}**{quick} | {c['holds']} | {c['fails']} | {c['inconclusive']}"
        rows.append(f"| [{exp.name}]({exp.name}/REPORT.md) | {exp.paper}, {exp.figure} | {cells} |")
        sections += [f"## {exp.name}: {exp.title}", "", f"*{exp.paper}, {exp.figure}.* {line}{quick} "
                     f"[report]({exp.name}/REPORT.md), [data]({exp.name}/results.csv)", "",
                     f"![{exp.name}]({exp.name}/figure.png)", ""]
    lines = ["# Reproduced results", "",
             "Each experiment re-runs one figure or table of the papers with `mcemu reproduce NAME`; "
             "its REPORT.md states the paper's claim, our numbers and a verdict computed from them under "
             "one policy (`emulator/experiments/verdict.py`): a sub-claim holds or fails only beyond the 95% "
             "confidence intervals, a difference inside them is inconclusive.", "",
             "Verdicts: " + ", ".join(f"{n} {v}" for v, n in tally.items()) + ".", "",
             "| experiment | paper, figure | verdict | hold | fail | inconclusive |", "|---|---|---|---|---|---|",
             *rows, "", *sections]
    path = out_dir / "README.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def _summary(exp, res, check, quick, computed, secs) -> dict:
    return {
        "experiment": exp.name, "paper": exp.paper, "figure": exp.figure, "title": exp.title,
        "quick": quick, "verdict": check.verdict,
        "counts": check.counts,
        "checks": [{"holds": s.ok, "claim": s.text, "outcome": s.outcome, "role": s.role,
                    **({"intervals": s.basis} if s.basis else {}),
                    **({"tolerance": s.tol, "why": s.why} if s.tol else {})} for s in check.subs],
        "replications_computed": computed, "wall_seconds": round(secs, 3),
        "points": [{"params": p.params, "replications": p.reps, "capped": p.capped,
                    "metrics": {m: {"mean": p.stats[m][0], "ci95": p.stats[m][1]}
                                for m in exp.metrics if m in p.stats}}
                   for p in res.points],
    }
