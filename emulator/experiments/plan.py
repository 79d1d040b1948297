"""Which replications of which points a sweep still needs: the stopping rule of the runner.

A point's replications are decided at checkpoints that depend on nothing but the point's own
numbers: the first checkpoint is ``min_reps``; at checkpoint c, when replications 0..c-1 are
all done, the point is finished if the 95% half-width of every ``stop_on`` metric over those c
runs is within ``precision`` of its mean, or if c is the cap; otherwise the next checkpoint is
c + max(1, min(estimated need - c, c, cap - c)) (at most doubling, so a rough early estimate
does not overshoot far). A point's result uses exactly replications 0..c-1 of its final
checkpoint, in index order.

So the replications a point gets, and the numbers computed from them, are the same whatever
runs them: one process, a local pool of any size, a Dask cluster of any size, an interrupted
run resumed from ``runs.jsonl`` (a replication found there is never recomputed; one beyond
the final checkpoint, left by an older rule, is ignored) -- the seeds are per replication
index, never per worker.
"""
from __future__ import annotations

from collections import defaultdict

from emulator.experiments.experiment import Experiment, PointResult, ReproduceError, Results
from emulator.experiments.stats import mean_ci, point_key, precise_enough, reps_needed


class Plan:
    def __init__(self, exp: Experiment, points: list, quick: bool, done: dict):
        keys = [point_key(p) for p in points]
        if len(set(keys)) != len(keys):
            raise ReproduceError(f"{exp.name}: the grid repeats a point")
        self.exp, self.keys, self.done = exp, keys, done
        self.by_key = dict(zip(keys, points))
        self.stop_on = tuple(exp.stop_on or exp.metrics[:1])
        self.min_r, self.cap = exp.caps(quick)
        self.inflight: dict[str, set] = defaultdict(set)
        self._target: dict[str, tuple[int, bool]] = {}  # key -> target(key), until a run of it is recorded
        self.finished = {k for k in keys if self.target(k)[1]}

    def reps_of(self, key) -> dict:
        return self.done.get(key, {})

    def _values(self, reps: dict, c: int, metric: str) -> list:
        return [reps[r].get(metric) for r in range(c)]

    def target(self, key) -> tuple[int, bool]:
        """(c, final): replications 0..c-1 are wanted; ``final`` when they decide the point."""
        if key not in self._target:
            self._target[key] = self._compute_target(key)
        return self._target[key]

    def _compute_target(self, key) -> tuple[int, bool]:
        reps, prec = self.reps_of(key), self.exp.precision
        c = self.min_r
        while True:
            if any(r not in reps for r in range(c)):
                return c, False
            if c >= self.cap or all(precise_enough(self._values(reps, c, s), prec) for s in self.stop_on):
                return c, True
            need = max(reps_needed(self._values(reps, c, s), prec) for s in self.stop_on)
            c += max(1, min(need - c, c, self.cap - c))

    def claim(self, key) -> list[int]:
        """The replications of ``key`` wanted now and neither done nor in flight; they are
        counted as in flight from here."""
        c, _ = self.target(key)
        reps, busy = self.reps_of(key), self.inflight[key]
        more = [r for r in range(c) if r not in reps and r not in busy]
        busy.update(more)
        return more

    def record(self, key, rep, metrics) -> None:
        self.inflight[key].discard(rep)
        self.done.setdefault(key, {})[rep] = metrics
        self._target.pop(key, None)
        if self.target(key)[1]:
            self.finished.add(key)

    def release(self, key, rep) -> None:
        """A replication that will be submitted again (its worker died)."""
        self.inflight[key].discard(rep)

    def finished_points(self) -> int:
        return len(self.finished)

    def results(self, quick: bool) -> Results:
        exp, out = self.exp, []
        for k in self.keys:
            c, final = self.target(k)
            reps = self.reps_of(k)
            used = [reps[r] for r in range(c) if r in reps]
            stats = {}
            names = list(exp.metrics) + sorted({m for v in used for m in v} - set(exp.metrics))
            for m in names:
                mu, hw, _ = mean_ci([v.get(m) for v in used])
                stats[m] = (mu, 0.0 if exp.deterministic else hw)
            precise = all(precise_enough([v.get(s) for v in used], exp.precision) for s in self.stop_on)
            capped = (not exp.deterministic) and final and c >= self.cap and not precise
            samples = {m: [v.get(m) for v in used] for m in names}
            out.append(PointResult(self.by_key[k], len(used), capped, stats, samples))
        return Results(exp, out, quick)
