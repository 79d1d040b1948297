"""Size reduction: restricted size reduction (RSR-t) and limit allocation, around any allocator.

Spec: restricted-size-reduction.txt (Chang and Mohapatra) sections 2.3, 3.2 and 4; limit
allocation is Yu and Das, ICPP 1994 ([13] there), known to us only through that paper.

    from scheduler import allocators, reduction
    alloc = reduction.wrap(allocators.create("buddy", "hypercube:8"), "rsr:2")

``wrap(allocator, spec)`` returns an object with the allocator interface the disciplines use
(allocate, release, normalize, free_count, free_nodes, topology, live, used, scattered, name,
kinds); ``spec`` is ``rsr:T``, ``limit:K``, ``limit:greedy``, ``limit:average`` or
None/``none`` (the allocator itself is returned). The wrapper only folds requests; the
discipline decides the order in which jobs are tried (the paper pairs RSR with FCFS).

A fold ("size reduction", section 3.2 and 4.1):
- a k-cube becomes a (k-1)-cube (every hypercube allocator);
- on ``buddy-2d`` (detected by its registry name, also through other wrappers) the square's
  side is halved, a quarter of the processors (section 4.2: "each job size reduction in TDB
  increases the execution time of a job by four times");
- any other w x h submesh is halved along its longer side, rounding up (section 4.1: "folding
  the job in the direction which it has longer side length"). On a tie (a square) the width is
  halved: the text does not say, and the choice only fixes the orientation;
- a bare processor count (the flat ``naive`` allocator) is halved, rounding up.
Folding stops at a 0-cube / 1x1 / one processor. Folds are counted on the request as the
inner allocator normalizes it, and the allocation records them with that normalized request
as ``asked`` (``Allocation.folded``): the execution time then scales by asked / given
processors (scheduler/jobs.py), the paper's pessimistic linear rule (section 3.1, "a linear
increase on execution time when a job is folded as is assumed in [13]"), which gives the
paper's own numbers: x2 per cube fold, x4 per TDB fold, x128 for a 7-cube under limit-0.

Readings chosen:
- RSR-t, section 3.2 step 1 writes the smallest size as ``s = MIN{k - t, 0}``; that would
  always be at most 0 and make t meaningless, so we read MAX{k - t, 0}: at most t folds.
- ``limit:K`` (section 4.4: "reduces all jobs larger than a k-cube to k-cube"): every job
  larger than a K-cube (on a mesh: more than 2^K processors) is folded until it is not,
  regardless of load, then allocated normally with no further folding.
- ``limit:greedy`` (section 4.4: "a variant of ... RSR ... when the restriction of size
  reduction allows all jobs to be executed on a single node when necessary"): RSR with no
  limit on the number of folds.
- ``limit:average`` is not defined in our papers. Our reading of Yu and Das's average limit:
  the limit is the mean size of the jobs, here the running mean of ceil(log2(processors))
  over the jobs allocated so far and the one being allocated, rounded half up; then as
  ``limit:K``. It adapts to the workload without knowing its distribution in advance; with
  uniform 0..7-cube jobs it settles at 4 (mean 3.5). Only a successful allocation updates
  the mean, so a failed attempt or an error changes nothing.
"""
from __future__ import annotations

import re

from scheduler.registry import Registry
from scheduler.topology import Request, ceil_log2


class ReductionError(ValueError):
    """A malformed or unknown size-reduction spec."""


REGISTRY = Registry("reduction")

FORMS = "rsr:T (T >= 0), limit:K (K >= 0), limit:greedy, limit:average, or none"


def _squares(allocator) -> bool:
    """Whether the allocator (or the one a wrapper wraps) is the 2-D buddy system."""
    seen = 0
    while allocator is not None and seen < 16:
        if getattr(type(allocator), "registry_name", "") == "buddy-2d":
            return True
        allocator = getattr(allocator, "inner", None)
        seen += 1
    return False


