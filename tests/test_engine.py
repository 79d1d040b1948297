"""The event engine (emulator.sim.engine): the order of same-time events, the one rule for the
policy's timer, the work-model hooks, and that every virtual-time driver runs on it. Each
schedule is worked out by hand in the comments."""
from __future__ import annotations

import gc
import random
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from emulator.sim import engine as engine_mod
from emulator.sim import gang as gang_sim
from emulator.sim import simulator
from emulator.sim.engine import ARRIVE, DEPART, LAST, MODEL, REJECT, TIMER, Engine, FixedRuntime, cycle_gc_paused
from scheduler import allocators
from scheduler.decisions import Start
from scheduler.disciplines.fcfs import FCFS
from scheduler.jobs import Job
from scheduler.timer import next_timer
from scheduler.topology import Request, RequestError

REPO = Path(__file__).resolve().parents[1]
WHOLE = SimpleNamespace(folds=0, size=1)  # an allocation as the fixed-runtime model reads it


def J(i, submit, runtime=10.0):
    return Job(i, submit, Request.cube(0), runtime)


class Script:
    """A policy that starts every job it is given, logs every call, and answers
    ``next_wakeup()`` with ``plan(log)`` (the wake-up it wants after that call)."""

    name = "script"

    def __init__(self, plan=lambda log: None, refuse=()):
        self.log: list = []
        self.plan = plan
        self.refuse = set(refuse)
        self.running: dict = {}

    def arrive(self, job, now):
        if job.id in self.refuse:
            raise RequestError(f"job {job.id} never fits")
        self.log.append(("arrive", job.id, now))
        return [Start(job, WHOLE, now)]

    def depart(self, job_id, now):
        self.log.append(("depart", job_id, now))
        return []

    def tick(self, now):
        self.log.append(("tick", now))
        return []

    def next_wakeup(self):
        return self.plan(self.log)


class Kinds:
    """An observer keeping (time, kind) of every event."""

    def __init__(self):
        self.seen = []

    def observe(self, t, kind, item, decisions):
        self.seen.append((t, kind))
        return False


# --------------------------------------------------------------------------- order


def wake_at_5_after_first_arrival(log):
    """5 from A's arrival until the first tick."""
    return None if ("tick", 5) in log else 5.0


def test_plain_order_departure_then_timer_then_arrival():
    # A arrives at 0 (runs 5) and asks for a wake-up at 5; B arrives at 5. At t=5: A's
    # departure (rank 0), then the timer (rank 1), then B's arrival (rank 2).
    p = Script(wake_at_5_after_first_arrival)
    e = Engine(p, [J("A", 0, 5), J("B", 5, 1)]).run()
    assert p.log == [("arrive", "A", 0), ("depart", "A", 5), ("tick", 5), ("arrive", "B", 5), ("depart", "B", 6)]
    assert e.events == 5 and e.now == 6 and e.in_system == 0


def test_gang_order_puts_the_timer_after_the_arrivals():
    # timer_rank=LAST: at t=5 A's departure, B's arrival, then the tick
    p = Script(wake_at_5_after_first_arrival)
    Engine(p, [J("A", 0, 5), J("B", 5, 1)], timer_rank=LAST).run()
    assert p.log == [("arrive", "A", 0), ("depart", "A", 5), ("arrive", "B", 5), ("tick", 5), ("depart", "B", 6)]


def test_insertion_order_breaks_the_remaining_ties():
    # two arrivals at 0 in stream order; their departures at 3 in start order; a scheduled
    # arrival at 3 comes after both departures
    p = Script()
    e = Engine(p, [J("A", 0, 3), J("B", 0, 3)])
    e.schedule(3.0, ARRIVE, J("C", 3, 1))
    e.run()
    assert p.log == [("arrive", "A", 0), ("arrive", "B", 0), ("depart", "A", 3), ("depart", "B", 3),
                     ("arrive", "C", 3), ("depart", "C", 4)]


# --------------------------------------------------------------------------- the timer rule


