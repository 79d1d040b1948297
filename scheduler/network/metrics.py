"""Pattern metrics of a set of routed paths: SCL, ICL, internal competing level, congestion.

Source: Min (1995), "Processor Management in 2-D Mesh Wormhole-routed Multicomputers",
§3.2 (starting / intermediate contention points), §4.2 (starting and intermediate contention
levels), §4.3.2 eqs (4.12)-(4.13) (pattern averages), §6.2.1 (internal competing level and
congestion factor). NETWORK.md §3.2 is the specification followed here.

A *route* is a tuple of hashable channel ids in the order the message meets them; ``route[0]``
is the path's starting channel. Paths are identified by their index in the list of routes.
An empty route (source == destination) has no channel: it neither suffers nor causes
contention.

Readings (NETWORK.md §3.2 "operational definitions", marked [reconstruction, validated] there):

* ``SCL(P) = |{Q != P : first(P) in route(Q)}|``: the competitors at P's starting channel.
  The dissertation defines SCL as "the number of competing paths at the starting channel"
  (§4.2) without saying how to count on a real pattern; this set form reproduces its
  transpose averages 0.67 / 1.3 / 3.3 (4x4 / 6x6 / 12x12, §4.3.2) exactly (2/3, 4/3, 10/3).
* ``ICL(P) = |{Q != P : first(Q) in route(P) minus first(P)}|``: a path is an intermediate
  contention point of P where it injects into P's route downstream of P's own start (§4.2:
  "the number of competing paths at any intermediate contention point ... is always one",
  so counting injecting paths counts the points).
* Internal competing level (§6.2.1): "the number of the path's starting and intermediate
  competing paths that belong to the same job". Implemented as SCL + ICL with Q restricted
  to P's job. The two sets are disjoint for XY routes on a mesh (two XY routes overlap in
  one contiguous segment, so at most one of them starts on the other, unless both start on
  the same channel, which then counts once, as starting), hence this is also the number of
  distinct same-job competitors.
* Congestion factor of a channel (§6.2.1): "the number of competing paths that share a
  channel", counting paths of any job; a path counts once per channel.

Every ordered pair (Q, P) with ``first(Q)`` on P's route after P's start contributes to
ICL(P) and to SCL(Q); so total SCL = total ICL + (number of ordered pairs of distinct paths
sharing the same starting channel). With at most one path per source node under XY routing
the starting channels are distinct and the totals are equal, as in every pattern of the text.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from fractions import Fraction
from typing import Hashable, Sequence

Route = Sequence[Hashable]


def channels_of(nodes: Sequence[int]) -> tuple[tuple[int, int], ...]:
    """Turn a node path (as ``Mesh.route`` returns it) into its directed channels ``(u, v)``."""
    return tuple(zip(nodes, nodes[1:]))


def _first(route: Route):
    return route[0] if route else None


def _users(routes: Sequence[Route]) -> dict:
    """channel -> set of path indices whose route uses it."""
    users: dict = defaultdict(set)
    for p, r in enumerate(routes):
        for c in r:
            users[c].add(p)
    return users


def _scl_sets(routes: Sequence[Route]) -> list[set[int]]:
    users = _users(routes)
    return [(users[r[0]] - {p}) if r else set() for p, r in enumerate(routes)]


def _icl_sets(routes: Sequence[Route]) -> list[set[int]]:
    starters: dict = defaultdict(set)  # starting channel -> paths starting there
    for q, r in enumerate(routes):
        if r:
            starters[r[0]].add(q)
    out = []
    for p, r in enumerate(routes):
        s: set[int] = set()
        if r:
            for c in set(r[1:]) - {r[0]}:
                s |= starters.get(c, set())
        s.discard(p)
        out.append(s)
    return out


def scl(routes: Sequence[Route]) -> list[int]:
    """Starting contention level of every path (§4.2, NETWORK.md §3.2)."""
    return [len(s) for s in _scl_sets(routes)]


def icl(routes: Sequence[Route]) -> list[int]:
    """Intermediate contention level of every path (§4.2, NETWORK.md §3.2)."""
    return [len(s) for s in _icl_sets(routes)]


def internal_competing_level(routes: Sequence[Route], jobs: Sequence[Hashable]) -> list[int]:
    """Per path: SCL + ICL counted over the paths of the same job only (§6.2.1)."""
    if len(jobs) != len(routes):
        raise ValueError(f"{len(jobs)} job labels for {len(routes)} routes")
    out = []
    for p, (s, i) in enumerate(zip(_scl_sets(routes), _icl_sets(routes))):
        own = jobs[p]
        out.append(sum(1 for q in s if jobs[q] == own) + sum(1 for q in i if jobs[q] == own))
    return out


def congestion(routes: Sequence[Route]) -> dict:
    """Congestion factor of every used channel: how many paths (of any job) use it (§6.2.1)."""
    return {c: len(ps) for c, ps in _users(routes).items()}


@dataclass(frozen=True)
class PatternMetrics:
    """Pattern-level summary. Averages are exact fractions (the text rounds: 0.67, 1.3, 3.3)."""

    n_paths: int
    icl_avg: Fraction  # (4.12)
    scl_avg: Fraction  # (4.13)
    internal_level_by_job: dict  # job -> average internal competing level of its paths
    max_congestion: int


def pattern_metrics(
    routes: Sequence[Route], jobs: Sequence[Hashable] | None = None
) -> PatternMetrics:
    """The (4.12)/(4.13) averages, the per-job internal competing level, the max congestion.

    Without ``jobs`` every path is taken to belong to one job (label 0). An empty pattern has
    averages 0.
    """
    n = len(routes)
    labels = list(jobs) if jobs is not None else [0] * n
    s, i = scl(routes), icl(routes)
    icl_avg = Fraction(sum(i), n) if n else Fraction(0)
    scl_avg = Fraction(sum(s), n) if n else Fraction(0)
    levels = internal_competing_level(routes, labels)
    totals: dict = defaultdict(int)
    counts: dict = defaultdict(int)
    for lab, lev in zip(labels, levels):
        totals[lab] += lev
        counts[lab] += 1
    by_job = {lab: Fraction(totals[lab], counts[lab]) for lab in counts}
    cong = congestion(routes)
    return PatternMetrics(n, icl_avg, scl_avg, by_job, max(cong.values(), default=0))


__all__ = [
    "PatternMetrics",
    "channels_of",
    "congestion",
    "icl",
    "internal_competing_level",
    "pattern_metrics",
    "scl",
]
