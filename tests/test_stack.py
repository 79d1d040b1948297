"""The one stack builder and the one decision vocabulary (scheduler.stack, scheduler.decisions):
every --param form, every registered policy behind the one interface, and down nodes kept out
of discipline and gang placements alike (pure: no processes)."""
from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given, settings, strategies as st

from scheduler import disciplines, gang
from scheduler.decisions import START_SETTERS, Finish, Policy, SlotSwitch, Start, new_start
from scheduler.jobs import Job
from scheduler.quarantine import Quarantine
from scheduler.registry import UnknownPolicy
from scheduler.stack import StackConfig, StackError, build, parse_params, parse_value
from scheduler.topology import Request

# ------------------------------------------------------------------ --param


@pytest.mark.parametrize("text, value", [
    ("true", True), ("TRUE", True), ("yes", True), ("on", True),
    ("false", False), ("no", False), ("off", False), ("Off", False),
    ("none", None), ("null", None),
    ("20", 20), ("-3", -3), ("0.5", 0.5), ("1e3", 1000.0),
    ("inf", math.inf), ("Infinity", math.inf), ("-inf", -math.inf),
    ("[[1,1],[3,8]]", [[1, 1], [3, 8]]), ("[[1, 1], [3, inf]]", [[1, 1], [3, math.inf]]),
    ('{"a": 1}', {"a": 1}), ("dynamic", "dynamic"), (" 7 ", 7),
])
def test_param_values(text, value):
    assert parse_value(text) == value
    assert type(parse_value(text)) is type(value)


def test_param_keys_and_errors():
    assert parse_params(["insert-arrivals=off", "threshold=20"]) == {"insert_arrivals": False, "threshold": 20}
    assert parse_params(None) == {} and parse_params([]) == {}
    for bad in ("threshold", "=3", "1x=2", "a b=1", "levels=[[1,1]"):
        with pytest.raises(StackError):
            parse_params([bad])


# ------------------------------------------------------------------ build


def test_discipline_stack_is_allocator_quarantine_reduction_discipline():
    s = build(StackConfig("hypercube:5", "buddy", "fcfs", reduction="rsr:2"))
    assert not s.gang and s.policy.name == "fcfs"
    q = s.policy.allocator.inner  # the reduction wrapper around the quarantine
    assert isinstance(q, Quarantine) and q.down is s.down
    assert type(q.inner).registry_name == "buddy"


def test_defaults_live_in_the_stack():
    assert build(StackConfig("hypercube:3")).policy.name == "fcfs"
    assert build(StackConfig("hypercube:3", driver="live")).policy.name == "lazy"
    c = StackConfig.from_options(topology="hypercube:3", gang="none", reduction="none", params=["threshold=4"],
                                 scheduler="lazy")
    assert c.gang is None and c.reduction is None and c.params == {"threshold": 4}
    assert build(c).policy.threshold_param == 4


def test_parameters_reach_the_policy():
    lazy = build(StackConfig("hypercube:4", "buddy", "lazy", params=parse_params(["threshold=20", "literal=on"])))
    assert lazy.policy.threshold_param == 20 and lazy.policy.literal is True
    ml = build(StackConfig.from_options(topology="hypercube:3", gang="multilevel",
                                        params=["mpl=3", "insert_arrivals=off"]))
    assert ml.gang and ml.policy.mpl == 3 and ml.policy.insert_arrivals is False


@pytest.mark.parametrize("config, match", [
    (StackConfig("hypercube:4", "buddy", "lazy", params={"nosuch": 1}), "nosuch"),
    (StackConfig("hypercube:4", "buddy", "lazy", params={"literal": "off"}), "true or false"),
    (StackConfig("hypercube:4", "buddy", gang="multilevel", params={"insert_arrivals": "off"}), "true or false"),
    (StackConfig("hypercube:4", "buddy", gang="round-robin", reduction="rsr:1"), "--reduction"),
    (StackConfig("hypercube:4", "buddy", "lazy", gang="round-robin"), "--scheduler"),
    (StackConfig("hypercube:4", "buddy", "fcfs", down=(16,)), "node"),
])
def test_bad_configurations_are_clear_errors(config, match):
    with pytest.raises(ValueError, match=match):
        build(config)


@pytest.mark.parametrize("config", [StackConfig("hypercube:4", "nosuch", "fcfs"),
                                    StackConfig("hypercube:4", "buddy", "nosuch"),
                                    StackConfig("hypercube:4", "nosuch", gang="multilevel"),
                                    StackConfig("hypercube:4", "buddy", gang="nosuch")])
def test_unknown_names_list_the_known_ones(config):
    with pytest.raises(UnknownPolicy, match="known: "):
        build(config)


# ------------------------------------------------------------------ one interface


def _every_policy():
    for name in disciplines.names():
        topo = "hypercube:4" if "hypercube" in disciplines.REGISTRY.get(name).kinds else "mesh:4x4"
        yield StackConfig(topo, "buddy" if topo.startswith("hyper") else "first-fit", name)
    for name in gang.names():
        yield StackConfig("hypercube:4", "buddy", gang=name)


@pytest.mark.parametrize("config", list(_every_policy()), ids=lambda c: c.gang or c.scheduler)
def test_every_policy_implements_the_one_interface(config):
    p = build(config).policy
    assert isinstance(p, Policy)
    out = p.arrive(Job(1, 0.0, Request.processors(4), 2.0), 0.0) + p.retry(0.0)
    while (w := p.next_wakeup()) is not None and w <= 0.0:
        out += p.tick(0.0)
    assert all(isinstance(d, (Start, Finish, SlotSwitch)) for d in out)
    (s,) = [d for d in out if isinstance(d, Start)]
    assert s.job.id == 1 and len(s.nodes) == 4 and s.runtime == 2.0 and s.wait == 0.0
    out = p.depart(1, 2.0)
    assert all(isinstance(d, (Start, Finish, SlotSwitch)) for d in out)
    assert p.waiting() == [] and isinstance(p.snapshot(), dict)


