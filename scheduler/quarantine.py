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
        self.down._watchers.append(self._sync)
        self._sync()

    def _sync(self) -> None:
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

    def __repr__(self) -> str:
        return f"Quarantine({self.inner!r}, down={sorted(self.down)})"


def wrap(allocator: Allocator, down=()) -> Quarantine:
    return Quarantine(allocator, down)


__all__ = ["DownSet", "Quarantine", "wrap"]
