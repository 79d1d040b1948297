"""The machine region: the node grid (each node coloured by its job), column and row labels and
the legend. The grid picks the widest node cell that fits: 6, 4, 3, 2 or 1 characters per node,
and when even one text row per machine row is too tall, one character per two nodes (the top
node as the upper half block's colour, the bottom node as its background)."""
from __future__ import annotations

from rich import box
from rich.console import Group
from rich.panel import Panel
from rich.text import Text

from emulator.monitor.view.style import DOWN_STYLE, IDLE_STYLE, SUSP_BG, _Measure, job_colour

MACHINE_MIN_W = 34     # the machine panel's least inner width (its legend)


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
