"""The monitor's picture: pure functions from the view dict (``MonitorState.view()``) to Rich
renderables. Nothing here keeps or computes state; the only decisions are presentation
(how many characters a node gets, which lines fit).

``render(view, width, height)`` fills a :class:`rich.layout.Layout` with the named regions
``header``, ``machine``, ``queues``, ``running``, ``metrics``, ``gang`` and ``footer``.
``render_once(view, width)`` returns the same picture and the height it needs (for
``--once``: the whole picture, not cut to a terminal).

The grid picks the widest node cell that fits: 4, 3, 2 or 1 characters per node, and when
even one text row per machine row is too tall, one character per two nodes (the top node
as the upper half block's colour, the bottom node as its background).
"""
from __future__ import annotations

import io

from rich import box
from rich.console import Console, Group
from rich.layout import Layout
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

PALETTE = ["dodger_blue2", "green3", "dark_orange", "medium_purple", "gold3", "deep_pink3", "cyan3",
           "chartreuse3", "salmon1", "steel_blue1", "orchid", "khaki3", "spring_green3",
           "light_slate_blue", "indian_red", "turquoise2"]
IDLE_STYLE = "grey50"
DOWN_STYLE = "bold white on red3"
SUSP_BG = "grey30"
SPARK = "▁▂▃▄▅▆▇█"
SIDE_MIN = 40          # columns the side regions need at least
HEADER_H = FOOTER_H = 1
METRICS_H = 7
MACHINE_MIN_W = 34     # the machine panel's least inner width (its legend)


def job_colour(jid: int) -> str:
    return PALETTE[jid % len(PALETTE)]


def _fmt(x, unit="", digits=3) -> str:
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        if x != x:
            return "-"
        s = f"{x:.{digits}g}" if abs(x) < 10 ** digits else f"{x:.0f}"
        return s + unit
    return f"{x}{unit}"


def _dur(x) -> str:
    return "-" if x is None else f"{x:.1f}u"


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


# ---------------------------------------------------------------------- the machine


def grid_mode(machine: dict, max_w: int, max_h: int) -> tuple[int, bool]:
    """(characters per node, two rows per line) for the largest cells that fit a panel of
    ``max_w`` x ``max_h`` (borders included)."""
    W, H = machine["width"], machine["height"]
    lab = _row_label_width(machine)
    for cw in (6, 4, 3, 2, 1):
        if lab + cw * W + 2 <= max_w and H + _extra_lines(machine, cw, lab + cw * W) + 2 <= max_h:
            return cw, False
    cw = 2 if lab + 2 * W + 2 <= max_w else 1
    return cw, True


def _row_label_width(machine: dict) -> int:
    return max((len(s) for s in machine["row_labels"]), default=0) + 1


def _extra_lines(machine: dict, cw: int, inner_w: int) -> int:
    """Column labels and the legend under the grid."""
    head = 1 if _col_header(machine, cw, False).plain else 0
    return head + _legend_lines(machine, cw, False, max(inner_w, MACHINE_MIN_W))


def _col_header(machine: dict, cw: int, half: bool) -> Text:
    W = machine["width"]
    line = [" "] * (cw * W)
    last_end = -1
    for x, lab in enumerate(machine["col_labels"]):
        pos = x * cw
        if len(lab) > 2 * cw:  # fewer than every other column labelled: none (the note says)
            return Text("")
        if not lab or pos <= last_end or pos + len(lab) > len(line):
            continue
        line[pos:pos + len(lab)] = lab
        last_end = pos + len(lab)
    return Text(" " * _row_label_width(machine) + "".join(line).rstrip(), style="dim")


def _cell(state: str, jid, cw: int) -> Text:
    """One idle or down node."""
    if state == "down":
        return Text("X".rjust(cw - 1) + " " if cw > 1 else "X", style=DOWN_STYLE)
    return Text(("·".rjust(cw - 1) + " ") if cw > 1 else "·", style=IDLE_STYLE)


