"""What every region of the monitor's picture shares: the job colours, the styles of idle, down
and suspended nodes, and the number formats."""
from __future__ import annotations

import io

from rich.console import Console

PALETTE = ["dodger_blue2", "green3", "dark_orange", "medium_purple", "gold3", "deep_pink3", "cyan3",
           "chartreuse3", "salmon1", "steel_blue1", "orchid", "khaki3", "spring_green3",
           "light_slate_blue", "indian_red", "turquoise2"]
IDLE_STYLE = "grey50"
DOWN_STYLE = "bold white on red3"
SUSP_BG = "grey30"
SPARK = "▁▂▃▄▅▆▇█"


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


_Measure = Console(width=400, file=io.StringIO())  # only to count wrapped lines
