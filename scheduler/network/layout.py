"""Jobs that communicate, placed on a machine: a pattern, the nodes its ranks run on, MTBS.

The command line writes a job as ``PATTERN[:SHAPE]@PLACE[:KEY=VALUE...]``:

* ``stair:5@0,0:mtbs=0`` - NETWORK.md 2.1's row of ``lv + 1`` nodes from (0,0) towards +x;
* ``transpose:4x4@4,0:mtbs=25`` - a pattern on the 4x4 submesh whose corner with the smallest
  x and y is (4,0); ranks are row-major inside the submesh;
* on a hypercube ``PLACE`` is a subcube (``0***``, ``0`` / ``1`` / ``*`` from the most
  significant bit) or an aligned base node (``@16``: the subcube 16..16+size-1); ranks take the
  subcube's nodes in increasing address order, and the shape's area must be its size.

Options: ``mtbs=25`` (microseconds; ``mtbs=0/50/100/250/500`` gives one per path, in the
pattern's path order, e.g. top to bottom of a stair), ``name=``, ``iterations=`` (messages per
path when the job's run time comes from its messages), and the pattern's own options
(``seed=`` for ``permutation``, ``paths=`` for ``pairs``).

A job file (JSON) lists jobs with explicit nodes: ``{"jobs": [{"name": "outside",
"pattern": "transpose", "shape": "4x4", "nodes": [[0,0], [1,0], ...], "mtbs": 25},
{"name": "x", "paths": [[0, 5], [3, 1]], "nodes": [...], "mtbs": [25, 250]}]}``; nodes are
ids or ``[x, y]`` pairs, and ``paths`` are rank pairs (physical node ids when ``nodes`` is
absent).
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from scheduler.network.patterns import pattern_pairs
from scheduler.network.traffic import Path
from scheduler.network.wormhole import NetworkError
from scheduler.stack import parse_params, parse_value
from scheduler.topology import Hypercube, Mesh, Subcube, Topology, TopologyError, parse_topology

_SPEC = re.compile(r"^(?P<pattern>[a-z][a-z0-9-]*)(?::(?P<shape>\d+(?:x\d+)?))?@(?P<place>[^:]+)(?::(?P<opts>.*))?$")
_OWN = {"mtbs", "name", "iterations"}


@dataclass(frozen=True)
class NetJob:
    """A job that communicates: ``nodes[rank]`` is the node of each rank, ``paths`` the
    physical (source, destination) pairs with their MTBS, in the pattern's order."""

    name: str
    pattern: str
    shape: tuple[int, int]
    nodes: tuple[int, ...]
    ranks: tuple[tuple[int, int], ...]  # (source rank, destination rank) per path
    mtbs: tuple[float, ...]  # per path, microseconds
    iterations: int | None = None

    @property
    def paths(self) -> list[Path]:
        return [Path(self.nodes[s], self.nodes[d], m, self.name)
                for (s, d), m in zip(self.ranks, self.mtbs)]

    def to_dict(self) -> dict:
        return {"name": self.name, "pattern": self.pattern, "shape": f"{self.shape[0]}x{self.shape[1]}",
                "nodes": list(self.nodes), "paths": [list(r) for r in self.ranks],
                "mtbs": list(self.mtbs), "iterations": self.iterations}


def _mtbs(value, n: int, where: str) -> tuple[float, ...]:
    if isinstance(value, str):
        value = [parse_value(v) for v in value.split("/")] if "/" in value else parse_value(value)
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (v >= 0 and math.isfinite(v)):
            raise NetworkError(f"{where}: MTBS must be microseconds >= 0, got {v!r}")
    if len(values) == 1:
        return tuple(float(values[0]) for _ in range(n))
    if len(values) != n:
        raise NetworkError(f"{where}: {len(values)} MTBS values for {n} paths")
    return tuple(float(v) for v in values)