def _run(state: str, jid: int, length: int, cw: int) -> Text:
    """``length`` side-by-side nodes of one job: one coloured block labelled with the job id
    (its last digits when the block is too short), ``z`` first when it is suspended."""
    room = length * cw - (1 if cw > 1 else 0)
    label = ("z" if state == "suspended" else "") + str(jid)
    if len(label) > room:
        label = ("z" if state == "suspended" else "") + str(jid)[-max(1, room - (state == "suspended")):]
        label = label[-room:]
    style = f"bold {job_colour(jid)} on {SUSP_BG}" if state == "suspended" else f"black on {job_colour(jid)}"
    return Text(label.ljust(length * cw), style=style)


def _half_colour(state: str, jid) -> str:
    if state == "down":
        return "red3"
    if jid is None:
        return "grey23"
    if state == "suspended":
        return SUSP_BG
    return job_colour(jid)


def machine_grid(machine: dict, cw: int, half: bool) -> Text:
    nodes = machine["nodes"]
    grid = machine["grid"]
    lab_w = _row_label_width(machine)
    out = Text(no_wrap=True, overflow="crop")
    head = _col_header(machine, cw, half)
    step = 2 if half else 1
    first = True
    if head.plain:
        out.append_text(head)
        first = False
    for r in range(0, len(grid), step):
        if not first:
            out.append("\n")
        first = False
        out.append(machine["row_labels"][r].rjust(lab_w - 1) + " ", style="dim")
        row = grid[r]
        if not half:
            i = 0
            while i < len(row):
                st, jid = nodes[row[i]]
                if jid is None or st == "down":
                    out.append_text(_cell(st, jid, cw))
                    i += 1
                    continue
                j = i + 1
                while j < len(row) and nodes[row[j]][1] == jid and nodes[row[j]][0] == st:
                    j += 1
                out.append_text(_run(st, jid, j - i, cw))
                i = j
            continue
        below = grid[r + 1] if r + 1 < len(grid) else None
        for i, n in enumerate(row):
            top = _half_colour(*nodes[n])
            bot = _half_colour(*nodes[below[i]]) if below else "default"
            out.append("▀" * cw, style=f"{top} on {bot}")
    return out


def machine_legend(machine: dict, cw: int, half: bool, short: bool = False) -> Text:
    t = Text(no_wrap=False)
    if half:
        t.append("▀", style=f"{job_colour(1)} on grey23")
        t.append(" 2 nodes/char ", style="dim")
        t.append("█", style="grey23")
        t.append(" idle ", style="dim")
        t.append("█", style="red3")
        t.append(" down ", style="dim")
        t.append("█", style=SUSP_BG)
        t.append(" suspended", style="dim")
    else:
        t.append("·", style=IDLE_STYLE)
        t.append(" idle  ", style="dim")
        t.append("12  ", style=f"black on {job_colour(12)}")
        t.append(" job 12  ", style="dim")
        t.append("z", style=f"bold {job_colour(12)} on {SUSP_BG}")
        t.append(" suspended  ", style="dim")
        t.append("X", style=DOWN_STYLE)
        t.append(" down", style="dim")
    t.append(" " + (machine.get("short_note") or machine["note"] if short else machine["note"]),
             style="dim italic")
    return t


def machine_panel(machine: dict, max_w: int, max_h: int) -> tuple[Panel, int, int]:
    """The machine region and the (width, height) it needs."""
    cw, half = grid_mode(machine, max_w, max_h)
    inner_w = _row_label_width(machine) + cw * machine["width"]
    c = machine.get("counts") or {}
    title = (f"machine: {c.get('busy', 0)} busy {c.get('idle', 0)} idle "
             + (f"[bold red]{c['down']} down[/]" if c.get("down") else "0 down")
             + (f" {c['suspended']} susp" if c.get("suspended") else ""))
    width = max(inner_w, MACHINE_MIN_W) + 2
    rows = (machine["height"] + 1) // 2 if half else machine["height"]
    head = 1 if _col_header(machine, cw, half).plain else 0
    short = head + rows + _legend_lines(machine, cw, half, width - 2) + 2 > max_h
    legend = machine_legend(machine, cw, half, short)
    legend_lines = _legend_lines(machine, cw, half, width - 2, short)
    grid = machine_grid(machine, cw, half)
    body = Group(grid, legend)
    height = (1 if _col_header(machine, cw, half).plain else 0) + rows + legend_lines + 2
    return (Panel(body, title=title, title_align="left", box=box.ROUNDED, padding=(0, 0)),
            width, height)


