"""The channel view (key ``c``, a cluster with ``--network wormhole``): the machine's node grid
with the channels between neighbouring cells, each coloured by its utilization over the
interconnect's last window (``mcemu net links``). A link stands for both directed channels
between two nodes and shows the busier one. On a mesh every grid neighbour is a mesh
neighbour; on a hypercube the grid is the Gray-code layout, whose grid neighbours are cube
neighbours too (the other cube channels are not drawn)."""
from __future__ import annotations

from rich import box
from rich.panel import Panel
from rich.text import Text

from emulator.monitor.view.style import DOWN_STYLE, IDLE_STYLE, job_colour

# (upper bound of the utilization, colour): the link's colour
SCALE = ((0.05, "grey35"), (0.25, "green3"), (0.5, "yellow3"), (0.75, "dark_orange"), (2.0, "red3"))


def util_colour(u: float | None) -> str:
    if u is None:
        return "grey23"
    return next(c for bound, c in SCALE if u < bound)


def link_utilization(links: dict | None) -> dict:
    """{frozenset((u, v)): the busier direction's utilization} from the interconnect's doc."""
    out: dict = {}
    for ch in (links or {}).get("channels", ()):
        k = frozenset((ch["from"], ch["to"]))
        out[k] = max(out.get(k, 0.0), ch["utilization"])
    return out


def _node(state: str, jid) -> Text:
    if state == "down":
        return Text("X", style=DOWN_STYLE)
    if jid is None:
        return Text("·", style=IDLE_STYLE)
    return Text("■", style=job_colour(jid))


def channel_grid(machine: dict, links: dict | None) -> Text:
    grid, nodes = machine["grid"], machine["nodes"]
    util = link_utilization(links)
    out = Text(no_wrap=True, overflow="crop")
    for r, row in enumerate(grid):
        if r:
            out.append("\n")
            for c, n in enumerate(row):  # the vertical links to the row above
                u = util.get(frozenset((grid[r - 1][c], n)))
                out.append("│" if u is not None else " ", style=util_colour(u))
                if c + 1 < len(row):
                    out.append("   ")
            out.append("\n")
        for c, n in enumerate(row):
            out.append_text(_node(*nodes[n]))
            if c + 1 < len(row):
                u = util.get(frozenset((n, row[c + 1])))
                out.append("───" if u is not None else "   ", style=util_colour(u))
    return out


def channel_legend(links: dict | None) -> Text:
    t = Text()
    if not links:
        return t.append("no interconnect (mcemu up --network wormhole)", style="dim italic")
    lo = 0.0
    for bound, colour in SCALE:
        t.append("──", style=colour)
        t.append(f" {lo:.0%}+ " if bound < 2 else f" {lo:.0%}+", style="dim")
        lo = bound
    w = links.get("window_us") or [0, 0]
    return t.append(f"\nover network time {w[0]:.0f}-{w[1]:.0f} us; c: nodes", style="dim italic")


def channel_panel(machine: dict, links: dict | None) -> tuple[Panel, int, int]:
    """The channel view of the machine region and the (width, height) it needs."""
    W, H = machine["width"], machine["height"]
    grid = channel_grid(machine, links)
    legend = channel_legend(links)
    lines = legend.plain.splitlines()
    width = max(4 * W - 3, *(len(x) for x in lines), 30) + 2
    height = 2 * H - 1 + len(lines) + 2
    body = Text("\n").join([grid, legend])
    busy = max(link_utilization(links).values(), default=0.0)
    return (Panel(body, title=f"channels: busiest {busy:.0%}", title_align="left", box=box.ROUNDED,
                  padding=(0, 0)), width, height)


__all__ = ["channel_grid", "channel_panel", "link_utilization", "util_colour"]
