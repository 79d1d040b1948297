"""The verdict policy of every experiment, written once.

A paper's claim is split into sub-claims. Each one names the quantity it reads, the points
where the text makes it (the whole stated range: a claim the text makes "as the load
increases" is read at every load it shows, not at the easy end), the comparison and, where
it allows any slack, the tolerance and the reason for it. Its outcome on our numbers is one of

* ``holds``: the comparison is true even at the unfavourable ends of the 95% intervals;
* ``fails``: it is false even at the favourable ends;
* ``inconclusive``: the difference lies inside the intervals (a tie). Ties are scored this way
  everywhere: never as a win, never as a loss.

Rows that do not count: a ``sensitivity`` row (the other reading of an ambiguous text, shown
so a reader sees what it would say, never chosen for the verdict), ``not informative`` (the
compared series are identical by construction, so the data cannot speak) and ``not
reproducible in saturation`` (every point the claim is about is past saturation, where the
numbers grow with the run length: the row gives that evidence instead of a verdict).

The scored outcomes roll up: agree (every one holds), disagree (none holds and one fails at
least), inconclusive (none decided), partly agree (the rest), with the counts of each.

Intervals come from :mod:`.stats` (means with 95% half-widths). A difference of two estimates
of one experiment is judged on its *paired* interval when both carry their replications
(``Est.samples``, from runs.jsonl): replication r of every point has the same seed (common random
numbers), so the interval of the per-replication differences (stats.paired_ci) is the sharp one.
Without the replications (results.csv alone, a synthetic result) the half-widths are added in
quadrature, which ignores the positive covariance and errs toward calling a tie. Every outcome
says which was used (``Outcome.basis``: paired, unpaired, exact), and the report prints it beside
the sub-claim. A deterministic experiment's half-width is 0: its outcomes are crisp.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from emulator.experiments import stats

HOLDS, FAILS, INCONCLUSIVE = "holds", "fails", "inconclusive"
NOT_INFORMATIVE, SATURATED = "not informative", "not reproducible in saturation"
SCORED = (HOLDS, FAILS, INCONCLUSIVE)
VERDICTS = ("agree", "partly agree", "disagree", "inconclusive")


PAIRED, UNPAIRED, EXACT, ONE = "paired", "unpaired", "exact", "one"


@dataclass(frozen=True)
class Est:
    """A mean with its 95% half-width (0: exact, inf: unknown). ``samples``: the values of
    replications 0, 1, ... behind it when known (replication r has the same seed at every point
    of an experiment, so two estimates' samples pair up by index); ``basis``: how the intervals
    of the differences it was computed from were formed (PAIRED, UNPAIRED, EXACT)."""

    mean: float
    hw: float = 0.0
    samples: tuple | None = field(default=None, compare=False, repr=False)
    basis: frozenset = field(default=frozenset(), compare=False, repr=False)

    def __post_init__(self):
        hw = self.hw
        if hw is None or (isinstance(hw, float) and math.isnan(hw)):
            object.__setattr__(self, "hw", math.inf if not math.isfinite(self.mean) else 0.0)

    @property
    def lo(self) -> float:
        return self.mean - self.hw

    @property
    def hi(self) -> float:
        return self.mean + self.hw

    def _map(self, f, mean, hw):
        s = None if self.samples is None else tuple(f(x) for x in self.samples)
        return Est(mean, hw, s, self.basis)

    def __add__(self, o):
        return _pairwise(self, _est(o), lambda x, y: x + y)

    __radd__ = __add__

    def __sub__(self, o):
        return _pairwise(self, _est(o), lambda x, y: x - y)

    def __rsub__(self, o):
        return _est(o) - self

    def __neg__(self):
        return self._map(lambda x: -x, -self.mean, self.hw)

    def __mul__(self, k: float):
        if isinstance(k, Est):
            raise TypeError("Est x Est: use ratio or a scalar")
        return self._map(lambda x: x * k, self.mean * k, self.hw * abs(k))

    __rmul__ = __mul__

    def __truediv__(self, o):
        """By a scalar, or by an estimate (a ratio of means: paired, stats.ratio_ci's delta method
        over the common replications, when both carry them; else relative half-widths in
        quadrature)."""
        if not isinstance(o, Est) or _const(o):
            k = o.mean if isinstance(o, Est) else o
            return self._map(lambda x: x / k, self.mean / k, self.hw / abs(k))
        if _pairable(self, o):
            r, hw, _ = stats.ratio_ci(self.samples, o.samples)
            return Est(r, hw, None, self.basis | o.basis | {_kind(self, o)})
        basis = self.basis | o.basis | {UNPAIRED if self.hw or o.hw else EXACT}
        if o.mean == 0:
            return Est(math.nan, math.inf, None, basis)
        r = self.mean / o.mean
        if self.mean == 0:
            return Est(0.0, self.hw / abs(o.mean), None, basis)
        rel = math.hypot(self.hw / abs(self.mean), o.hw / abs(o.mean))
        return Est(r, abs(r) * rel, None, basis)

    def __str__(self) -> str:
        from emulator.experiments.experiment import fmt
        return fmt(self.mean) if self.hw == 0 else f"{fmt(self.mean)} ± {fmt(self.hw, 2)}"


def _const(e: Est) -> bool:
    """A number, not an estimate: no interval and no replications."""
    return e.samples is None and e.hw == 0 and math.isfinite(e.mean)


def _pairable(a: Est, b: Est) -> bool:
    return (a.samples is not None and b.samples is not None
            and min(len(a.samples), len(b.samples)) >= 2)


def _kind(a: Est, b: Est) -> str:
    return EXACT if a.hw == 0 and b.hw == 0 else PAIRED


def _pairwise(a: Est, b: Est, f) -> Est:
    """f(a, b) (a sum or a difference): replication by replication when both carry their
    replications (the paired interval), a number applied to every replication, else the
    half-widths in quadrature (unpaired)."""
    if _const(b):
        return a._map(lambda x: f(x, b.mean), f(a.mean, b.mean), a.hw)
    if _const(a):
        return b._map(lambda y: f(a.mean, y), f(a.mean, b.mean), b.hw)
    basis = a.basis | b.basis
    if _pairable(a, b):
        per = tuple(f(float(x), float(y)) if _ok(x) and _ok(y) else math.nan
                    for x, y in zip(a.samples, b.samples))
        m, hw, n = stats.mean_ci(per)
        if n >= 2:
            return Est(m, hw, per, basis | {_kind(a, b)})
    return Est(f(a.mean, b.mean), math.hypot(a.hw, b.hw), None,
               basis | {UNPAIRED if a.hw or b.hw else EXACT})


def _ok(x) -> bool:
    return x is not None and math.isfinite(float(x))


class Outcome(str):
    """holds / fails / inconclusive, with the basis of the intervals it was judged on."""

    basis: frozenset = frozenset()


def _out(result: str, basis) -> Outcome:
    o = Outcome(result)
    o.basis = frozenset(basis)
    return o


def _basis_of(d: "Est") -> frozenset:
    # one estimate against a number: exact when it has no interval (a deterministic result)
    return d.basis or frozenset({EXACT if d.hw == 0 else ONE})


def basis_text(basis) -> str:
    """How a sub-claim's intervals were formed, for its report line."""
    b = set(basis or ())
    if b == {EXACT}:
        return "exact: deterministic numbers, CI 0"
    parts = [t for k, t in ((PAIRED, "paired per-replication differences (same seeds)"),
                            (UNPAIRED, "unpaired, half-widths in quadrature"),
                            (ONE, "one series' CI against a fixed value")) if k in b]
    return ("CIs: " + "; ".join(parts)) if parts else ""


def _est(v) -> Est:
    return v if isinstance(v, Est) else Est(float(v), 0.0)


def _finite(d: Est) -> bool:
    return math.isfinite(d.mean) and not math.isnan(d.hw)


def above(d, tol: float = 0.0) -> str:
    """The claim d > tol."""
    d = _est(d)
    basis = _basis_of(d)
    if not _finite(d):
        return _out(INCONCLUSIVE, basis)
    if d.lo > tol:
        return _out(HOLDS, basis)
    if d.hi < tol:
        return _out(FAILS, basis)
    return _out(INCONCLUSIVE, basis)


def below(d, tol: float = 0.0) -> str:
    """The claim d < tol."""
    return above(-_est(d), -tol)


def greater(a, b, tol: float = 0.0) -> str:
    """a > b + tol (tol: the least gap the claim's word asks for)."""
    return above(_est(a) - _est(b), tol)


def less(a, b, tol: float = 0.0) -> str:
    """a < b - tol."""
    return above(_est(b) - _est(a), tol)


def not_more(a, b, tol: float = 0.0) -> str:
    """a <= b + tol ("no worse", "at most")."""
    return below(_est(a) - _est(b), tol) if tol else _nonstrict(_est(b) - _est(a))


def _nonstrict(d: Est) -> str:
    # d >= 0: an exact tie (hw 0) holds; otherwise as above(d, 0)
    if _finite(d) and d.hw == 0 and d.mean == 0:
        return _out(HOLDS, _basis_of(d))
    return above(d, 0.0)


def within(d, tol: float) -> str:
    """|d| <= tol: holds when the whole interval is inside the band, fails when it is
    wholly outside."""
    d = _est(d)
    basis = _basis_of(d)
    if not _finite(d):
        return _out(INCONCLUSIVE, basis)
    if abs(d.mean) + d.hw <= tol:
        return _out(HOLDS, basis)
    if abs(d.mean) - d.hw > tol:
        return _out(FAILS, basis)
    return _out(INCONCLUSIVE, basis)


def close(a, b, rel: float) -> str:
    """a within a fraction ``rel`` of b (|a - b| <= rel |b|, b's own mean as the scale)."""
    a, b = _est(a), _est(b)
    return within(a - b, rel * abs(b.mean))


def ratio_within(a, b, lo: float, hi: float) -> str:
    """lo <= a / b <= hi."""
    r = _est(a) / _est(b)
    return every([not_more(lo, r), not_more(r, hi)])


def every(outcomes) -> str:
    """A claim made at every one of several points: fails if it fails at one, holds if it holds
    at all, else inconclusive."""
    outs = [as_outcome(o) for o in outcomes]
    basis = _union(outs)
    if not outs:
        return _out(INCONCLUSIVE, basis)
    if FAILS in outs:
        return _out(FAILS, basis)
    return _out(HOLDS if all(o == HOLDS for o in outs) else INCONCLUSIVE, basis)


def _union(outs) -> frozenset:
    return frozenset().union(*(getattr(o, "basis", ()) for o in outs))


def some(outcomes) -> str:
    """A claim that one of several alternatives holds."""
    outs = [as_outcome(o) for o in outcomes]
    basis = _union(outs)
    if HOLDS in outs:
        return _out(HOLDS, basis)
    return _out(FAILS if outs and all(o == FAILS for o in outs) else INCONCLUSIVE, basis)


def rises(ests, tol: float = 0.0) -> str:
    """Each estimate above the one before (a curve that grows along its x)."""
    ests = [_est(e) for e in ests]
    return every(greater(b, a, tol) for a, b in zip(ests, ests[1:]))


def mark(outcome: str) -> str:
    """A short label for a report line."""
    return {HOLDS: "holds", FAILS: "does not hold", INCONCLUSIVE: "inconclusive (inside the CIs)",
            NOT_INFORMATIVE: "not informative", SATURATED: "not reproducible in saturation"}.get(outcome, outcome)


@dataclass
class Sub:
    """One sub-claim and its outcome. ``role``: claim (scored), sensitivity (the other reading,
    not scored) or note (not informative / saturated: not scored)."""

    outcome: str
    text: str
    tol: str = ""
    why: str = ""
    role: str = "claim"
    extra: dict = field(default_factory=dict)

    @property
    def scored(self) -> bool:
        return self.role == "claim" and self.outcome in SCORED

    @property
    def ok(self) -> bool:
        return self.outcome == HOLDS

    @property
    def basis(self) -> str:
        """How its intervals were formed (paired, unpaired, exact), as the report prints it."""
        return basis_text(getattr(self.outcome, "basis", ())) if self.role != "note" else ""


def as_outcome(v) -> str:
    if not isinstance(v, str):  # an exact claim (bool, numpy bool) on a deterministic result
        return HOLDS if bool(v) else FAILS
    if v in SCORED or v in (NOT_INFORMATIVE, SATURATED):
        return v
    raise ValueError(f"not an outcome: {v!r}")


def counts(subs) -> dict:
    c = {o: 0 for o in SCORED}
    for s in subs:
        if s.scored:
            c[s.outcome] += 1
    return c


def roll_up(subs) -> str:
    c = counts(subs)
    n = sum(c.values())
    if n == 0 or c[INCONCLUSIVE] == n:
        return "inconclusive"
    if c[HOLDS] == n:
        return "agree"
    if c[HOLDS] == 0:
        return "disagree"
    return "partly agree"


def count_text(subs) -> str:
    c = counts(subs)
    n = sum(c.values())
    rest = [f"{sum(1 for s in subs if s.role == 'sensitivity')} sensitivity row(s)",
            f"{sum(1 for s in subs if s.role == 'note')} not scored"]
    rest = [r for r in rest if not r.startswith("0 ")]
    return (f"{c[HOLDS]} hold, {c[FAILS]} fail, {c[INCONCLUSIVE]} inconclusive of {n} sub-claims"
            + (f"; {', '.join(rest)}" if rest else ""))
