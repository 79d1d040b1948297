"""Jobs that communicate: what a job's request says about its messages, its communication
profile (our extension).

The dissertation never turns message delays into run times (NETWORK.md 3.3 and 9.2); this is
ours, documented as such. A communicating job carries a :class:`CommProfile`: a pattern of
:mod:`scheduler.network.patterns` over the job's logical W x H grid, the MTBS of its paths
(microseconds) and an iteration count K. Each path runs K iterations of ``send, wait for the
delivery, compute Exp(MTBS)`` on the one shared wormhole network, and the job leaves when its
last path has done its K: its run time comes from its messages (the work model is
:mod:`emulator.sim.comm_work`; live, the pattern task nodes.pattern over nodes.comm).

Why the profile rides on the request (:class:`CommRequest`): an allocator sees the request and
nothing else, and the chapter-6 rules (NETWORK.md 6.4; :mod:`scheduler.allocators.ch6_rules`) need
the new job's pattern and MTBS and the rates of the running jobs. A request that carries its
profile hands both over with no new interface: the new job's is in ``allocate(request)``, the
running jobs' are in the allocator's own live allocations (``Allocation.request``). Slurm's
requests carry network hints the same way (``--switches``, ``--contiguous``). Equality and hash
include the profile, so every cache keyed by requests stays right; an allocator that ignores
the profile allocates a CommRequest exactly as the plain request. Size reduction rebuilds
folded requests without it (a folded job would run several ranks on one node; the work model
refuses it).

The logical grid of a job (:func:`logical_shape`): a W x H submesh request is its W x H; a
processor count p on a mesh is the smallest submesh that holds it (what the contiguous
allocators give, so every allocator gives the job W x H nodes: :func:`grid_request` turns the
request into that submesh); on a hypercube a k-cube is 2^ceil(k/2) x 2^floor(k/2). The
simulator (:func:`communicating`) and the live cluster (``mcemu submit --pattern``,
emulator.cli.net) read it the same way.

Pure: no I/O, no clock. The stack's option parser is imported where it is used (the stack
imports the allocators, which import this module).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from scheduler.jobs import Job
from scheduler.network.channels import Channels
from scheduler.network.metrics import internal_competing_level
from scheduler.network.patterns import PATTERNS, pattern_pairs
from scheduler.topology import Mesh, Request, RequestError, Topology, ceil_log2

_OWN = ("mtbs", "iterations", "share")


class CommProfileError(ValueError):
    """A malformed communication profile, or a pattern that does not fit a job."""


@dataclass(frozen=True)
class CommProfile:
    """A job's communication: ``pattern`` (a registered pattern name) with its ``options``
    (sorted ``(key, value)`` pairs, e.g. ``seed`` of ``permutation``), ``mtbs`` (microseconds
    of computation between a delivery and the next send, exponential) and ``iterations`` (K
    messages per path)."""

    pattern: str
    mtbs: float
    iterations: int
    options: tuple = ()

    def __post_init__(self):
        if self.pattern not in PATTERNS:
            raise CommProfileError(f"unknown pattern {self.pattern!r}; known: {', '.join(PATTERNS.names())}")
        m = self.mtbs
        if isinstance(m, bool) or not isinstance(m, (int, float)) or not (m >= 0 and math.isfinite(m)):
            raise CommProfileError(f"MTBS must be a finite number of microseconds >= 0, got {m!r}")
        k = self.iterations
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise CommProfileError(f"iterations must be a positive integer, got {k!r}")
        object.__setattr__(self, "mtbs", float(m))
        object.__setattr__(self, "options", tuple(sorted(self.options)))

    def pairs(self, w: int, h: int) -> tuple:
        """The (source rank, destination rank) pairs on a w x h job (ranks row-major);
        CommProfileError when the pattern does not fit that shape."""
        return _pairs(self.pattern, w, h, self.options)

    def fits(self, w: int, h: int) -> bool:
        try:
            self.pairs(w, h)
        except CommProfileError:
            return False
        return True

    def internal_level(self, w: int, h: int) -> float:
        """The pattern's internal competing level on a contiguous w x h job (§6.2.1: SCL +
        ICL over the job's own paths, averaged over its paths; NETWORK.md 3.2)."""
        return _internal_level(self.pattern, w, h, self.options)

    def __str__(self) -> str:
        opts = "".join(f":{k}={v}" for k, v in self.options)
        return f"{self.pattern}:mtbs={self.mtbs:g}:iterations={self.iterations}{opts}"