# ------------------------------------------------------------------ down nodes


def test_a_discipline_never_allocates_a_down_node():
    s = build(StackConfig("hypercube:3", "buddy", "fcfs"))
    for n in (1, 5):
        s.mark_down(n)
    p = s.policy
    starts = []
    for i in range(1, 5):
        starts += p.arrive(Job(i, 0.0, Request.cube(1), 10.0), 0.0)
    used = set().union(*(x.allocation.nodes for x in starts))
    assert len(starts) == 2 and not used & {1, 5}  # (0,1) and (4,5) are out: two 1-cubes left
    assert [x.job.id for x in s.mark_up(5, 1.0)] == [3]


def test_a_gang_policy_never_places_a_task_on_a_down_node():
    s = build(StackConfig("hypercube:3", "buddy", gang="multilevel"))
    s.mark_down(0)
    s.mark_down(5)
    p = s.policy
    out = []
    for i in range(1, 4):
        out += p.arrive(Job(i, 0.0, Request.cube(1), 10.0), 0.0)
    for i in range(4, 10):  # sequential jobs: one node each, on a local queue
        out += p.arrive(Job(i, 0.0, Request.cube(0), 10.0), 0.0)
    placed = [d for d in out if isinstance(d, Start)]
    assert len(placed) == 9
    for d in placed:
        assert not set(d.nodes) & {0, 5}, d


def test_sequential_gang_jobs_wait_while_every_node_is_down_and_start_when_one_is_back():
    s = build(StackConfig("hypercube:1", "buddy", gang="round-robin"))
    s.mark_down(0)
    s.mark_down(1)
    p = s.policy
    assert p.arrive(Job(1, 0.0, Request.cube(0), 5.0), 0.0) == []
    assert p.arrive(Job(2, 0.0, Request.cube(0), 5.0), 0.0) == []
    assert [j.id for j in p.waiting()] == [1, 2]
    (f,) = p.cancel(2, 0.5)
    assert isinstance(f, Finish) and f.job_id == 2
    (st_,) = s.mark_up(1, 1.0)
    assert st_.job.id == 1 and st_.node == 1 and st_.sequential and st_.time == 1.0
    assert p.waiting() == []


@settings(max_examples=60, deadline=None)
@given(down=st.frozensets(st.integers(0, 15), max_size=10),
       jobs=st.lists(st.integers(0, 3), min_size=1, max_size=12),
       name=st.sampled_from(["round-robin", "multilevel", "fb", "none"]))
def test_no_gang_placement_ever_uses_a_down_node(down, jobs, name):
    s = build(StackConfig("hypercube:4", "buddy", gang=name, down=tuple(down)))
    for i, k in enumerate(jobs):
        for d in s.policy.arrive(Job(i, 0.0, Request.cube(k), 1.0), 0.0):
            if isinstance(d, Start):
                assert down.isdisjoint(d.nodes)


def test_every_gang_row_shares_the_stack_down_set():
    s = build(StackConfig("hypercube:2", "buddy", gang="round-robin", params={"mpl": 3}))
    p = s.policy
    for i in range(3):  # three whole-machine jobs: three rows
        p.arrive(Job(i, 0.0, Request.cube(2), 1.0), 0.0)
    assert len(p.rows) == 3
    assert all(isinstance(r, Quarantine) and r.down is s.down for r in p.rows)


@pytest.mark.parametrize("change", [
    lambda d: d.add(1), lambda d: d.update([1]), lambda d: d.__ior__({1}), lambda d: d.symmetric_difference_update({1}),
])
def test_every_change_of_the_down_set_reaches_the_quarantines(change):
    s = build(StackConfig("hypercube:1", "buddy", "fcfs"))
    change(s.down)  # node 1 out of service, however the set was changed
    p = s.policy
    (st_,) = p.arrive(Job(1, 0.0, Request.cube(0), 1.0), 0.0)
    assert p.arrive(Job(2, 0.0, Request.cube(0), 1.0), 0.0) == []  # only node 0 is in service
    assert st_.nodes == (0,)
    s.down.clear()
    assert [d.job.id for d in p.retry(0.5)] == [2]


def test_the_fast_starts_equal_the_dataclass_start():
    """new_start and fcfs's arrival (which sets START_SETTERS itself) make the Start the
    dataclass would: every field set, equal, frozen."""
    assert [f.name for f in dataclasses.fields(Start)] == ["job", "allocation", "time", "row", "node"]
    assert len(START_SETTERS) == len(dataclasses.fields(Start))
    d = build(StackConfig("hypercube:3", "buddy", "fcfs")).policy
    job = Job(1, 0.0, Request.cube(1), 5.0)
    (s,) = d.arrive(job, 2.0)
    assert s == Start(job, s.allocation, 2.0) == new_start(job, s.allocation, 2.0)
    assert (s.row, s.node, s.runtime, s.wait) == (None, None, 5.0, 2.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.time = 3.0


def test_the_allocator_defaults_to_the_topologys():
    from scheduler.stack import StackConfig, build

    assert build(StackConfig(topology="mesh:4x4")).config.allocator == "first-fit"
    assert build(StackConfig(topology="hypercube:3")).config.allocator == "buddy"
    assert build(StackConfig(topology="mesh:4x4", allocator="naive")).config.allocator == "naive"