def test_a_wakeup_equal_to_now_is_taken_once_per_instant_and_a_past_one_counts_as_now():
    # The policy asks for t=1 from A's arrival at 1 on, for ever.
    # t=1: arrive A; the wake-up 1 equals now and no tick happened at 1 -> tick at 1; after
    #      it the wake-up is still 1 = now, but a tick at 1 already happened -> not taken.
    # t=2: arrive B; the wake-up 1 is in the past -> counts as now (2) -> tick at 2.
    # t=11: A departs -> tick at 11; t=12: B departs -> the wake-up (12) is pending but no job
    #      is in the system and nothing else is left: not taken, the run ends at 12.
    p = Script(lambda log: 1.0)
    e = Engine(p, [J("A", 1, 10), J("B", 2, 10)]).run()
    assert p.log == [("arrive", "A", 1), ("tick", 1), ("arrive", "B", 2), ("tick", 2),
                     ("depart", "A", 11), ("tick", 11), ("depart", "B", 12)]
    assert e.events == 7 and e.timer == 12
    # idle_timer (the gang simulator): the last one is taken too
    p = Script(lambda log: 1.0)
    Engine(p, [J("A", 1, 10), J("B", 2, 10)], idle_timer=True).run()
    assert p.log[-2:] == [("depart", "B", 12), ("tick", 12)]


def test_a_withdrawn_wakeup_is_cancelled():
    # after A's arrival at 0 the policy wants 5; after B's at 1 it withdraws (None): no tick
    def plan(log):
        return 5.0 if log[-1][:2] == ("arrive", "A") else None

    p = Script(plan)
    e = Engine(p, [J("A", 0, 10), J("B", 1, 10)]).run()
    assert [x for x in p.log if x[0] == "tick"] == []
    assert e.events == 4  # two arrivals, two departures: no timer event


def test_a_superseded_wakeup_leaves_nothing_behind():
    # after A (t=0) the policy wants 8, after B (t=1) 3, after the tick at 3 nothing: one
    # tick at 3, none at 8, and the superseded timer is no event
    def plan(log):
        last = log[-1]
        return {("arrive", "A"): 8.0, ("arrive", "B"): 3.0}.get(last[:2])

    p = Script(plan)
    e = Engine(p, [J("A", 0, 10), J("B", 1, 10)]).run()
    assert [x for x in p.log if x[0] == "tick"] == [("tick", 3)]
    assert e.events == 5


def test_timers_false_never_ticks_and_a_plain_discipline_is_not_asked():
    p = Script(lambda log: 0.5)
    Engine(p, [J("A", 0, 1)], timers=False).run()
    assert [x for x in p.log if x[0] == "tick"] == []
    a = allocators.create("naive", "hypercube:1")
    assert Engine(FCFS(a.topology, a)).timers is False  # next_wakeup not overridden: never called


class Advancing(FixedRuntime):
    """The plain work model with an ``advance`` hook: the engine runs it in ``_loop``, not in
    ``_loop_plain``; the events are the same."""

    def advance(self, t):
        return 0


@pytest.mark.parametrize("seed", range(6))
def test_both_loops_apply_the_timer_rule_of_scheduler_timer(seed):
    """After every event each loop's pending timer is ``next_timer`` of the policy's answer
    (None, past, now, soon, the same again: drawn), the timer before (None after a tick) and
    the last tick; both loops take the same events."""
    rng = random.Random(seed)
    jobs = sorted((J(i, float(rng.randrange(0, 40)), float(rng.choice([1, 2, 5]))) for i in range(25)),
                  key=lambda j: j.submit)
    logs = []
    for model in (None, Advancing()):
        pick = random.Random(seed + 100)
        asked: list = []

        def plan(log):
            t = log[-1][-1]  # the time of the event just taken
            w = pick.choice([None, t - 1.0, t, t, t + 0.5, t + 3.0, asked[-1] if asked else None])
            asked.append(w)
            return w

        p = Script(plan)
        e = Engine(p, jobs, model=model)
        assert e.timers
        while True:
            before, n = e.timer, len(p.log)
            if not e.step():
                break
            ticked = p.log[n][0] == "tick"
            assert e.last_tick == (e.now if ticked else e.last_tick)
            assert e.timer == next_timer(asked[-1], e.now, None if ticked else before, e.last_tick), p.log[n]
        assert sum(1 for x in p.log if x[0] == "tick") > 3
        logs.append(p.log)
    assert logs[0] == logs[1]


