"""Lazy scheduling as the journal paper wrote it (section 3.2, Lazy_Release step 1), measured
where the paper makes its claims (section 5, Figure 3(a) and Table I case A): on a 10-cube with
uniform sizes and uniform residence over T = 10,000, lazy's mean queueing delay is clearly
above scan's at light load -- jobs are "delayed even though the system has enough idle
processors" -- and below it at heavy load, on the same job streams."""
from __future__ import annotations

import pytest

from emulator.experiments._points import sim_point
from emulator.experiments.lazy.common import base
from emulator.experiments.stats import rep_seed

SEEDS = [rep_seed("lazy-fig3", r) for r in range(2)]


def _m(scheduler, load, seed, **dparams):
    p = base(False, scheduler=scheduler, size="uniform", service="uniform", load=load, dparams=dparams)
    return sim_point(p, seed)["mean_queueing_delay"]


@pytest.mark.parametrize("seed", SEEDS)
def test_default_lazy_is_slower_than_scan_at_light_load_and_faster_at_heavy_load(seed):
    light_lazy, light_scan = _m("lazy", 0.1, seed), _m("scan-up", 0.1, seed)
    assert light_lazy > 3 * light_scan, (light_lazy, light_scan)
    heavy_lazy, heavy_scan = _m("lazy", 0.9, seed), _m("scan-up", 0.9, seed)
    assert heavy_lazy < 0.7 * heavy_scan, (heavy_lazy, heavy_scan)


def test_event_check_variant_behaves_like_scan_at_light_load():
    """The every-event/timer reading (``threshold_check=event``) ends each lazy wait within
    d_t^2 lambda, which is tiny at light load: lazy and scan then differ by a few percent,
    which is what the issue measured and why it is not the default."""
    seed = SEEDS[0]
    ev, scan = _m("lazy", 0.1, seed, threshold_check="event"), _m("scan-up", 0.1, seed)
    assert abs(ev / scan - 1) < 0.1, (ev, scan)
