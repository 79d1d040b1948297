"""The experiments of ``mcemu reproduce``, registered by name: one module per paper.

    from emulator import experiments
    experiments.names()            # every experiment
    experiments.get("lazy-fig3")   # an emulator.experiments.runner.Experiment

A user's own experiment registers with ``experiments.register(Experiment(...))``.
"""
from __future__ import annotations

import importlib

from scheduler.registry import Registry, UnknownPolicy

REGISTRY = Registry("experiment")
MODULES = ("lazy", "rsr", "dissertation", "nasa", "gang", "network")
_loaded = False


def register(exp):
    """Register an :class:`emulator.experiments.runner.Experiment` under its name; returns it."""
    REGISTRY.register(exp.name, exp, doc=f"{exp.paper}, {exp.figure}: {exp.title}")
    return exp


def _load() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        for m in MODULES:
            importlib.import_module(f"{__name__}.{m}")


def get(name: str):
    _load()
    return REGISTRY.get(name)


def names() -> list[str]:
    _load()
    return REGISTRY.names()


def all_experiments() -> list:
    """Every experiment in the order of the modules (papers), then registration order."""
    _load()
    return [REGISTRY.get(n) for n in REGISTRY._factories]


__all__ = ["REGISTRY", "register", "get", "names", "all_experiments", "UnknownPolicy"]