def test_the_timer_rule_case_by_case():
    assert next_timer(None, 5.0, 7.0, None) is None  # withdrawn
    assert next_timer(3.0, 5.0, None, None) == 5.0  # a past wake-up counts as now
    assert next_timer(5.0, 5.0, None, 4.0) == 5.0  # now, no tick at now yet: taken
    assert next_timer(5.0, 5.0, 9.0, 5.0) == 9.0  # now, a tick at now already: the pending one stays
    assert next_timer(4.0, 5.0, None, 5.0) is None  # past, a tick at now already: nothing new
    assert next_timer(8.0, 5.0, 9.0, 5.0) == 8.0  # later: supersedes
    assert next_timer(9.0, 5.0, 9.0, None) == 9.0


# --------------------------------------------------------------------------- driving


def test_step_and_a_resumable_run():
    p = Script(wake_at_5_after_first_arrival)
    e = Engine(p, [J("A", 0, 5), J("B", 5, 1)])
    assert e.step() and p.log == [("arrive", "A", 0)] and e.timer == 5
    e.run(until=4.9)  # nothing at or before 4.9 is left
    assert e.events == 1 and e.now == 0
    assert e.step() and p.log[-1] == ("depart", "A", 5)
    e.run(until=5)
    assert e.events == 4 and p.log[-2:] == [("tick", 5), ("arrive", "B", 5)]
    e.run()
    assert e.events == 5 and p.log[-1] == ("depart", "B", 6)
    assert not e.step() and e.events == 5


def test_observers_see_every_event_and_can_stop_the_run():
    k = Kinds()
    Engine(Script(wake_at_5_after_first_arrival), [J("A", 0, 5), J("B", 5, 1)], observers=[k]).run()
    assert k.seen == [(0, ARRIVE), (5, DEPART), (5, TIMER), (5, ARRIVE), (6, DEPART)]

    class StopAtFirstDeparture(Kinds):
        def observe(self, t, kind, item, decisions):
            super().observe(t, kind, item, decisions)
            return kind == DEPART

    s = StopAtFirstDeparture()
    e = Engine(Script(), [J("A", 0, 5), J("B", 1, 1)], observers=[s, Kinds()]).run()
    assert s.seen[-1] == (2, DEPART) and e.events == 3


def test_a_refused_arrival_propagates_or_goes_to_on_reject():
    with pytest.raises(RequestError, match="B never fits"):
        Engine(Script(refuse={"B"}), [J("A", 0), J("B", 1)]).run()
    refused, k = [], Kinds()
    e = Engine(Script(refuse={"B"}), [J("A", 0), J("B", 1)], observers=[k],
               on_reject=lambda job, err, t: refused.append((job.id, t)))
    e.run()
    assert refused == [("B", 1)] and (1, REJECT) in k.seen and e.in_system == 0


class Ticker:
    """A work model with a timer of its own: a job leaves 2 units after it starts, through
    ``advance``; the model's timer asks the clock to stop there."""

    def __init__(self, policy):
        self.policy, self.ends, self.calls = policy, {}, []

    def bind(self, engine):
        self.engine = engine

    def apply(self, decisions, t):
        for s in decisions:
            self.ends[s.job.id] = t + 2

    def advance(self, t):
        self.calls.append(t)
        gone = [j for j, end in self.ends.items() if end <= t]
        for j in gone:
            del self.ends[j]
            self.policy.depart(j, t)
        return len(gone)

    def next_event(self, t):
        return min(self.ends.values(), default=None)


def test_a_work_model_timer_comes_first_at_equal_times():
    # A starts at 0 and ends at 2 (the model's timer); B arrives at 2: A leaves first.
    # advance() runs once per new time, before the first event at that time.
    p = Script()
    m = Ticker(p)
    k = Kinds()
    e = Engine(p, [J("A", 0), J("B", 2)], model=m, observers=[k]).run()
    assert p.log == [("arrive", "A", 0), ("depart", "A", 2), ("arrive", "B", 2), ("depart", "B", 4)]
    assert k.seen == [(0, ARRIVE), (2, MODEL), (2, ARRIVE), (4, MODEL)]
    assert m.calls == [2, 4] and e.in_system == 0


