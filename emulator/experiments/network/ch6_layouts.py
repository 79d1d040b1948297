"""The two-job layouts of dissertation chapter 6 (§6.2, Figs 6.7, 6.10, 6.12) as job-file dicts,
and the simulation point of the job-level experiments (:mod:`.ch6_jobs`).

Two interleaved 4x4 jobs: one contiguous ("inside"), the other cut along a vertical line into
two pieces placed on both sides of it ("outside"), on a mesh of 4 rows and 8 columns
(NETWORK.md 6.2, rebuilt from the congestion counts of §6.2.4; the figures are lost). Ranks are
row-major in logical order (Node_{i,j} is logical row i, column j); rows are shared. Under XY
routing the outside job's paths whose source and destination columns lie on both sides of the
cut cross the inside job's row channels; Y segments stay in each job's own columns. Crossing
paths per row, cut after logical column 0 ("first method"): 3, 1, 1, 1 (6); cut in the
middle ("second method"): 2, 2, 2, 2 (8) -- the counts §6.2.4 states, for either orientation.

Readings (documented in the reports):

* **Orientation of the pieces** (NETWORK.md 8.23, "only implied by the figures"). ``ordered``:
  the left piece holds the logical columns left of the cut (8.23's reading). ``swapped``: the
  pieces exchange sides. The crossing counts cannot tell them apart, but every crossing path
  runs the other way along its row, and a crossing path meets an inside path only if both run
  the same way. In a transpose row r has r paths going right and 3-r going left; the diagonal's
  rows 0-1 go right and rows 2-3 left. So (:func:`interactions`, pairs of inside/outside paths
  sharing a channel): Scenario A ordered 20, swapped 4; Scenario B ordered 2 (transpose inside)
  and **0** (diagonal inside: the jobs share no channel), swapped 9 and 7. §6.2.2-6.2.3 take
  the interaction as given ("the communicating paths of the job to the inside serve as
  intermediate contention points to the job that is placed to the outside. Likewise, the job
  to the outside will provide starting contention"; with the transpose outside "the outside
  job creates a large number of starting competing paths for the inside job"). We therefore
  orient each scenario so that its jobs meet: Scenario A (and Fig 6.13) ``ordered``, as 8.23;
  Scenario B ``swapped``, where we depart from 8.23. The experiments also run the other
  orientation as a sensitivity study.
* **Scenario A's cut** is not stated: the middle (NETWORK.md 8.19), as Scenario B's.
* **Scenario B's modified transpose** drops one path that the text does not name (8.20). No
  single removal leaves the congestion factors of the inside job's channels unchanged by the
  exchange, nor equalises the per-row crossing counts (the transpose outside crosses with 2
  paths per row, the diagonal with 1): 8.20's criterion cannot be met on this layout. We remove
  the path that brings the two cases closest (:func:`removal_mismatch`: L1 distance of the
  inside region's channel congestion, over all its channels, then its row channels; ties to
  the first in row-major order): Node_{0,3} -> Node_{3,0} for the swapped orientation. The
  experiment repeats both cases with every other choice.
"""
from __future__ import annotations

import functools
import json
import math

from emulator.experiments.network.common import net_point
from scheduler.network.layout import job_from_dict
from scheduler.topology import parse_topology

N = 4
JOB_MESH = "mesh:8x4"
FIRST_CUT, MIDDLE_CUT = 1, 2
CUTS = {FIRST_CUT: "first method (cut 0|1)", MIDDLE_CUT: "second method (cut 1|2)"}

# ------------------------------------------------------------------ layouts


ORDERED, SWAPPED = "ordered", "swapped"


def piece_columns(role: str, cut: int = MIDDLE_CUT, n: int = N, pieces: str = ORDERED) -> list[int]:
    """Physical column of each logical column of the ``inside`` or ``outside`` job.

    ``pieces="ordered"`` (NETWORK.md 8.23): the left piece holds the logical columns left of the
    cut, the right piece the others. ``"swapped"``: the two pieces exchange sides (the left
    piece holds logical columns ``cut..n-1``); the per-row crossing counts are the same, but
    every crossing path runs the other way along its row."""
    if pieces not in (ORDERED, SWAPPED):
        raise ValueError(f"pieces must be {ORDERED!r} or {SWAPPED!r}, got {pieces!r}")
    left = list(range(cut)) if pieces == ORDERED else list(range(cut, n))
    right = [c for c in range(n) if c not in left]
    if role == "inside":
        return [len(left) + c for c in range(n)]
    where = {c: k for k, c in enumerate(left)}
    where.update({c: len(left) + n + k for k, c in enumerate(right)})
    return [where[c] for c in range(n)]