def _iterations(value, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise NetworkError(f"{where}: iterations must be a positive integer, got {value!r}")
    return value


def _place_mesh(topology: Mesh, place: str, w: int, h: int, where: str) -> tuple[int, ...]:
    try:
        x0, y0 = (int(v) for v in place.split(","))
    except ValueError:
        raise NetworkError(f"{where}: place a job on a mesh as @X,Y, got @{place}") from None
    if not (0 <= x0 and 0 <= y0 and x0 + w <= topology.width and y0 + h <= topology.height):
        raise NetworkError(f"{where}: a {w}x{h} job at ({x0},{y0}) does not fit in {topology}")
    return tuple(topology.node(x0 + x, y0 + y) for y in range(h) for x in range(w))


def _place_cube(topology: Hypercube, place: str, size: int, where: str) -> tuple[int, ...]:
    if size & (size - 1):
        raise NetworkError(f"{where}: a job on a hypercube needs a power-of-two size, got {size}")
    k = size.bit_length() - 1
    try:
        if re.fullmatch(r"[01*]+", place):
            cube = topology.subcube(place)
        else:
            base = int(place)
            if not 0 <= base < topology.size or base % size:
                raise NetworkError(f"{where}: base node {base} is not a multiple of {size} in {topology}")
            cube = Subcube(topology.n, size - 1, base)
    except (TopologyError, ValueError) as e:
        raise NetworkError(f"{where}: {e}") from None
    if cube.dim != k:
        raise NetworkError(f"{where}: subcube {place} has {cube.size} nodes, the job {size}")
    return tuple(sorted(cube.nodes()))


def parse_job(spec: str, topology: Topology | str, index: int = 0) -> NetJob:
    """One ``PATTERN[:SHAPE]@PLACE[:KEY=VALUE...]`` (module docstring)."""
    topology = parse_topology(topology)
    where = f"job {spec!r}"
    m = _SPEC.match(str(spec).strip().lower())
    if not m:
        raise NetworkError(f"{where}: write PATTERN[:SHAPE]@PLACE[:KEY=VALUE...], e.g. transpose:4x4@0,0:mtbs=25")
    pattern, shape, place = m["pattern"], m["shape"], m["place"]
    try:
        opts = parse_params(filter(None, (m["opts"] or "").split(":")), f"{where}: an option")
    except ValueError as e:
        raise NetworkError(str(e)) from None
    if shape is None:
        raise NetworkError(f"{where}: give the job's shape, e.g. {pattern}:4x4 (stair: the number of layers)")
    if pattern == "stair":
        if "x" in shape:
            raise NetworkError(f"{where}: a stair's shape is its number of layers, e.g. stair:5")
        w, h = int(shape) + 1, 1
    else:
        if "x" not in shape:
            raise NetworkError(f"{where}: the shape is WxH, e.g. {pattern}:4x4")
        w, h = (int(v) for v in shape.split("x"))
    if w < 1 or h < 1:
        raise NetworkError(f"{where}: an empty shape {w}x{h}")
    if isinstance(topology, Mesh):
        nodes = _place_mesh(topology, place, w, h, where)
    else:
        nodes = _place_cube(topology, place, w * h, where)
    own = {k: opts.pop(k) for k in list(opts) if k in _OWN}
    try:
        ranks = pattern_pairs(pattern, w, h, **opts)
    except KeyError as e:  # UnknownPolicy: lists the registered patterns
        raise NetworkError(str(e)) from None
    except NetworkError as e:
        raise NetworkError(f"{where}: {e}") from None
    if not ranks:
        raise NetworkError(f"{where}: the pattern has no paths")
    name = own.get("name")
    return NetJob(f"j{index}" if name in (None, "") else str(name), pattern, (w, h), nodes, tuple(ranks),
                  _mtbs(own.get("mtbs", 0.0), len(ranks), where),
                  _iterations(own.get("iterations"), where))


def _node(topology: Topology, v, where: str) -> int:
    try:
        if isinstance(topology, Mesh) and isinstance(v, (list, tuple)):
            x, y = v
            return topology.node(int(x), int(y))
        if isinstance(v, bool) or not isinstance(v, int):
            raise TopologyError(f"node {v!r} is not a node id")
        topology.check_node(v)
        return v
    except (TopologyError, ValueError, TypeError) as e:
        raise NetworkError(f"{where}: {e}") from None


def job_from_dict(d: dict, topology: Topology | str, index: int = 0) -> NetJob:
    """One job of a job file (module docstring)."""
    topology = parse_topology(topology)
    if not isinstance(d, dict):
        raise NetworkError(f"job file: job {index} is not an object")
    name = str(d.get("name") or f"j{index}")
    where = f"job {name!r}"
    unknown = set(d) - {"name", "pattern", "shape", "nodes", "paths", "mtbs", "iterations", "options"}
    if unknown:
        raise NetworkError(f"{where}: unknown keys {sorted(unknown)}")
    nodes = d.get("nodes")
    if nodes is not None:
        if not isinstance(nodes, list) or not nodes:
            raise NetworkError(f"{where}: nodes must be a non-empty list")
        nodes = tuple(_node(topology, v, where) for v in nodes)
    if "paths" in d:
        raw = d["paths"]
        if not isinstance(raw, list) or not raw:
            raise NetworkError(f"{where}: paths must be a non-empty list of [src, dst]")
        if nodes is None:  # physical pairs: the job's nodes are the ones its paths touch
            ends = sorted({_node(topology, v, where) for p in raw for v in (p if isinstance(p, list) else [p])})
            nodes = tuple(ends)
            index_of = {n: i for i, n in enumerate(nodes)}
            ranks = []
            for p in raw:
                if not (isinstance(p, list) and len(p) == 2):
                    raise NetworkError(f"{where}: path {p!r} is not [src, dst]")
                ranks.append((index_of[_node(topology, p[0], where)], index_of[_node(topology, p[1], where)]))
        else:
            ranks = []
            for p in raw:
                if not (isinstance(p, list) and len(p) == 2 and all(isinstance(r, int) and 0 <= r < len(nodes) for r in p)):
                    raise NetworkError(f"{where}: path {p!r} is not a pair of ranks 0..{len(nodes) - 1}")
                ranks.append((p[0], p[1]))
        for s, t in ranks:
            if s == t:
                raise NetworkError(f"{where}: a path from rank {s} to itself")
        pattern, shape = str(d.get("pattern") or "pairs"), (len(nodes), 1)
    else:
        if nodes is None or "pattern" not in d or "shape" not in d:
            raise NetworkError(f"{where}: give pattern, shape and nodes, or paths")
        pattern = str(d["pattern"])
        try:
            w, h = (int(v) for v in str(d["shape"]).lower().split("x"))
        except ValueError:
            raise NetworkError(f"{where}: shape must be WxH, got {d['shape']!r}") from None
        if w * h != len(nodes):
            raise NetworkError(f"{where}: a {w}x{h} pattern on {len(nodes)} nodes")
        options = d.get("options") or {}
        try:
            ranks = pattern_pairs(pattern, w, h, **options)
        except KeyError as e:
            raise NetworkError(str(e)) from None
        except NetworkError as e:
            raise NetworkError(f"{where}: {e}") from None
        shape = (w, h)
    if len(set(nodes)) != len(nodes):
        raise NetworkError(f"{where}: a node is listed twice")
    return NetJob(name, pattern, shape, nodes, tuple(ranks), _mtbs(d.get("mtbs", 0.0), len(ranks), where),
                  _iterations(d.get("iterations"), where))


def load_job_file(path: str, topology: Topology | str) -> list[NetJob]:
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        raise NetworkError(f"job file {path}: {e.strerror}") from None
    except ValueError as e:
        raise NetworkError(f"job file {path}: not JSON ({e})") from None
    jobs = doc.get("jobs") if isinstance(doc, dict) else doc
    if not isinstance(jobs, list) or not jobs:
        raise NetworkError(f"job file {path}: expected {{\"jobs\": [...]}}")
    return [job_from_dict(j, topology, i) for i, j in enumerate(jobs)]


def check_disjoint(jobs: list[NetJob]) -> None:
    """Refuse two jobs on one node (each process has a processor of its own, §3.1) and two jobs
    with one name."""
    owner: dict[int, str] = {}
    names = set()
    for j in jobs:
        if j.name in names:
            raise NetworkError(f"two jobs are named {j.name!r}")
        names.add(j.name)
        for n in j.nodes:
            if n in owner:
                raise NetworkError(f"jobs {owner[n]!r} and {j.name!r} overlap at node {n}")
            owner[n] = j.name


__all__ = ["NetJob", "check_disjoint", "job_from_dict", "load_job_file", "parse_job"]
