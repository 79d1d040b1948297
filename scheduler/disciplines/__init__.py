"""Job-scheduling disciplines, registered by name (DESIGN "Policy names").

Every module here registers its discipline with ``@register``; the package imports them all.

    from scheduler import allocators, disciplines
    alloc = allocators.create("buddy", "hypercube:10")
    d = disciplines.create("lazy", alloc.topology, alloc)
"""
from __future__ import annotations

import importlib
import pkgutil

from scheduler.registry import Registry, UnknownPolicy
from scheduler.disciplines.base import Discipline, DisciplineError

REGISTRY = Registry("discipline", base=Discipline)


def register(name: str):
    return REGISTRY.register(name)


def create(name: str, topology, allocator, **params) -> Discipline:
    return REGISTRY.get(name)(topology, allocator, **params)


def names() -> list[str]:
    return REGISTRY.names()


def _load_all() -> None:
    for mod in pkgutil.iter_modules(__path__):
        if mod.name != "base" and not mod.name.startswith("_"):
            importlib.import_module(f"{__name__}.{mod.name}")


_load_all()

__all__ = ["Discipline", "DisciplineError", "REGISTRY", "UnknownPolicy", "create", "names", "register"]
