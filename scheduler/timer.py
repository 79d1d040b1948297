"""The policy-timer rule, the one definition for every driver (DESIGN "One policy core, two
clocks"): the simulator's engine (emulator.sim.engine) and the live daemon keep one pending
timer for a policy and, after every event, ask the policy's ``next_wakeup()`` afresh.

    timer_at = next_timer(policy.next_wakeup(), now, timer_at, last_tick)

* ``None`` withdraws the timer (the policy has nothing to wake for);
* a wake-up before now counts as now (a timer is never in the past);
* a wake-up at or before now is not taken when a tick at this same instant already happened:
  a policy whose timer does not advance past the tick is not ticked again at that instant
  (no busy loop), and the pending timer stays as it was -- the simulator before the engine
  did the same, and the seeded numbers depend on it;
* otherwise the wake-up replaces the pending timer; a superseded timer leaves nothing behind.

The caller fires the timer when its clock reaches ``timer_at`` and then sets ``last_tick`` to
that time. Pure: time is an argument, nothing here reads a clock.
"""
from __future__ import annotations


def next_timer(wakeup: float | None, now: float, timer_at: float | None,
               last_tick: float | None) -> float | None:
    """The pending timer after an event at ``now``, given the policy's ``wakeup``, the timer
    pending before (``timer_at``) and the time of the last tick (``last_tick``, None: none yet)."""
    if wakeup is None:
        return None
    if wakeup == timer_at or (wakeup <= now and last_tick == now):
        return timer_at
    return wakeup if wakeup > now else now


__all__ = ["next_timer"]
