"""Processor allocators, registered by name (DESIGN "Policy names").

Every module in this package that defines an allocator registers it with ``@register``;
the package imports them all, so adding a policy is adding one module.

    from scheduler import allocators
    alloc = allocators.create("buddy", "hypercube:6")
"""
from __future__ import annotations

import importlib
import pkgutil

from scheduler.registry import Registry, UnknownPolicy
from scheduler.topology import Topology, TopologyError, parse_topology
from scheduler.allocators.base import Allocation, AllocationError, Allocator

REGISTRY = Registry("allocator", base=Allocator)


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

__all__ = ["Allocation", "AllocationError", "Allocator", "REGISTRY", "UnknownPolicy", "create",
           "names", "register"]
