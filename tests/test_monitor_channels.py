"""The monitor's channel view (key c): links between grid neighbours coloured by the
interconnect's utilization (emulator.monitor.view.channels)."""
from __future__ import annotations

import io

from rich.console import Console

from emulator.monitor.feed import with_delays
from emulator.monitor.view.channels import channel_grid, channel_panel, link_utilization, util_colour
from emulator.monitor.view.panels import running_panel

from test_monitor import make_state, screen


def _machine():
    # a 3x2 mesh: job 4 on nodes 0 and 1, node 5 down
    return {"width": 3, "height": 2, "grid": [[0, 1, 2], [3, 4, 5]],
            "nodes": {0: ("busy", 4), 1: ("busy", 4), 2: ("idle", None), 3: ("idle", None), 4: ("idle", None),
                      5: ("down", None)}}


LINKS = {"window_us": [100.0, 200.0], "channels": [
    {"channel": "(0,0)+x", "from": 0, "to": 1, "utilization": 0.9},
    {"channel": "(1,0)-x", "from": 1, "to": 0, "utilization": 0.1},
    {"channel": "(1,0)+y", "from": 1, "to": 4, "utilization": 0.02}]}


def test_links_show_the_busier_direction_in_its_colour():
    u = link_utilization(LINKS)
    assert u == {frozenset((0, 1)): 0.9, frozenset((1, 4)): 0.02}
    assert util_colour(0.9) == "red3" and util_colour(0.02) == "grey35" and util_colour(None) == "grey23"
    g = channel_grid(_machine(), LINKS)
    assert g.plain.splitlines() == ["■───■   ·", "    │    ", "·   ·   X"]
    red = [s for s in g.spans if str(s.style) == "red3"]
    assert len(red) == 1 and g.plain[red[0].start:red[0].end] == "───"


def test_panel_renders_with_and_without_an_interconnect():
    for links, words in ((LINKS, "busiest 90%"), (None, "no interconnect")):
        panel, w, h = channel_panel(_machine(), links)
        con = Console(width=w, file=io.StringIO(), record=True)
        con.print(panel)
        text = con.export_text()
        assert words in text and len(text.splitlines()) == h


def test_the_screen_swaps_the_node_grid_for_the_channels_where_they_fit():
    s = make_state("mesh:8x8", {1: [0, 1, 8, 9]})
    view = s.view(s.now)
    view["channels"] = {"links": {"window_us": [0.0, 50.0], "channels": [
        {"channel": "(0,0)+x", "from": 0, "to": 1, "utilization": 0.6}]}}
    lines = screen(view, 120, 40)
    assert any("channels: busiest 60%" in x for x in lines) and not any("machine:" in x for x in lines)
    assert any("c channels" in x for x in lines)
    lines = screen(view, 70, 40)  # no room beside the side regions: the node grid stays
    assert any("machine:" in x for x in lines)


def test_the_running_table_shows_each_communicating_jobs_mean_delay():
    view = {"running": [{"id": 4, "state": "running", "request": "2x1", "allocation": "(0,0) 2x1", "nodes": 2,
                         "elapsed": 1.0, "remaining": 2.0},
                        {"id": 7, "state": "running", "request": "1x1", "allocation": "(2,0) 1x1", "nodes": 1,
                         "elapsed": 0.5, "remaining": 1.0}]}
    with_delays(view, {"jobs": {"4": {"mean_delay_us": 31.6}, "7": {"mean_delay_us": None}}})
    assert view["running"][0]["delay_us"] == 31.6 and "delay_us" not in view["running"][1]
    out = io.StringIO()
    Console(file=out, width=100, color_system=None).print(running_panel(view["running"], 100, 10, 1.0)[0])
    text = out.getvalue()
    assert "DELAY" in text and "32 us" in text
    with_delays(no_net := {"running": [dict(view["running"][1])]}, None)  # no interconnect: no column
    out = io.StringIO()
    Console(file=out, width=100, color_system=None).print(running_panel(no_net["running"], 100, 10, 1.0)[0])
    assert "DELAY" not in out.getvalue()
