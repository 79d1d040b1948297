"""Dissertation chapter 6, job level (§6.2), what its three experiments share: Figures
6.8/6.9 (Scenario A, rule R2, :mod:`.ch6_rates`), 6.11 (Scenario B, R3, :mod:`.ch6_levels`)
and 6.13 (where to cut, R4, :mod:`.ch6_cut`), on the two-job layouts of :mod:`.ch6_layouts`
(its docstring gives the reconstruction and every reading). Each experiment runs its main
reading and, in the full form, the other orientation of the split job as a sensitivity study
(``study`` = "main" | "orientation" | "removal"); panels and checks use the main study, the
tables report the others.
"""
from __future__ import annotations

from emulator.experiments.network.ch6_layouts import MIDDLE_CUT, ORDERED, SWAPPED

OTHER = {ORDERED: SWAPPED, SWAPPED: ORDERED}


def _base(quick, **kw):
    p = {"study": "main", "inside": "transpose", "outside": "transpose", "cut": MIDDLE_CUT, "remove": None,
         "pieces": ORDERED, "messages": 100 if quick else 1000}
    p.update(kw)
    return p


def _wormhole_text(quick):
    return ("XY wormhole, L = 500 flits, T_t = 0.05 us, 1-flit buffers, FCFS, exponential think "
            f"time of mean MTBS, one message per path at a time; {'100' if quick else '1,000'} "
            "measured messages per path after a tenth as warm-up. A job's delay is the mean over "
            "its paths (§6.2).")


LAYOUT_NOTE = (
    "Layout (our reconstruction, `emulator/experiments/network/ch6_layouts.py`; NETWORK.md 6.2): "
    "an 8x4 mesh, the inside 4x4 job contiguous, the outside 4x4 job cut along a vertical line "
    "into two pieces on both sides of it, rows shared. Its crossing paths (X first) run through "
    "the inside job's row channels: 3 in row 0 and 1 in rows 1-3 for the cut after logical "
    "column 0, 2 per row for the middle cut, the congestion counts §6.2.4 states. Which piece "
    "goes left (NETWORK.md 8.23) decides whether the crossing paths run the same way as the "
    "inside job's paths, i.e. whether the jobs meet at all; we orient each scenario so that they "
    "do, as the text's explanations require (the layout module gives the counts), and show the "
    "other orientation in the tables.")
