"""Quarantine: an allocator wrapper that never hands out a node that is down.

The live daemon marks a node down when it misses its heartbeats; the allocators (written per
paper, knowing nothing of failures) must then never place a job on it. This wrapper sits
between the discipline (or size reduction) and the allocator. ``allocate`` asks the inner
allocator; an allocation that contains a down node is *held* (kept allocated, so that the
inner allocator offers something else) and the inner allocator is asked again, until it
returns a healthy allocation or nothing. At the end of the call every hold is released again,
in reverse order, so the inner allocator is left exactly as if only the healthy allocation
(if any) had been made.

Why per-call holds and not holds kept until the node comes back: a held block may be far
larger than the down node (a buddy system asked for the whole machine holds all of it), and
keeping it would starve smaller jobs that fit around the down node. Re-holding at each call
costs at most one extra allocate/release per block that contains a down node. Determinism is
kept: the result depends only on the inner allocator's state and the down set, which is what
the daemon's journal replays.

``unavailable(request)`` tells a request that cannot be placed *at all* while the down nodes
are out (Slurm's ``ReqNodeNotAvail``) from one that waits for busy nodes: it asks a fresh,
empty allocator of the same kind the way ``allocate`` asks the real one, holding every block
that contains a down node, so the allocator's own structures decide (on a 3-cube with nodes 1
and 5 down the buddy system has no 2-cube left, though 6 nodes are up). The disciplines set
such a job aside as *held* (scheduler.disciplines.base) until a node comes back. The answer
depends only on the request and the down set, and is remembered until the set changes.

Pure: no I/O, no clock. Drivers change the down set through ``scheduler.stack.Stack``
(``mark_down``; ``mark_up`` then calls the policy's ``retry`` so that nodes that came back are
used); the set is shared by every quarantine of a stack (a gang policy has one per row).
"""
from __future__ import annotations

from scheduler.allocators.base import Allocation, Allocator


class DownSet(set):
    """The nodes out of service, shared by every quarantine of one stack (a gang policy has one
    per row). Every change tells each quarantine, which then drops or takes back its fast
    path."""

    __slots__ = ("_watchers",)

    def __init__(self, nodes=()):
        super().__init__(nodes)
        self._watchers: list = []

    def _changed(self) -> None:
        for w in self._watchers:
            w()


def _telling(name: str):
    change = getattr(set, name)

    def method(self, *args):
        out = change(self, *args)  # the in-place operators return the set itself
        self._changed()
        return out

    method.__name__ = name
    return method


for _name in ("add", "discard", "remove", "pop", "clear", "update", "difference_update",
              "intersection_update", "symmetric_difference_update", "__ior__", "__iand__", "__isub__",
              "__ixor__"):
    setattr(DownSet, _name, _telling(_name))


class Quarantine:
    """Wraps an allocator; everything except ``allocate`` is the inner allocator's."""

    def __init__(self, inner: Allocator, down=()):
        self.inner = inner
        # a DownSet is shared, not copied: a gang policy's rows and the stack see one down set
        self.down: DownSet = down if isinstance(down, DownSet) else DownSet(down)
        self._unavailable: dict = {}  # normalized request -> bool, for the current down set
        self.down._watchers.append(self._sync)
        self._sync()

    def _sync(self) -> None:
        self._unavailable.clear()
        # While no node is down, allocate and release are the inner allocator's own bound
        # methods (instance attributes shadow the class's): a simulation never has a down
        # node, and the extra call per allocation cost it 3-4% of its events per second.
        if self.down:
            self.__dict__.pop("allocate", None)
            self.__dict__.pop("release", None)
        else:
            self.allocate = self.inner.allocate
            self.release = self.inner.release

    # the attributes the disciplines read at every scheduling pass, without the cost of a
    # failed lookup that __getattr__ pays (scan-up ran 10% slower through the wrapper)
    free_count = property(lambda self: self.inner.free_count)
    used = property(lambda self: self.inner.used)

    def normalize(self, request):
        return self.inner.normalize(request)

    def __getattr__(self, name):
        # Only called for attributes not found here: the rest of the inner allocator's API
        # (free_nodes, live, topology, kinds, ...), whatever the allocator adds.
        return getattr(self.inner, name)

    def mark_down(self, node: int) -> None:
        self.inner.topology.check_node(node)
        self.down.add(node)

    def mark_up(self, node: int) -> None:
        self.inner.topology.check_node(node)
        self.down.discard(node)

    def allocate(self, request) -> Allocation | None:
        held: list[Allocation] = []
        try:
            while True:
                a = self.inner.allocate(request)
                if a is None or self.down.isdisjoint(a.nodes):
                    return a
                held.append(a)
        finally:
            for h in reversed(held):
                self.inner.release(h)

    def release(self, allocation: Allocation) -> None:
        self.inner.release(allocation)

    def unavailable(self, request) -> bool:
        """Whether ``request`` (one that fits the machine: ``normalize`` raises otherwise)
        cannot be allocated even with no job running, because of the down nodes: a fresh
        empty allocator of the inner allocator's kind is asked as ``allocate`` asks, every
        block with a down node kept, until a healthy block or nothing. False while no node is
        down."""
        if not self.down:
            return False
        key = self.inner.normalize(request)
        r = self._unavailable.get(key)
        if r is None:
            try:
                probe = type(self.inner)(self.inner.topology)
            except TypeError:  # an allocator built with options of its own: never hold
                return False
            down = self.down
            while True:
                a = probe.allocate(key)
                if a is None or down.isdisjoint(a.nodes):
                    break  # the blocks with a down node stay allocated: the probe is thrown away
            r = self._unavailable[key] = a is None
        return r

    def __repr__(self) -> str:
        return f"Quarantine({self.inner!r}, down={sorted(self.down)})"


def held_reason(request, down) -> str:
    """The reason a job is held while ``down`` nodes are out (Slurm's ``ReqNodeNotAvail``)."""
    down = sorted(down or ())
    shown = ", ".join(map(str, down[:8])) + (f" +{len(down) - 8} more" if len(down) > 8 else "")
    return f"ReqNodeNotAvail: no {request} without a down node (down: {shown})"


def wrap(allocator: Allocator, down=()) -> Quarantine:
    return Quarantine(allocator, down)


__all__ = ["DownSet", "Quarantine", "wrap"]