def _legend_lines(machine: dict, cw: int, half: bool, inner_w: int, short: bool = False) -> int:
    return len(machine_legend(machine, cw, half, short).wrap(_Measure, inner_w))


_Measure = Console(width=400, file=io.StringIO())  # only to count wrapped lines


# ---------------------------------------------------------------------- queues

_SKIP = {"discipline", "queues", "running", "blocked", "HQ", "EQ", "LQs", "limits", "preset", "next_wakeup",
         "literal"}
_QSKIP = {"name", "jobs", "current", "in_pass", "priority", "class", "over_threshold", "partition", "running"}
_SHORT = {"stop_alloc": "stop_alloc", "threshold_mode": "mode", "lookahead_window": "lookahead",
          "mean_EQ_length": "mean|EQ|", "priority_job": "prio", "threshold": "thr", "starvation_free": "starv.free", "advance_when_blocked": "adv.blocked"}


def _jobs_text(jobs: list, in_pass=None, width: int = 60) -> Text:
    t = Text()
    cut = None
    if isinstance(in_pass, list) and in_pass:
        cut = in_pass[-1]
    shown = 0
    for jid in jobs:
        piece = f"{jid} "
        if t.cell_len + len(piece) + 6 > width:
            t.append(f"…+{len(jobs) - shown}", style="dim")
            break
        t.append(str(jid), style=job_colour(int(jid)) if isinstance(jid, int) else "")
        t.append(" ")
        shown += 1
        if cut is not None and jid == cut and shown < len(jobs):
            t.append("┊ ", style="yellow")
    return t


def _params_line(d: dict) -> Text:
    t = Text()
    for k, v in d.items():
        if k in _SKIP or isinstance(v, (list, dict)):
            continue
        if k == "boundary" and isinstance(v, dict):
            continue
        key = _SHORT.get(k, k)
        if k == "stop_alloc":
            t.append("stop_alloc=", style="dim")
            t.append("ON " if v else "off ", style="bold red" if v else "green")
            continue
        t.append(f"{key}=", style="dim")
        t.append(f"{_fmt(v)} ")
    b = d.get("boundary")
    if isinstance(b, dict):
        t.append("boundary=", style="dim")
        t.append(f"{b.get('queue')} after job {b.get('last_job')} ")
    return t


def queue_lines(d: dict, width: int, max_lines: int) -> list[Text]:
    """One line per queue, as the discipline names them, with its parameters (N_k, sizes,
    BQSL...), its waiting jobs, a marker on the current queue and the pass boundary."""
    queues = d.get("queues") or []
    lines = []
    name_w = max((len(str(q.get("name", ""))) for q in queues), default=2)
    for q in queues:
        t = Text(no_wrap=True, overflow="ellipsis")
        cur = q.get("current")
        t.append("▶ " if cur else "  ", style="bold yellow")
        t.append(str(q.get("name", "")).ljust(name_w), style="bold" if q.get("jobs") else "dim")
        for k, v in q.items():
            if k in _QSKIP:
                continue
            if k == "sizes" and isinstance(v, (list, tuple)) and len(v) == 2:
                t.append(f" {v[0]}+" if v[1] is None else (f" {v[0]}-{v[1]}" if v[0] != v[1] else f" {v[0]}"),
                         style="dim")
                continue
            t.append(f" {_SHORT.get(k, k)}=", style="dim")
            t.append(_fmt(v), style="bold red" if (k == "N_k" and q.get("over_threshold")) else "")
        jobs = q.get("jobs") or []
        t.append(f" [{len(jobs)}] ", style="bold" if jobs else "dim")
        t.append_text(_jobs_text(jobs, q.get("in_pass"), max(10, width - t.cell_len)))
        lines.append((bool(jobs) or "N_k" in q, t))
    if len(lines) > max_lines:  # keep the queues that hold jobs; name the empty ones
        keep = [t for busy, t in lines if busy]
        empty = [str(q.get("name")) for q in queues if not q.get("jobs")]
        if len(keep) >= max_lines:
            keep = keep[:max_lines - 1] + [Text(f"  … {len(keep) - max_lines + 1} more queues", style="dim")]
            return keep
        keep.append(Text("  empty: " + " ".join(empty), style="dim", no_wrap=True, overflow="ellipsis"))
        if len(keep) > max_lines:
            keep = [t for busy, t in lines if busy][:max_lines]
        return keep[:max_lines]
    return [t for _, t in lines]


