"""scheduler.network.stats: the one record of message statistics, as the live interconnect
reports it while a job runs."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.network.stats import MessageStats, percentile


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.lists(st.floats(0, 1e6), max_size=40), st.none()), max_size=12))
def test_the_p95_kept_sorted_between_reports_is_the_p95_of_every_delay(steps):
    """MessageStats.p95 keeps its sorted copy between reports (a running job's, every second):
    after any adds, and after a writer that starts ``delays`` afresh (None here, as
    emulator.sim.comm_work does), it is the nearest-rank p95 of the delays as they are."""
    m, added = MessageStats(), []
    for step in steps:
        if step is None:
            m.delays, added = [], []
        else:
            for d in step:
                m.add(d, 0.0, 0.0)
            added += step
        want, got = percentile(sorted(m.delays), 95), m.p95()
        assert got == want or (want != want and got != got)  # NaN when there is none
    assert m.delays == added  # in the order added: the mean's sum is taken in it
