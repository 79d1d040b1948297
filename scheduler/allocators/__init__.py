"""Processor allocators, registered by name (DESIGN "Policy names").

Every module in this package that defines an allocator registers it with ``@register``;
the package imports them all, so adding a policy is adding one module.

    from scheduler import allocators
    alloc = allocators.create("buddy", "hypercube:6")
    allocators.default("mesh:8x8")   # "first-fit": what a front end uses when none is named
"""
from __future__ import annotations

import importlib
import pkgutil

from scheduler.registry import Registry, UnknownPolicy
from scheduler.topology import Topology, TopologyError, parse_topology
from scheduler.allocators.base import Allocation, AllocationError, Allocator

REGISTRY = Registry("allocator", base=Allocator)

# The allocator of every front end (mcemu up / demo / simulate, the stack) when none is named,
# by topology kind. A hypercube: the buddy strategy, the lazy paper's. A mesh: Zhu's first fit,
# the dissertation's chapter-8 allocator: complete submesh recognition on any W x H (buddy-2d
# needs a 2^n x 2^n mesh and square jobs), contiguous, so the lowest message delay at every
# load (docs/results/net-jobs: 54 us against 92-98 for naive), and without size reduction a
# shorter turnaround than frame sliding (docs/results/rsr-fig3, net-jobs).
DEFAULTS = {"hypercube": "buddy", "mesh": "first-fit"}


def register(name: str):
    """Class decorator: ``@register("buddy")``."""
    return REGISTRY.register(name)


def create(name: str, topology: Topology | str, **options) -> Allocator:
    """A new allocator ``name`` on ``topology``; an unknown name or a topology the
    allocator cannot serve is a clear error."""
    topo = parse_topology(topology)
    cls = REGISTRY.get(name)
    if topo.kind not in getattr(cls, "kinds", ()):
        fits = ", ".join(names(topo))
        raise TopologyError(f"allocator {name!r} does not work on {topo}; for it use one of: {fits}")
    return cls(topo, **options)


def default(topology: Topology | str) -> str:
    """The allocator used on ``topology`` when none is named (``DEFAULTS``)."""
    return DEFAULTS[parse_topology(topology).kind]


def names(topology: Topology | str | None = None) -> list[str]:
    """Registered names, or only those that work on ``topology``."""
    if topology is None:
        return REGISTRY.names()
    topo = parse_topology(topology)
    return [n for n in REGISTRY.names() if topo.kind in getattr(REGISTRY.get(n), "kinds", ())]


def _load_all() -> None:
    for mod in pkgutil.iter_modules(__path__):
        if mod.name != "base" and not mod.name.startswith("_"):
            importlib.import_module(f"{__name__}.{mod.name}")


_load_all()

__all__ = ["Allocation", "AllocationError", "Allocator", "DEFAULTS", "REGISTRY", "UnknownPolicy", "create",
           "default", "names", "register"]
