"""Size classes shared by the multi-queue disciplines of the dissertation (``bwq``,
``mq-scan``, ``helm``) and their parameter checking.

A job's size is the number of processors of its request as the allocator will allocate it
(``allocator.normalize(request).processors_needed``: a w x h submesh is w*h, a processor count
rounded up to the smallest submesh or cube). Queue i holds the sizes in
``(limits[i-1], limits[i]]``; the last queue has no upper bound.

Dissertation 7.3.3: "Thresholds that establish the sizes of jobs placed in each queue are
defined in order to balance the number of jobs that arrive at each queue." A scheduler cannot
know the arrival distribution in advance, so the default limits are the quantiles of the size
distribution of a named reference workload, computed exactly from the topology:

* ``"rect-unrestricted"`` (mesh): w and h independently uniform over 1..W and 1..H
  (chapter 7's input for Figures 7.5-7.8, the BWQ default);
* ``"processors"`` (mesh): a processor count uniform over 1..W*H, given the smallest submesh
  that holds it (chapter 8's input, the MQ-SCAN and HELM default);
* ``"dimensions"`` (hypercube, the only preset there): cube dimension uniform over 0..n (the
  lazy paper's uniform sizes), the n+1 dimensions split into contiguous groups of nearly
  equal count.

``limits`` may instead be an explicit increasing sequence of q-1 processor counts.
"""
from __future__ import annotations

import math
from bisect import bisect_left
from collections import deque
from collections.abc import Sequence
from itertools import count

from scheduler.disciplines.base import DisciplineError

MESH_PRESETS = ("rect-unrestricted", "processors")
CUBE_PRESETS = ("dimensions",)


def check_params(name: str, params: dict, accepted: Sequence[str]) -> None:
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise TypeError(
            f"discipline {name!r} has no parameter(s) {', '.join(unknown)}; "
            f"it takes: {', '.join(accepted)}"
        )


