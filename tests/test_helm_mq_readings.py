"""The two readings dissertation chapter 8 leaves open, each a registered parameter, worked by
hand on a 4x4 mesh with first fit (the helpers of tests/test_disciplines_mesh.py):

* HELM's lookahead order (section 8.1, Figure 8.1): one job from each LQ in turn (the
  pseudo-code, ``lq_order=interleave``, default) or each LQ in full, the large jobs' LQ first
  (the prose, ``lq_order=large-first``);
* MQ-SCAN's non-blocking sweep (8.3.2, "the non-blocking aspect"): a blocked head lets the
  other queues' heads start (``nonblocking=true``, default) or waits (``nonblocking=false``,
  Krueger's scan over q queues)."""
from __future__ import annotations

import pytest

from scheduler.disciplines import DisciplineError
from test_disciplines_mesh import Drive, S


def helm_lq_case(order):
    # LQ0 holds 1..4 processors, LQ1 5..16. X (4x4) holds the machine until 10. L (4x3) and
    # s (2x2) arrive at 1 and 2; at 2 the mean EQ length is 0.5, window floor(5 x 0.5) = 2, so
    # both blocked heads are passed: L to LQ1, s to LQ0. At 10 X leaves (AWT 0, UBWT 0): s at
    # (0,0)-(1,1) and L on three full rows cannot both fit; whichever the order tries first
    # starts, the other has waited past UBWT and moves to HQ, where it waits for the first.
    dr = Drive("helm", k2=5, limits=[4], lq_order=order)
    dr.arrive(0, "X", S(4, 4), 10).arrive(1, "L", S(4, 3), 3).arrive(2, "s", S(2, 2), 5)
    dr.run(until=5)
    assert dr.d.snapshot()["LQs"] == [["s"], ["L"]]
    return dr.run()


def test_helm_interleave_takes_one_job_from_each_lq_in_turn_from_the_pointer():
    dr = helm_lq_case("interleave")
    assert (dr.start("s"), dr.start("L")) == (10, 15)


def test_helm_large_first_serves_the_large_jobs_lq_in_full_first():
    dr = helm_lq_case("large-first")
    assert (dr.start("L"), dr.start("s")) == (10, 13)


def test_helm_large_first_waiting_view_and_snapshot():
    dr = Drive("helm", k2=5, limits=[4], lq_order="large-first")
    dr.arrive(0, "X", S(4, 4), 10).arrive(1, "L", S(4, 3), 3).arrive(2, "s", S(2, 2), 5)
    dr.run(until=5)
    assert [j.id for j in dr.d.waiting()] == ["L", "s"] and dr.d.snapshot()["lq_order"] == "large-first"


def test_mq_scan_blocking_reading_waits_for_the_blocked_head():
    # The scenario of test_mq_scan_blocked_queue_keeps_the_turn_but_does_not_block: with the
    # sweep, a (1x1) starts at 2 beside X and B (4x4) waits until 15. Without it, the turn is
    # on Q2 (B, blocked): a and b wait; at 10 X leaves and B starts; the scan moves on to Q0
    # (a) and Q1 (b), which fit only when B leaves at 11.
    dr = Drive("mq-scan", limits=[1, 4], nonblocking=False)
    dr.arrive(0, "X", S(4, 3), 10).arrive(1, "B", S(4, 4), 1).arrive(2, "a", S(1, 1), 10)
    dr.arrive(3, "b", S(2, 2), 5)
    dr.run()
    assert (dr.start("B"), dr.start("a"), dr.start("b")) == (10, 11, 11)
    assert dr.d.snapshot()["nonblocking"] is False


def test_reading_parameters_are_checked():
    with pytest.raises(DisciplineError, match="lq_order"):
        Drive("helm", lq_order="small-first")
    with pytest.raises(DisciplineError, match="nonblocking"):
        Drive("mq-scan", nonblocking="sometimes")
