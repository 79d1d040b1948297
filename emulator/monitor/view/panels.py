"""The side panels other than the queues: the running jobs' table, the metrics with their
utilization sparkline, and the gang slot with the registration office."""
from __future__ import annotations

from rich import box
from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from emulator.monitor.view.style import SPARK, SUSP_BG, _dur, _fmt, _pct, job_colour

def running_panel(running: list, width: int, max_h: int, time_unit: float) -> tuple[Panel, int]:
    t = Table(box=None, pad_edge=False, padding=(0, 1), header_style="bold", expand=False)
    t.add_column("JOB", no_wrap=True)
    t.add_column("REQ", no_wrap=True)
    t.add_column("ALLOCATION", no_wrap=True, overflow="ellipsis", max_width=max(8, width - 34))
    t.add_column("ELAPSED", justify="right", no_wrap=True)
    t.add_column("LEFT", justify="right", no_wrap=True)
    delays = any("delay_us" in r for r in running)  # jobs that communicate (--network wormhole)
    if delays:
        t.add_column("DELAY", justify="right", no_wrap=True)
    rows = max(1, max_h - 3)
    show = running if len(running) <= rows else running[:rows - 1]
    for r in show:
        jid = r["id"]
        style = f"black on {job_colour(jid)}" if r["state"] == "running" else f"bold {job_colour(jid)} on {SUSP_BG}"
        cells = [Text(f"{jid:>3}" + ("z" if r["state"] == "suspended" else ""), style=style),
                 r.get("request") or "-", r.get("allocation") or f"{r['nodes']} nodes",
                 _dur(r.get("elapsed")), _dur(r.get("remaining"))]
        if delays:
            cells.append(f"{r['delay_us']:.0f} us" if "delay_us" in r else "-")
        t.add_row(*cells)
    parts = [t]
    if len(show) < len(running):
        parts.append(Text(f"… {len(running) - len(show)} more running", style="dim"))
    if not running:
        parts = [Text("no job running", style="dim")]
    title = f"running ({len(running)}) · 1u = {_fmt(time_unit)} s"
    return (Panel(Group(*parts), title=title, title_align="left", box=box.ROUNDED, padding=(0, 1)),
            (len(show) + 1 if running else 1) + len(parts) - 1 + 2)


# ---------------------------------------------------------------------- metrics and gang


def sparkline(values: list[float], width: int) -> Text:
    vals = values[-width:] if width > 0 else []
    return Text("".join(SPARK[min(len(SPARK) - 1, int(v * len(SPARK)))] for v in vals), style="cyan")


def metrics_panel(m: dict, width: int) -> Panel:
    inner = width - 4
    lines = []
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append("util ", style="dim")
    t.append(_pct(m.get("utilization_now")), style="bold")
    t.append(" now  ", style="dim")
    t.append(_pct(m.get("utilization")), style="bold")
    t.append(" mean  ", style="dim")
    t.append_text(sparkline(m.get("history") or [], max(0, inner - t.cell_len)))
    lines.append(t)
    t = Text(no_wrap=True, overflow="ellipsis")
    for key, label, style in (("waiting", "waiting", "yellow"), ("running", "running", "green"),
                              ("completed", "done", "cyan"), ("failed", "failed", "red"),
                              ("cancelled", "cancelled", "dim")):
        if key == "cancelled" and not m.get(key):
            continue
        t.append(f"{label} ", style="dim")
        t.append(f"{m.get(key, 0)}  ", style=f"bold {style}")
    lines.append(t)
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append("mean wait ", style="dim")
    t.append(_fmt(m.get("mean_queueing_delay"), "u"), style="bold")
    t.append("  turnaround ", style="dim")
    t.append(_fmt(m.get("mean_turnaround"), "u"), style="bold")
    lines.append(t)
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append("throughput ", style="dim")
    t.append(_fmt(m.get("throughput"), "/u"), style="bold")
    t.append("  ext.frag ", style="dim")
    t.append(_pct(m.get("external_fragmentation")), style="bold")
    t.append(" (sampled)", style="dim")
    lines.append(t)
    span = m.get("history_seconds")
    lines.append(Text(f"sparkline: busy share, last {_fmt(span)} s; T = {_fmt(m.get('time'), 'u')}",
                      style="dim", no_wrap=True, overflow="ellipsis"))
    return Panel(Group(*lines), title="metrics", title_align="left", box=box.ROUNDED, padding=(0, 1))


def gang_lines(g: dict, width: int) -> list[Text]:
    slot = g.get("slot") or {}
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(f"{g.get('policy', '?')} ", style="bold")
    t.append(f"mpl={g.get('mpl')} slot #{slot.get('number')} ", style="")
    if slot.get("until") is not None:
        t.append(f"until {_fmt(slot.get('until'), 'u')} ", style="dim")
    t.append("primary ", style="dim")
    t.append(str(slot.get("primary")), style="bold")
    lines = [t]
    running = set(slot.get("running") or ())
    for row in g.get("rows") or ():
        r = Text(no_wrap=True, overflow="ellipsis")
        r.append(f"row {row['row']}: ", style="dim")
        for jid in row.get("jobs") or ():
            on = jid in running
            r.append(f"{jid}" + ("" if on else "z"),
                     style=(f"black on {job_colour(jid)}" if on else f"{job_colour(jid)} on {SUSP_BG}")
                     if isinstance(jid, int) else "")
            r.append(" ")
        lines.append(r)
    office = g.get("office") or {}
    r = Text(no_wrap=True, overflow="ellipsis")
    r.append("office: ", style="dim")
    for jid in office.get("order") or ():
        if jid == office.get("pointer"):
            r.append("P▶", style="bold yellow")
        r.append(f"{jid} ")
    if office.get("pointer") is None:
        r.append("(P unset)", style="dim")
    lines.append(r)
    if g.get("waiting"):
        w = Text(no_wrap=True, overflow="ellipsis")
        w.append("batch: ", style="dim")
        w.append(" ".join(map(str, g["waiting"])))
        lines.append(w)
    return lines


def gang_panel(g: dict | None, width: int) -> tuple[Panel, int]:
    lines = gang_lines(g, width) if g else [Text("gang scheduling off", style="dim")]
    return (Panel(Group(*lines), title="gang slot · registration office", title_align="left",
                  box=box.ROUNDED, padding=(0, 1)), len(lines) + 2)