def queues_panel(d: dict, width: int, max_h: int) -> tuple[Panel, int]:
    inner = width - 4
    head = _params_line(d)
    head_lines = len(head.wrap(_Measure, inner)) if head.plain else 0
    blocked = d.get("blocked")
    fixed = head_lines + (1 if blocked else 0)
    qlines = queue_lines(d, inner, max(1, max_h - 2 - fixed))
    parts = ([head] if head.plain else []) + qlines
    if blocked:
        b = Text("⚠ " + str(blocked), style="yellow", no_wrap=True, overflow="ellipsis")
        parts.append(b)
    if not d:
        parts = [Text("no discipline snapshot yet", style="dim")]
    name = d.get("discipline", "?")
    return (Panel(Group(*parts), title=f"queues · {name}", title_align="left", box=box.ROUNDED, padding=(0, 1)),
            len(parts) + 2 + max(0, head_lines - 1))


# ---------------------------------------------------------------------- running jobs


def running_panel(running: list, width: int, max_h: int, time_unit: float) -> tuple[Panel, int]:
    t = Table(box=None, pad_edge=False, padding=(0, 1), header_style="bold", expand=False)
    t.add_column("JOB", no_wrap=True)
    t.add_column("REQ", no_wrap=True)
    t.add_column("ALLOCATION", no_wrap=True, overflow="ellipsis", max_width=max(8, width - 34))
    t.add_column("ELAPSED", justify="right", no_wrap=True)
    t.add_column("LEFT", justify="right", no_wrap=True)
    rows = max(1, max_h - 3)
    show = running if len(running) <= rows else running[:rows - 1]
    for r in show:
        jid = r["id"]
        style = f"black on {job_colour(jid)}" if r["state"] == "running" else f"bold {job_colour(jid)} on {SUSP_BG}"
        t.add_row(Text(f"{jid:>3}" + ("z" if r["state"] == "suspended" else ""), style=style),
                  r.get("request") or "-", r.get("allocation") or f"{r['nodes']} nodes",
                  _dur(r.get("elapsed")), _dur(r.get("remaining")))
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


# ---------------------------------------------------------------------- header, footer, layout


def header(view: dict) -> Text:
    ti = view["title"]
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(" mcemu ", style="bold white on blue")
    t.append(f" {ti['topology']}", style="bold")
    pol = [ti.get("allocator"), ti.get("scheduler")]
    if ti.get("reduction"):
        pol.append(ti["reduction"])
    if ti.get("gang") and ti["gang"] != "none":
        pol.append(f"gang {ti['gang']}")
    t.append(" · " + " · ".join(str(p) for p in pol if p))
    t.append(f" · t={_fmt(ti.get('now'), 'u', 5)}", style="cyan")
    if ti.get("shutdown"):
        t.append("  DAEMON STOPPED", style="bold red")
    elif ti.get("stale"):
        t.append("  no events from the daemon", style="bold yellow")
    if ti.get("paused"):
        t.append("  PAUSED", style="bold black on yellow")
    return t