def fold(request: Request, square: bool = False) -> Request | None:
    """One size reduction of a normalized request; None when it cannot shrink further."""
    if request.kind == "cube":
        return Request.cube(request.a - 1) if request.a > 0 else None
    if request.kind == "submesh":
        w, h = request.a, request.b
        if w == 1 and h == 1:
            return None
        if square:
            return Request.submesh((w + 1) // 2, (h + 1) // 2)
        if w >= h:
            return Request.submesh((w + 1) // 2, h)
        return Request.submesh(w, (h + 1) // 2)
    p = request.a
    return Request.processors((p + 1) // 2) if p > 1 else None


class Reduced:
    """An allocator with size reduction in front of it. ``mode`` is "rsr" (at most ``folds``
    folds when nothing fits; None: no bound) or "limit" (fold every job above 2^``limit``
    processors first; ``limit`` None: the running average)."""

    def __init__(self, inner, mode: str, arg, spec: str):
        self.inner = inner
        self.mode = mode
        self.arg = arg
        self.spec = spec
        self.topology = inner.topology
        self.kinds = inner.kinds
        self.scattered = inner.scattered
        self.complete_recognition = getattr(inner, "complete_recognition", False)
        self._square = _squares(inner)
        self._folded: dict = {}  # serial -> folded Allocation, for ``live``
        self._dims = 0  # limit:average: sum and count of the allocated jobs' size classes
        self._jobs = 0

    def __getattr__(self, name):
        # anything else (policy-specific views) is the inner allocator's
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"Reduced({self.inner.name}, {self.spec})"

    @property
    def name(self) -> str:
        return f"{self.inner.name}+{self.spec}"

    # ------------------------------------------------------------------ allocator interface

    def normalize(self, request: Request) -> Request:
        return self.inner.normalize(request)

    def allocate(self, request: Request):
        inner = self.inner
        asked = inner.normalize(request)  # a request that can never fit: error, no change
        if self.mode == "rsr":
            a = inner.allocate(asked)
            if a is not None:
                return a
            bound, req, folds = self.arg, asked, 0
            while bound is None or folds < bound:
                req = fold(req, self._square)
                if req is None:
                    return None
                folds += 1
                a = inner.allocate(req)
                if a is not None:
                    return self._record(a.folded(folds, asked))
            return None
        size_class = ceil_log2(asked.processors_needed)
        if self.arg is None:
            limit = ((self._dims + size_class) * 2 + self._jobs + 1) // (2 * (self._jobs + 1))
        else:
            limit = self.arg
        cap = 1 << limit
        req, folds = asked, 0
        while req.processors_needed > cap:
            nxt = fold(req, self._square)
            if nxt is None:
                break
            req, folds = nxt, folds + 1
        a = inner.allocate(req)
        if a is None:
            return None
        if self.arg is None:
            self._dims += size_class
            self._jobs += 1
        return self._record(a.folded(folds, asked)) if folds else a

    def unavailable(self, request: Request) -> bool:
        """Whether no size this wrapper would ask for ``request`` can be allocated while the
        down nodes are out (scheduler.quarantine.Quarantine.unavailable), so a folded job
        is held only when every fold it may take is."""
        inner = self.inner
        check = getattr(inner, "unavailable", None)
        if check is None:
            return False
        req = inner.normalize(request)
        if self.mode == "rsr":
            folds = 0
            while req is not None:
                if not check(req):
                    return False
                if self.arg is not None and folds >= self.arg:
                    return True
                req, folds = fold(req, self._square), folds + 1
            return True
        if self.arg is None:  # limit:average: the cap moves with every job; its smallest form
            while (nxt := fold(req, self._square)) is not None:
                req = nxt
        else:
            while req.processors_needed > (1 << self.arg) and (nxt := fold(req, self._square)) is not None:
                req = nxt
        return check(req)

    def _record(self, a):
        self._folded[a.serial] = a
        return a

    def release(self, allocation) -> None:
        self.inner.release(allocation)  # a foreign or double release raises here
        if self._folded:
            self._folded.pop(getattr(allocation, "serial", None), None)

    @property
    def used(self) -> int:
        return self.inner.used

    @property
    def free_count(self) -> int:
        return self.inner.free_count

    @property
    def live(self):
        f = self._folded
        if not f:
            return self.inner.live
        return [f.get(a.serial, a) for a in self.inner.live]

    def free_nodes(self) -> frozenset:
        return self.inner.free_nodes()

    def busy_nodes(self) -> frozenset:
        return self.inner.busy_nodes()


# ---------------------------------------------------------------------- registry and specs


def _rsr(allocator, arg):
    """rsr:T — restricted size reduction: when nothing fits, fold the job (k-cube to (k-1)-cube, TDB square to a quarter, submesh halved along its longer side) at most T times (Chang and Mohapatra)."""
    return Reduced(allocator, "rsr", arg, f"rsr:{arg}")


def _limit(allocator, arg):
    """limit:K | limit:greedy | limit:average — limit allocation (Yu and Das): fold every job above a K-cube (2^K processors) regardless of load; greedy = fold as often as needed; average = limit at the running mean job size."""
    if arg == "greedy":
        return Reduced(allocator, "rsr", None, "limit:greedy")
    if arg == "average":
        return Reduced(allocator, "limit", None, "limit:average")
    return Reduced(allocator, "limit", arg, f"limit:{arg}")


REGISTRY.register("rsr", _rsr)
REGISTRY.register("limit", _limit)


def parse(spec) -> tuple[str, object] | None:
    """``(name, argument)`` for a spec, None for None/"none"; a clear error otherwise."""
    if spec is None:
        return None
    if not isinstance(spec, str):
        raise ReductionError(f"size reduction must be a string ({FORMS}), got {spec!r}")
    t = spec.strip().lower()
    if t == "none":
        return None
    name, sep, arg = t.partition(":")
    if name not in REGISTRY:
        raise ReductionError(f"unknown size reduction {spec!r}; use {FORMS}")
    if name == "rsr":
        if not re.fullmatch(r"\d+", arg):
            raise ReductionError(f"bad size reduction {spec!r}: rsr needs a fold count, rsr:T with T >= 0")
        return "rsr", int(arg)
    if name == "limit":
        if re.fullmatch(r"\d+", arg):
            return "limit", int(arg)
        if arg in ("greedy", "average"):
            return "limit", arg
        raise ReductionError(f"bad size reduction {spec!r}: use limit:K (K >= 0), limit:greedy or limit:average")
    # a user's own reduction: the argument is passed through as text
    if not sep:
        raise ReductionError(f"bad size reduction {spec!r}: use {name}:ARG")
    return name, arg


def wrap(allocator, spec):
    """``allocator`` with the size reduction ``spec``; the allocator itself for None/"none"."""
    parsed = parse(spec)
    if parsed is None:
        return allocator
    name, arg = parsed
    return REGISTRY.get(name)(allocator, arg)


def names() -> list[str]:
    return REGISTRY.names()


__all__ = ["REGISTRY", "Reduced", "ReductionError", "fold", "names", "parse", "wrap"]
