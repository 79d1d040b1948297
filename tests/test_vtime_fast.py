"""Virtual time's shortcuts decide nothing (emulator.live.vtime): a touch that leaves a rank's bound
as it was keeps its heap entry, and a pass that raised no bound ends the turn. Random programs
run on the shortcut and on the plain bookkeeping (a new entry every touch, one more pass after
every pass that answered) must get the same answers at every step, and the same deadlocks."""
from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from emulator.live.vtime import VirtualTime
from scheduler.network.driver import Clock, NetworkDriver
from scheduler.network.wormhole import Wormhole

PER_S = 1e6 / 0.05
_NEVER = object()  # a bound no touch finds: every touch makes a new entry


class Plain(VirtualTime):
    """The bookkeeping without its shortcuts."""

    def _touch(self, r):
        r.hb = _NEVER
        return super()._touch(r)

    def _answer(self):
        out = super()._answer()
        self.grew = True
        return out


class Program:
    """``n`` ranks on mesh:4x4 that compute, send and wait at random (``seed``) on ``cls``."""

    def __init__(self, cls, n: int, seed: int):
        self.rng = random.Random(seed)
        self.vt = cls(NetworkDriver(Wormhole("mesh:4x4"), Clock.virtual(PER_S)), self.route, 1.0,
                      cpu=lambda pid: None)
        self.job, self.n = object(), n
        self.vt.start([(self.job, i) for i in range(n)], self.job, [None] * n)
        self.r = [self.vt.ranks[(self.job, i)] for i in range(n)]
        self.clock = [0.0] * n  # each rank's clock, seconds
        self.left = [self.rng.randint(3, 12) for _ in range(n)]  # actions before its bye
        self.sent = 0

    def route(self, d):
        src, dst, k = d.tag
        self.r[src].sent -= 1
        return [(self.r[dst], (k, d.delivered), (0, src, k % 3))]

    def act(self, i: int) -> None:
        """Rank ``i`` was answered (or starts): it computes, sends, and waits or ends."""
        rng, vt, r = self.rng, self.vt, self.r[i]
        # ties are the cases that matter; odd fractions, the clocks that lose an ulp in flit times
        self.clock[i] += rng.choice((0.0, 0.0, 1, 5, 37.5, rng.uniform(0, 9))) / PER_S
        if self.left[i] <= 0:
            return vt.bye(r, self.clock[i])
        self.left[i] -= 1
        for _ in range(rng.choice((0, 1, 1, 2, 2, 3))):
            dst = rng.choice([j for j in range(self.n) if j != i])
            vt.report(r, self.clock[i])
            r.sent += 1
            self.sent += 1
            vt.driver.send(i, dst, self.clock[i], (i, dst, self.sent), rng.choice((1, 5, 11)))
        kind = rng.random()
        if kind < 0.35:
            vt.wait(r, self.clock[i], self.clock[i] + rng.choice((0, 3, 20, rng.uniform(0, 9))) / PER_S, "sleep")
        elif kind < 0.5:
            vt.wait(r, self.clock[i], None, "recv", ((0, None, rng.randrange(3)),), rng.choice((1, 2)))
        else:
            vt.wait(r, self.clock[i], None, "recv")

    def turn(self) -> list:
        """One step; the ranks answered go on (in a random order of their own); the answers."""
        got = sorted(((r.rank, at, frames) for r, at, frames in self.vt.step()), key=lambda x: x[0])
        for rank, at, _ in got:
            self.clock[rank] = max(self.clock[rank], self.vt.answer_s(self.r[rank], at))
        for rank, _, _ in sorted(got, key=lambda _: self.rng.random()):
            self.act(rank)
        return got


@settings(max_examples=150, deadline=None)
@given(n=st.integers(2, 6), seed=st.integers(0, 2**32 - 1))
def test_the_shortcuts_give_the_plain_answers(n, seed):
    fast, plain = Program(VirtualTime, n, seed), Program(Plain, n, seed)
    for p in (fast, plain):
        for i in range(n):
            p.act(i)
    for _ in range(200):
        a, b = fast.turn(), plain.turn()
        assert a == b
        assert fast.vt.stuck == plain.vt.stuck  # when the computing ranks' clocks are read
        if not a:
            break
    assert [[r.rank for r in rs] for _, rs in fast.vt.deadlocked()] == \
           [[r.rank for r in rs] for _, rs in plain.vt.deadlocked()]