# --------------------------------------------------------------------------- every driver


def test_both_simulators_run_on_the_engine(monkeypatch):
    used = []

    class Counting(Engine):
        def run(self, until=None):
            used.append(type(self.policy).__name__)
            return super().run(until)

    monkeypatch.setattr(simulator, "Engine", Counting)
    monkeypatch.setattr(gang_sim, "Engine", Counting)
    simulator.simulate("hypercube:2", "buddy", "fcfs", [J(1, 0, 1.0)])
    gang_sim.run_gang("round-robin", "hypercube:2", [J(1, 0, 1.0)])
    assert len(used) == 2


def test_both_test_drivers_run_on_the_engine():
    for name in ("test_disciplines_hypercube.py", "test_disciplines_mesh.py"):
        text = (REPO / "tests" / name).read_text()
        assert "from emulator.sim.engine import" in text and "Engine(" in text, name


def test_the_engine_holds_the_only_heap_loop():
    """No other event loop: heapq appears only in the engine (emulator/ and tests/)."""
    hits = []
    for root in ("emulator", "tests", "scripts"):
        for path in (REPO / root).rglob("*.py"):
            if path.name == "test_engine.py":
                continue
            if re.search(r"^\s*(import heapq|from heapq import)", path.read_text(), re.M):
                hits.append(str(path.relative_to(REPO)))
    # the live kernel's timers (call_at, every) and the interconnect's deliveries, which the
    # wormhole model has already decided, in wall-clock order, and its ranks' clocks in virtual
    # time (vtime: each rank's certain deliveries, the bounds by size): the queues of real-time
    # drivers, not event loops of their own (they make no policy decision). The trace replay
    # (emulator/sim/replay.py) runs one job's ranks over the network driver, which the engine
    # (jobs and a policy) does not model: its ready queue is the one other loop, and the place
    # to merge if the engine ever runs processes
    assert "emulator/sim/engine.py" in hits
    assert set(hits) <= {"emulator/live/interconnect.py", "emulator/live/kernel.py", "emulator/sim/engine.py",
                         "emulator/live/vtime.py", "emulator/sim/replay.py"}
    assert engine_mod.heappush and engine_mod.heappop


def test_progress_is_reported_every_16384_events():
    seen = []
    jobs = [J(i, float(i), 0.5) for i in range(10000)]  # 20000 events
    e = Engine(Script(), jobs, progress=seen.append).run()
    assert e.events == 20000 and seen == [8191.5]  # the 16384th event: job 8191 leaves at 8191.5


def test_cycle_gc_paused_restores_the_collector():
    was = gc.isenabled()
    try:
        gc.enable()
        with cycle_gc_paused():
            assert not gc.isenabled()
        assert gc.isenabled()
        with pytest.raises(ZeroDivisionError):
            with cycle_gc_paused():
                1 / 0
        assert gc.isenabled()
        gc.disable()  # a caller that turned it off keeps it off
        with cycle_gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()


def test_cycle_gc_paused_moves_what_it_made_to_the_oldest_generation():
    """What was made during the pause is not left for one young collection over all of it at
    the next allocation: it is in the oldest generation and the young count starts afresh.
    Objects someone else froze stay frozen."""
    class Node:
        pass

    was = gc.isenabled()
    try:
        gc.enable()
        with cycle_gc_paused():
            made = [Node() for _ in range(5000)]
            assert gc.get_count()[0] > 5000  # counted, not collected
        assert gc.get_count()[0] < 100
        young = {id(o) for o in gc.get_objects(generation=0)} | {id(o) for o in gc.get_objects(generation=1)}
        assert not any(id(o) in young for o in made)
        assert any(o is made[0] for o in gc.get_objects(generation=2))

        gc.freeze()  # a launcher about to fork keeps its objects frozen
        frozen = gc.get_freeze_count()
        try:
            with cycle_gc_paused():
                more = [Node() for _ in range(100)]
            assert gc.get_freeze_count() == frozen
            assert more
        finally:
            gc.unfreeze()
    finally:
        (gc.enable if was else gc.disable)()
