"""The whole screen: header, footer and the layout that places the machine beside the side
regions (queues, running, metrics, gang), for a terminal (``render``) or at the picture's
natural height (``render_once``)."""
from __future__ import annotations

from rich.layout import Layout
from rich.text import Text

from emulator.monitor.view.channels import channel_panel
from emulator.monitor.view.machine import machine_panel
from emulator.monitor.view.panels import gang_panel, metrics_panel, running_panel
from emulator.monitor.view.queues import queues_panel
from emulator.monitor.view.style import _fmt

SIDE_MIN = 40          # columns the side regions need at least
HEADER_H = FOOTER_H = 1
METRICS_H = 7


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
        t.append("c", style="bold")
        t.append(" channels  ")
    t.append("u = model time unit; ELAPSED/LEFT of the job's (folded) run time")
    return t


def _side_width(width: int, machine_w: int) -> int:
    return width - machine_w


def render(view: dict, width: int, height: int, live: bool = True) -> Layout:
    """The whole screen for a terminal of ``width`` x ``height``."""
    body_h = max(8, height - HEADER_H - FOOTER_H)
    machine = view["machine"]
    mp, mw, mh = machine_panel(machine, max(20, width - SIDE_MIN), body_h)
    if view.get("channels") is not None:  # the channel view (key c), where it fits
        cp, cw, ch = channel_panel(machine, view["channels"].get("links"))
        if cw <= width - SIDE_MIN and ch <= body_h:
            mp, mw, mh = cp, cw, ch
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