def int_param(name: str, what: str, value, lo: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise DisciplineError(f"{name} parameter {what} must be an integer >= {lo}, got {value!r}")
    return value


def per_queue(name: str, what: str, value, q: int, default: Sequence[int], lo: int) -> tuple[int, ...]:
    """An int (same for every queue) or a sequence of q ints; None gives ``default``."""
    if value is None:
        return tuple(default)
    if isinstance(value, int) and not isinstance(value, bool):
        return (int_param(name, what, value, lo),) * q
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise DisciplineError(f"{name} parameter {what} must be an integer or a list of {q}, got {value!r}")
    if len(value) != q:
        raise DisciplineError(f"{name} parameter {what} needs one value per queue ({q}), got {len(value)}")
    return tuple(int_param(name, what, v, lo) for v in value)


def _rect_unrestricted_limits(w: int, h: int, q: int) -> list[int]:
    total = w * h

    def count_le(s: int) -> int:  # pairs (a, b), 1<=a<=w, 1<=b<=h, with a*b <= s
        return sum(min(h, s // a) for a in range(1, min(w, s) + 1))

    out = []
    for i in range(1, q):
        need = -(-i * total // q)  # ceil(i * total / q) pairs at or below the limit
        lo, hi = 1, total
        while lo < hi:
            mid = (lo + hi) // 2
            if count_le(mid) >= need:
                hi = mid
            else:
                lo = mid + 1
        out.append(lo)
    return out


def _processor_limits(topology, q: int) -> list[int]:
    # A count p is rounded up to the smallest achievable area w*h >= p, so the counts whose
    # rounded size is at most an achievable area A are exactly 1..A: the limit nearest the
    # target i*N/q is the achievable area nearest it, from below or above.
    n, width, height = topology.size, topology.width, topology.height
    out = []
    for i in range(1, q):
        target = i * n / q
        below = max(w * min(height, int(target) // w) for w in range(1, width + 1))
        w, h = topology.smallest_submesh(max(1, math.ceil(target)))
        above = w * h
        out.append(below if below >= 1 and target - below <= above - target else above)
    return out


def _dimension_limits(n: int, q: int) -> list[int]:
    dims = n + 1
    return [1 << (int(i * dims / q + 0.5) - 1) for i in range(1, q)]


class SizeClasses:
    """The size limits of q queues on one topology, and a job -> queue index map."""

    def __init__(self, name: str, topology, allocator, queues, limits, default_queues: int,
                 default_preset: str):
        self.topology, self.allocator = topology, allocator
        cube = topology.kind == "hypercube"
        presets = CUBE_PRESETS if cube else MESH_PRESETS
        if limits is None:
            limits = CUBE_PRESETS[0] if cube else default_preset
        explicit_q = queues is not None
        if isinstance(limits, str):
            if limits not in presets:
                raise DisciplineError(
                    f"{name}: unknown limits preset {limits!r} on {topology}; use one of "
                    f"{', '.join(presets)} or a list of processor counts"
                )
            self.preset = limits
            q = int_param(name, "queues", queues, 1) if explicit_q else default_queues
            distinct = topology.num_classes if cube else topology.size
            if q > distinct:
                if explicit_q:
                    raise DisciplineError(
                        f"{name}: {q} queues on {topology}, which has only {distinct} request sizes"
                    )
                q = distinct  # a small machine gets as many queues as it has sizes
            if q == 1:
                raw = []
            elif cube:
                raw = _dimension_limits(topology.n, q)
            elif limits == "processors":
                raw = _processor_limits(topology, q)
            else:
                raw = _rect_unrestricted_limits(topology.width, topology.height, q)
            # A tiny machine can give equal quantiles; keep them distinct (and below N so
            # that the last queue can hold something).
            fixed = []
            for v in raw:
                v = max(v, fixed[-1] + 1 if fixed else 1)
                fixed.append(v)
            if fixed and fixed[-1] >= topology.size:
                if explicit_q:
                    raise DisciplineError(f"{name}: cannot balance {q} queues on {topology}")
                fixed = [v for v in fixed if v < topology.size]
            self.limits = tuple(fixed)
        else:
            if not isinstance(limits, Sequence) or not all(
                isinstance(v, int) and not isinstance(v, bool) for v in limits
            ):
                raise DisciplineError(
                    f"{name}: limits must be a preset name or a list of processor counts, got {limits!r}")
            lim = tuple(limits)
            if any(v < 1 for v in lim) or any(b <= a for a, b in zip(lim, lim[1:])):
                raise DisciplineError(
                    f"{name}: limits must be increasing positive processor counts, got {list(lim)}")
            if lim and lim[-1] >= topology.size:
                raise DisciplineError(
                    f"{name}: limit {lim[-1]} leaves the last queue empty on {topology} "
                    f"({topology.size} nodes)")
            if explicit_q and int_param(name, "queues", queues, 1) != len(lim) + 1:
                raise DisciplineError(f"{name}: {queues} queues need {queues - 1} limits, got {len(lim)}")
            self.preset = None
            self.limits = lim
        self.count = len(self.limits) + 1
        self._cache: dict = {}

    def size(self, request) -> int:
        s = self._cache.get(request)
        if s is None:
            s = self._cache[request] = self.allocator.normalize(request).processors_needed
        return s

    def index(self, request) -> int:
        return bisect_left(self.limits, self.size(request))

    def bounds(self, i: int) -> list:
        """[smallest, largest] size of queue i (largest None for the last queue)."""
        lo = self.limits[i - 1] + 1 if i else 1
        hi = self.limits[i] if i < len(self.limits) else None
        return [lo, hi]

    def describe(self) -> dict:
        return {"limits": list(self.limits), "preset": self.preset}


class ClassQueues:
    """Mixin for the disciplines that serve their size-class queues with a pointer (``bwq``,
    ``mq-scan``): ``classes.count`` FCFS queues of (seq, job), the queue in service
    ``current`` and ``boundary``, the seq of the last job of its pass (None between passes)."""

    classes: SizeClasses

    def _init_queues(self) -> None:
        self.queues: list[deque] = [deque() for _ in range(self.classes.count)]
        self.current = 0
        self.boundary = None
        self._where: dict = {}  # waiting job id -> queue index
        self._seq = count()

    def _put(self, job) -> None:
        c = self.classes.index(job.request)
        self.queues[c].append((next(self._seq), job))
        self._where[job.id] = c

    def _next_nonempty(self, start: int) -> int | None:
        """The first non-empty queue from ``start`` on, circular right."""
        nq = len(self.queues)
        for d in range(nq):
            i = (start + d) % nq
            if self.queues[i]:
                return i
        return None

    def waiting(self):
        """The current queue first (its pass, then later arrivals), then circular right."""
        nq = len(self.queues)
        return [job for d in range(nq) for _, job in self.queues[(self.current + d) % nq]]

    def _mark_pass(self, i: int, entry: dict) -> dict:
        """A queue's snapshot ``entry``, marked when it is in service with its pass."""
        if i == self.current:
            entry["current"] = True
            if self.boundary is not None:
                entry["in_pass"] = [j.id for seq, j in self.queues[i] if seq <= self.boundary]
        return entry


class MemoStart:
    """Mixin for a :class:`Discipline`: ``_attempt(job, now)`` is ``_try_start`` that does not
    ask the allocator again for a request that already failed while the machine is unchanged.

    Only the discipline allocates and releases on its allocator (base ``_try_start`` and
    ``depart``), and an allocator's answer is a function of its state and the request, so a
    request that failed fails again until a start or a release: skipping it changes no
    decision. It keeps the multi-queue passes (which retry every waiting job at every event)
    cheap at arrivals. ``allocator.used`` is part of the key as a guard against a change made
    behind the discipline's back.
    """

    _memo_version = 0
    _memo_failed: dict

    def _attempt(self, job, now):
        key = (self._memo_version, self.allocator.used)
        failed = self._memo_failed
        req = job.request
        if failed.get(req) == key:
            return None
        s = self._try_start(job, now)
        if s is None:
            failed[req] = key
        else:
            self._memo_version += 1
        return s

    def _on_release(self, start, now):
        self._memo_version += 1
        return []

    def tick(self, now):
        # the daemon ticks after a node comes back into service: the machine changed without
        # a start or release, so every remembered failure is void
        self._memo_version += 1
        return super().tick(now)


__all__ = ["ClassQueues", "MemoStart", "SizeClasses", "check_params", "int_param", "per_queue"]