def job_nodes(role: str, cut: int = MIDDLE_CUT, n: int = N, pieces: str = ORDERED) -> list[list[int]]:
    """``[x, y]`` of every rank (row-major logical order) of the inside or outside job."""
    cols = piece_columns(role, cut, n, pieces)
    return [[cols[c], r] for r in range(n) for c in range(n)]


def transpose_rank_pairs(n: int = N) -> list[tuple[int, int]]:
    """Node_{i,j} -> Node_{j,i} as rank pairs, row-major by source (the ``transpose`` pattern)."""
    return [(i * n + j, j * n + i) for i in range(n) for j in range(n) if i != j]


def job_dict(role: str, pattern: str, mtbs: float, cut: int = MIDDLE_CUT, remove=None, n: int = N,
             pieces: str = ORDERED) -> dict:
    """A job-file dict of the inside or outside job. ``remove``: ``((i, j), (j, i))`` (logical
    row, column of source and destination) of a transpose path to drop (Scenario B)."""
    nodes = job_nodes(role, cut, n, pieces)
    if pattern == "transpose" and remove is not None:
        (i, j), _ = remove
        drop = (i * n + j, j * n + i)
        pairs = [list(p) for p in transpose_rank_pairs(n) if p != drop]
        if len(pairs) == len(transpose_rank_pairs(n)):
            raise ValueError(f"{remove} is not a transpose path")
        return {"name": role, "pattern": "transpose-1", "paths": pairs, "nodes": nodes, "mtbs": float(mtbs)}
    return {"name": role, "pattern": pattern, "shape": f"{n}x{n}", "nodes": nodes, "mtbs": float(mtbs)}


def interleaved_jobs(inside: str = "transpose", outside: str = "transpose", *, cut: int = MIDDLE_CUT,
                     mtbs_in: float = 0.0, mtbs_out: float = 0.0, remove=None, pieces: str = ORDERED) -> list[dict]:
    """The two jobs of Figs 6.7/6.10/6.12 as job-file dicts (named ``inside``, ``outside``) on
    :data:`JOB_MESH`; ``remove`` drops one path of whichever job is a transpose; ``pieces``
    orients the split job (:func:`piece_columns`)."""
    return [job_dict("inside", inside, mtbs_in, cut, remove, pieces=pieces),
            job_dict("outside", outside, mtbs_out, cut, remove, pieces=pieces)]


A_PIECES = ORDERED  # Scenario A (and Fig 6.13): the orientation under which the jobs interact
B_PIECES = SWAPPED  # Scenario B: likewise; see the module docstring


def scenario_a(mtbs_in: float, mtbs_out: float, cut: int = MIDDLE_CUT, pieces: str = A_PIECES) -> list[dict]:
    """Scenario A (Fig 6.7; Fig 6.12 with ``cut``): two 4x4 transposes."""
    return interleaved_jobs("transpose", "transpose", cut=cut, mtbs_in=mtbs_in, mtbs_out=mtbs_out, pieces=pieces)


REMOVED = ((0, 3), (3, 0))  # Node_{0,3} -> Node_{3,0}; see the module docstring


def scenario_b(transpose_inside: bool, mtbs: float, remove=REMOVED, pieces: str = B_PIECES) -> list[dict]:
    """Scenario B (Fig 6.10): the modified transpose and the diagonal, the same MTBS, outside
    job cut in the middle; ``transpose_inside`` picks the case."""
    pats = ("transpose", "diagonal") if transpose_inside else ("diagonal", "transpose")
    return interleaved_jobs(*pats, cut=MIDDLE_CUT, mtbs_in=mtbs, mtbs_out=mtbs, remove=remove, pieces=pieces)


def _routes(jobs: list[dict], topology=JOB_MESH):
    topo = parse_topology(topology)
    out = []
    for i, d in enumerate(jobs):
        job = job_from_dict(d, topo, i)
        for p in job.paths:
            nodes = topo.route(p.src, p.dst)
            out.append((job.name, [topo.xy(v) for v in nodes]))
    return out


def _inside_cols(jobs: list[dict]) -> set:
    return {x for d in jobs if d["name"] == "inside" for x, _ in d["nodes"]}


def crossing_counts(jobs: list[dict], topology=JOB_MESH) -> dict:
    """Per mesh row: how many outside paths cross the inside job's columns (their X segment
    uses a channel between two inside columns)."""
    cols = _inside_cols(jobs)
    rows: dict = {}
    for name, pts in _routes(jobs, topology):
        if name != "outside":
            continue
        hits = {a[1] for a, b in zip(pts, pts[1:]) if a[1] == b[1] and a[0] in cols and b[0] in cols}
        for y in hits:
            rows[y] = rows.get(y, 0) + 1
    return dict(sorted(rows.items()))


