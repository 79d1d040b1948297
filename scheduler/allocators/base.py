"""The allocator contract every processor allocator fulfils.

An allocator finds and frees allocations on one topology. The base class owns the
bookkeeping every allocator needs the same way (normalizing the request, refusing requests
that can never fit, numbering allocations, refusing double and foreign releases) so that a
policy module holds only its search: ``_allocate(request) -> pieces | None`` and
``_release(pieces)``, plus ``free_nodes()`` read from its own structures (the contract tests
check that this view agrees with the live allocations, which catches a structure that leaks
or double-counts nodes).

The hot path stays O(policy): an :class:`Allocation` materializes its node set only when
asked, so that the O(n) buddy system is not made O(2^k) by bookkeeping.
"""
from __future__ import annotations

from itertools import count
from typing import Iterable

from scheduler.topology import Piece, Request, RequestError, Submesh, Topology, TopologyError


class AllocationError(ValueError):
    """Releasing an allocation twice, or one that another allocator made."""


class Allocation:
    """The nodes given to one job: a tuple of pieces (one subcube or submesh when
    contiguous, several for scattered allocators), the request as allocated, and the number
    of folds size reduction applied (``asked`` is the request before folding)."""

    __slots__ = ("pieces", "request", "asked", "size", "folds", "owner", "serial", "_nodes")

    def __init__(self, pieces, request, size, owner, serial, folds=0, asked=None):
        self.pieces = pieces
        self.request = request
        self.asked = asked if asked is not None else request
        self.size = size
        self.folds = folds
        self.owner = owner
        self.serial = serial
        self._nodes = None

    @property
    def nodes(self) -> frozenset:
        if self._nodes is None:
            topo = self.owner.topology
            self._nodes = frozenset(n for p in self.pieces for n in topo.piece_nodes(p))
        return self._nodes

    @property
    def piece(self) -> Piece:
        """The single piece of a contiguous allocation."""
        if len(self.pieces) != 1:
            raise AttributeError("a scattered allocation has several pieces")
        return self.pieces[0]

    def folded(self, folds: int, asked: Request) -> "Allocation":
        """The same allocation (same serial, same owner) recorded as ``folds`` times folded."""
        a = Allocation(self.pieces, self.request, self.size, self.owner, self.serial, folds, asked)
        a._nodes = self._nodes
        return a

    @property
    def ranks(self) -> tuple:
        """The nodes in rank order (rank i runs on ``ranks[i]``): the allocator's mapping,
        :meth:`Allocator.rank_order`."""
        return self.owner.rank_order(self)

    def describe(self) -> str:
        return " + ".join(str(p) for p in self.pieces)

    def to_dict(self) -> dict:
        return {
            "pieces": [str(p) for p in self.pieces],
            "size": self.size,
            "folds": self.folds,
            "request": str(self.request),
            "nodes": sorted(self.nodes),
        }

    def __repr__(self) -> str:
        f = f", folds={self.folds}" if self.folds else ""
        return f"Allocation({self.describe()}{f})"


class Allocator:
    """Base of every allocator. Subclasses set ``kinds`` (topology kinds they accept),
    ``scattered`` (pieces need not be one contiguous shape) and ``complete_recognition``
    (a request is satisfied whenever any free shape of that size exists)."""

    kinds: tuple[str, ...] = ("hypercube",)
    scattered = False
    complete_recognition = False
    registry_name = ""

    def __init__(self, topology: Topology, **options):
        if topology.kind not in self.kinds:
            raise TopologyError(
                f"allocator {self.name!r} works on {' or '.join(self.kinds)}, not {topology}"
            )
        if options:
            raise TypeError(f"allocator {self.name!r} takes no options {sorted(options)}")
        self.topology = topology
        self._serials = count(1)
        self._live: dict[int, Allocation] = {}
        self.used = 0
        # request -> normalize(request): every normalize is a pure function of the request
        # and the topology, and the hot path asks it once per allocation attempt.
        self._normalized: dict[Request, Request] = {}

    @property
    def name(self) -> str:
        return type(self).registry_name or type(self).__name__

    # ------------------------------------------------------------------ public API

    def allocate(self, request: Request) -> Allocation | None:
        """An allocation for ``request``, or None when nothing fits now.

        Raises :class:`RequestError` (and changes nothing) when the request can never fit.
        """
        req = self._normalized.get(request)
        if req is None:
            req = self._normalized[request] = self.normalize(request)
        pieces = self._allocate(req)
        if pieces is None:
            return None
        size = pieces[0].size if len(pieces) == 1 else sum(p.size for p in pieces)
        a = Allocation(tuple(pieces), req, size, self, next(self._serials))
        self._live[a.serial] = a
        self.used += size
        return a

    def release(self, allocation: Allocation) -> None:
        if not isinstance(allocation, Allocation) or allocation.owner is not self:
            raise AllocationError(f"{allocation!r} was not made by this {self.name} allocator")
        if self._live.get(allocation.serial) is None:
            raise AllocationError(f"{allocation!r} is not allocated (released twice?)")
        self._release(allocation.pieces)
        del self._live[allocation.serial]
        self.used -= allocation.size

    def normalize(self, request: Request) -> Request:
        """The request in the shape this allocator allocates; raises RequestError when it
        can never fit. The topology rounds counts up to a cube or the smallest submesh; an
        allocator with other rules (size-restricted, flat) overrides this."""
        return self.topology.normalize(request)

    @property
    def free_count(self) -> int:
        return self.topology.size - self.used

    @property
    def live(self) -> Iterable[Allocation]:
        return self._live.values()

    def busy_nodes(self) -> frozenset:
        return frozenset(n for a in self._live.values() for n in a.nodes)

    def free_nodes(self) -> frozenset:
        """The free nodes as this allocator's own structures see them."""
        raise NotImplementedError

    def rank_order(self, allocation: Allocation) -> tuple:
        """``allocation``'s nodes in rank order: increasing node id, as the daemon numbers a
        job's tasks (row-major on a mesh: a submesh in its own row-major order, scattered nodes
        as NETWORK.md 8.23 reads the text). A submesh given rotated (h x w for a w x h request)
        keeps the logical grid: logical (x, y) runs on the piece's (y, x). An allocator that maps
        ranks itself (the chapter-6 rules) overrides this."""
        req, pieces = allocation.request, allocation.pieces
        if (len(pieces) == 1 and isinstance(pieces[0], Submesh) and req.kind == "submesh"
                and req.a != req.b and (pieces[0].w, pieces[0].h) == (req.b, req.a)):
            p, width = pieces[0], self.topology.width
            return tuple((p.y + x) * width + p.x + y for y in range(req.b) for x in range(req.a))
        return tuple(sorted(allocation.nodes))

    # ------------------------------------------------------------------ policy hooks

    def _allocate(self, request: Request) -> tuple[Piece, ...] | None:
        raise NotImplementedError

    def _release(self, pieces: tuple[Piece, ...]) -> None:
        raise NotImplementedError


__all__ = ["Allocation", "Allocator", "AllocationError", "RequestError"]
