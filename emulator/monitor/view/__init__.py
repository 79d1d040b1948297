"""The monitor's picture: pure functions from the view dict (``MonitorState.view()``) to Rich
renderables. Nothing here keeps or computes state; the only decisions are presentation
(how many characters a node gets, which lines fit).

``render(view, width, height)`` fills a :class:`rich.layout.Layout` with the named regions
``header``, ``machine``, ``queues``, ``running``, ``metrics``, ``gang`` and ``footer``.
``render_once(view, width)`` returns the same picture and the height it needs (for
``--once``: the whole picture, not cut to a terminal).

One module per region: ``machine`` (the node grid; its docstring says how many characters a
node gets), ``queues``, ``panels`` (running jobs, metrics, gang), ``layout`` (header, footer and
the whole screen); ``style`` holds the colours and number formats they share. Every name stays
importable from here.
"""
from __future__ import annotations

from emulator.monitor.view.layout import (  # noqa: F401
    FOOTER_H, HEADER_H, METRICS_H, SIDE_MIN, footer, header, render, render_fixed, render_once,
)
from emulator.monitor.view.machine import (  # noqa: F401
    MACHINE_MIN_W, grid_mode, machine_grid, machine_legend, machine_panel,
)
from emulator.monitor.view.panels import (  # noqa: F401
    gang_lines, gang_panel, metrics_panel, running_panel, sparkline,
)
from emulator.monitor.view.queues import queue_lines, queues_panel  # noqa: F401
from emulator.monitor.view.style import (  # noqa: F401
    DOWN_STYLE, IDLE_STYLE, PALETTE, SPARK, SUSP_BG, job_colour,
)

__all__ = ["render", "render_once", "machine_panel", "queues_panel", "running_panel", "metrics_panel",
           "gang_panel", "machine_grid", "grid_mode", "queue_lines", "sparkline", "header", "footer"]