def inside_congestion(jobs: list[dict], topology=JOB_MESH) -> dict:
    """Congestion factor (§6.2.1: paths of any job) of every channel between two inside-job
    nodes, keyed ``((x, y), (x', y'))``."""
    cols = _inside_cols(jobs)
    out: dict = {}
    for _, pts in _routes(jobs, topology):
        for a, b in zip(pts, pts[1:]):
            if a[0] in cols and b[0] in cols:
                out[(a, b)] = out.get((a, b), 0) + 1
    return out


def removal_mismatch(remove, pieces: str = B_PIECES) -> tuple[int, int]:
    """How far exchanging the jobs of Scenario B moves the inside region's congestion when the
    transpose drops ``remove``: (L1 distance over all its channels, over its row channels)."""
    c1 = inside_congestion(scenario_b(True, 0.0, remove, pieces))
    c2 = inside_congestion(scenario_b(False, 0.0, remove, pieces))
    keys = set(c1) | set(c2)
    l1 = sum(abs(c1.get(k, 0) - c2.get(k, 0)) for k in keys)
    rows = sum(abs(c1.get(k, 0) - c2.get(k, 0)) for k in keys if k[0][1] == k[1][1])
    return l1, rows


def transpose_paths(n: int = N) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    return [((i, j), (j, i)) for i in range(n) for j in range(n) if i != j]


def choose_removed_path(pieces: str = B_PIECES):
    """The transpose path whose removal best preserves the inside congestion (8.20)."""
    return min(transpose_paths(), key=lambda t: removal_mismatch(t, pieces))


def interactions(jobs: list[dict], topology=JOB_MESH) -> dict:
    """How the two jobs meet (§6.2.2): ``pairs`` of (inside path, outside path) sharing a
    channel; ``inside_started`` inside paths whose starting channel an outside path crosses
    (starting competitors); ``outside_hit`` outside paths into whose route an inside path
    injects (intermediate contention points)."""
    rs = _routes(jobs, topology)
    ri = [r for name, r in rs if name == "inside"]
    ro = [r for name, r in rs if name == "outside"]
    ch = [list(zip(r, r[1:])) for r in ri]
    co = [list(zip(r, r[1:])) for r in ro]
    return {"pairs": sum(1 for a in ch for b in co if set(a) & set(b)),
            "inside_started": sum(1 for a in ch if a and any(a[0] in b for b in co)),
            "outside_hit": sum(1 for b in co if any(a and a[0] in b[1:] for a in ch))}


# ------------------------------------------------------------------ the point


@functools.lru_cache(maxsize=64)
def _run(jobs_key: str, messages: int, seed: int) -> dict:
    return net_point({"topology": JOB_MESH, "jobs": json.loads(jobs_key), "messages": messages}, seed)


def interleaved_point(params: dict, seed: int) -> dict:
    """Params: ``inside``/``outside`` patterns, ``cut``, ``mtbs_in``, ``mtbs_out``, ``remove``
    (or null), ``messages``. Metrics (us): ``delay@inside``, ``delay@outside``, ``job_mean``
    (mean of the two jobs' means), ``path_mean`` (over every path), ``outside_minus_inside``,
    ``delay@transpose`` / ``delay@diagonal`` (the job with that pattern; NaN if none). Optional
    ``pieces`` (default "ordered")."""
    rem = params.get("remove")
    rem = tuple(tuple(p) for p in rem) if rem else None
    jobs = interleaved_jobs(params["inside"], params["outside"], cut=params["cut"], mtbs_in=params["mtbs_in"],
                            mtbs_out=params["mtbs_out"], remove=rem, pieces=params.get("pieces", ORDERED))
    r = _run(json.dumps(jobs, sort_keys=True), params["messages"], seed)
    din, dout = r["delay@inside"], r["delay@outside"]
    out = {"delay@inside": din, "delay@outside": dout, "job_mean": (din + dout) / 2,
           "path_mean": r["mean_delay"], "outside_minus_inside": dout - din}
    for pat in ("transpose", "diagonal"):
        out[f"delay@{pat}"] = din if params["inside"] == pat else dout if params["outside"] == pat else math.nan
    return out




__all__ = ["A_PIECES", "B_PIECES", "CUTS", "FIRST_CUT", "JOB_MESH", "MIDDLE_CUT", "ORDERED", "REMOVED", "SWAPPED",
           "choose_removed_path", "crossing_counts", "inside_congestion", "interactions", "interleaved_jobs",
           "interleaved_point", "job_dict", "job_nodes", "piece_columns", "removal_mismatch", "scenario_a",
           "scenario_b", "transpose_paths", "transpose_rank_pairs"]