def footer(view: dict, live: bool = True) -> Text:
    t = Text(no_wrap=True, overflow="ellipsis", style="dim")
    if live:
        t.append(" q", style="bold")
        t.append(" quit  ")
        t.append("p", style="bold")
        t.append(" pause/resume  ")
    t.append("u = model time unit; ELAPSED/LEFT of the job's (folded) run time")
    return t


def _side_width(width: int, machine_w: int) -> int:
    return width - machine_w


def render(view: dict, width: int, height: int, live: bool = True) -> Layout:
    """The whole screen for a terminal of ``width`` x ``height``."""
    body_h = max(8, height - HEADER_H - FOOTER_H)
    machine = view["machine"]
    mp, mw, mh = machine_panel(machine, max(20, width - SIDE_MIN), body_h)
    side_w = _side_width(width, mw)
    gp, gh = gang_panel(view.get("gang"), side_w)
    gang_on = bool(view.get("gang"))
    left = body_h - METRICS_H - (gh if gang_on else 0)
    qp, qh = queues_panel(view["discipline"], side_w, max(3, left - 6))
    rp, rh = running_panel(view["running"], side_w, max(3, left - qh), view["title"].get("time_unit", 1.0))

    root = Layout(name="root")
    root.split_column(Layout(header(view), name="header", size=HEADER_H),
                      Layout(name="body"),
                      Layout(footer(view, live), name="footer", size=FOOTER_H))
    root["body"].split_row(Layout(mp, name="machine", size=mw), Layout(name="side"))
    q_size = min(qh, max(3, left - 6))
    r_size = min(rh, max(3, left - q_size))
    root["side"].split_column(Layout(qp, name="queues", size=q_size),
                              Layout(rp, name="running", size=r_size),
                              Layout(metrics_panel(view["metrics"], side_w), name="metrics", size=METRICS_H),
                              Layout(gp, name="gang", size=gh, visible=gang_on),
                              Layout(Text(" "), name="pad", ratio=1))
    return root


def render_once(view: dict, width: int, max_queue_lines: int = 40, max_running: int = 40) -> tuple[Layout, int]:
    """The picture at its natural height (``--once``, tests): nothing cut to a terminal."""
    machine = view["machine"]
    mp, mw, mh = machine_panel(machine, max(20, width - SIDE_MIN), 1 << 20)
    side_w = _side_width(width, mw)
    qp, qh = queues_panel(view["discipline"], side_w, max_queue_lines + 2)
    rp, rh = running_panel(view["running"], side_w, max_running + 3, view["title"].get("time_unit", 1.0))
    gang_on = bool(view.get("gang"))
    gh = gang_panel(view.get("gang"), side_w)[1] if gang_on else 0
    side_h = qh + rh + METRICS_H + gh
    body_h = max(mh, side_h)
    height = HEADER_H + body_h + FOOTER_H
    return render_fixed(view, width, height, qh, rh, gh, mp, mw), height


def render_fixed(view, width, height, qh, rh, gh, mp, mw) -> Layout:
    side_w = _side_width(width, mw)
    qp, _ = queues_panel(view["discipline"], side_w, qh)
    rp, _ = running_panel(view["running"], side_w, rh, view["title"].get("time_unit", 1.0))
    gp, _ = gang_panel(view.get("gang"), side_w)
    root = Layout(name="root")
    root.split_column(Layout(header(view), name="header", size=HEADER_H),
                      Layout(name="body"),
                      Layout(footer(view, False), name="footer", size=FOOTER_H))
    root["body"].split_row(Layout(mp, name="machine", size=mw), Layout(name="side"))
    root["side"].split_column(Layout(qp, name="queues", size=qh),
                              Layout(rp, name="running", size=rh),
                              Layout(metrics_panel(view["metrics"], side_w), name="metrics", size=METRICS_H),
                              Layout(gp, name="gang", size=max(gh, 1), visible=bool(gh)),
                              Layout(Text(" "), name="pad", ratio=1))
    return root


__all__ = ["render", "render_once", "machine_panel", "queues_panel", "running_panel", "metrics_panel",
           "gang_panel", "machine_grid", "grid_mode", "queue_lines", "sparkline", "header", "footer"]
