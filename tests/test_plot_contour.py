"""The figure's contour panel kind (Figs 6.8/6.9 as the dissertation drew them): a metric over
two parameters, gray bands between labelled levels for the paper's panels, a dashed blue scale
for ours, a panel with no points hidden (a study the quick form does not run)."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.contour import ContourSet  # noqa: E402

from emulator.experiments.experiment import Experiment, Panel, PointResult, ReproduceError, Results  # noqa: E402
from emulator.experiments.plot import _contour, plot  # noqa: E402

VALS = [0, 100, 250, 500]


def _results(panels) -> Results:
    exp = Experiment("t", "paper", "fig", "title", "claim", lambda p, s: {}, lambda q: [], ("d",), panels,
                     lambda r: None)
    pts = [PointResult({"study": "main", "a": a, "b": b}, 3, a == b == 0, {"d": (100.0 + a - 0.5 * b, 1.0)})
           for a in VALS for b in VALS]
    return Results(exp, pts, quick=False)


def _panel(**kw) -> Panel:
    return Panel("Fig X: inside job", "d", x="a", series="b", kind="contour", where={"study": "main"},
                 xlabel="MTBS inside", ylabel="MTBS outside", **kw)


def _sets(ax):
    """The filled contour set and the level lines of an axes."""
    sets = [c for c in ax.collections if isinstance(c, ContourSet)]
    return next(c for c in sets if c.filled), next(c for c in sets if not c.filled)


def test_a_paper_panel_is_gray_bands_with_labelled_levels_over_both_parameters():
    res = _results([_panel()])
    fig, ax = plt.subplots()
    _contour(fig, ax, res, res.experiment.panels[0])
    filled, lines = _sets(ax)
    assert filled.get_cmap().name == "Greys" and lines.get_linestyle()[0][1] is None  # solid
    levels = lines.levels
    assert levels[0] <= 100 + 0 - 0.5 * 500 and levels[-1] >= 100 + 500  # the whole range of the metric
    assert ax.texts, "the level lines are labelled"
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("MTBS inside", "MTBS outside")
    assert ax.get_xlim() == (0, 500) and ax.get_ylim() == (0, 500)
    plt.close(fig)


def test_our_panel_is_drawn_apart_and_an_empty_one_is_hidden(tmp_path):
    ours = _panel(linestyle=lambda _: "--")
    none = Panel("other", "d", x="a", series="b", kind="contour", where={"study": "orientation"})
    res = _results([_panel(), ours, none])
    fig, ax = plt.subplots()
    _contour(fig, ax, res, ours)
    filled, lines = _sets(ax)
    assert filled.get_cmap().name == "Blues" and lines.get_linestyle()[0][1] is not None  # dashed
    fig2, ax2 = plt.subplots()
    _contour(fig2, ax2, res, none)
    assert not ax2.get_visible()
    plt.close(fig)
    plt.close(fig2)
    plot(res.experiment, res, tmp_path / "f.png")
    assert (tmp_path / "f.png").stat().st_size > 0


@pytest.mark.parametrize("series", ["study", "missing"])
def test_a_contour_over_a_parameter_that_is_not_a_numeric_axis_is_refused_clearly(series):
    bad = Panel("bad", "d", x="a", series=series, kind="contour")
    res = _results([bad])
    fig, ax = plt.subplots()
    with pytest.raises(ReproduceError, match="contour panel 'bad'.*two numeric values"):
        _contour(fig, ax, res, bad)
    plt.close(fig)