@functools.lru_cache(maxsize=4096)
def _pairs(pattern: str, w: int, h: int, options: tuple) -> tuple:
    try:
        return tuple(pattern_pairs(pattern, w, h, **dict(options)))
    except ValueError as e:  # NetworkError
        raise CommProfileError(f"{pattern} on a {w}x{h} job: {e}") from None


@functools.lru_cache(maxsize=1024)
def _internal_level(pattern: str, w: int, h: int, options: tuple) -> float:
    pairs = _pairs(pattern, w, h, options)
    if not pairs:
        return 0.0
    ch = Channels(Mesh(w, h))
    routes = [ch.route(s, d) for s, d in pairs]
    return sum(internal_competing_level(routes, [0] * len(routes))) / len(routes)


def parse_comm(text: str) -> tuple[CommProfile, float]:
    """``PATTERN:mtbs=US:iterations=K[:share=W][:OPTION=VALUE...]`` -> (CommProfile, share). ``share``
    weighs the profile when several are mixed (default 1); other options go to the pattern."""
    from scheduler.stack import parse_params  # a cycle: the stack imports the allocators, which import us

    parts = [p.strip() for p in str(text).strip().split(":")]
    pattern, items = parts[0].lower(), parts[1:]
    where = f"--comm {text!r}"
    if not pattern:
        raise CommProfileError(f"{where}: write PATTERN:mtbs=US:iterations=K, e.g. transpose:mtbs=25:iterations=200")
    try:
        given = parse_params(items, f"{where}: an option")
    except ValueError as e:
        raise CommProfileError(str(e)) from None
    given = {k.lower(): v for k, v in given.items()}
    own = {k: v for k, v in given.items() if k in _OWN}
    options = {k: v for k, v in given.items() if k not in _OWN}
    for k in ("mtbs", "iterations"):
        if k not in own:
            raise CommProfileError(f"{where}: give {k}= (e.g. transpose:mtbs=25:iterations=200)")
    share = own.get("share", 1.0)
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not (share > 0 and math.isfinite(share)):
        raise CommProfileError(f"{where}: share must be a positive number, got {share!r}")
    try:
        comm = CommProfile(pattern, own["mtbs"], own["iterations"], tuple(options.items()))
    except CommProfileError as e:
        raise CommProfileError(f"{where}: {e}") from None
    return comm, float(share)


@dataclass(frozen=True, slots=True)
class CommRequest(Request):
    """A request that carries its job's communication profile (module docstring)."""

    comm: CommProfile | None = None

    def __str__(self) -> str:
        return Request.__str__(self) + (f" [{self.comm}]" if self.comm is not None else "")


def logical_shape(request: Request, topology: Topology) -> tuple[int, int]:
    """The job's logical W x H grid (module docstring)."""
    if topology.kind == "mesh":
        if request.kind == "submesh":
            return request.a, request.b
        if request.kind == "processors":
            return topology.smallest_submesh(request.a)
        raise RequestError(f"a {request} request on {topology}")
    k = request.a if request.kind == "cube" else ceil_log2(request.processors_needed)
    return 1 << ((k + 1) // 2), 1 << (k // 2)


def comm_of(request) -> CommProfile | None:
    return getattr(request, "comm", None)


def grid_request(request: Request, topology: Topology, comm: CommProfile | None = None) -> tuple[int, int, Request]:
    """A communicating job's logical W x H grid and the request that asks for exactly its W x H
    nodes (a submesh on a mesh, a cube on a hypercube), carrying ``comm``: what a job of the
    simulator's ``--comm`` and a live ``submit --pattern`` job both ask for."""
    w, h = logical_shape(request, topology)
    if topology.kind == "mesh":
        return w, h, CommRequest("submesh", w, h, comm)
    return w, h, CommRequest("cube", (w * h).bit_length() - 1, 0, comm)


def communicating(job: Job, comm: CommProfile, topology: Topology) -> Job:
    """``job`` asking for its logical grid with ``comm`` on its request; CommProfileError naming
    the job when the pattern does not fit its shape."""
    w, h, req = grid_request(job.request, topology, comm)
    try:
        comm.pairs(w, h)
    except CommProfileError as e:
        raise CommProfileError(f"job {job.id}: {e}") from None
    return Job(job.id, job.submit, req, job.runtime, job.name, job.meta)


__all__ = ["CommProfile", "CommProfileError", "CommRequest", "comm_of", "communicating", "grid_request", "logical_shape",
           "parse_comm"]
