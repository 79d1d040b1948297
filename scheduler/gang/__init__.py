"""Gang policies (coscheduling), registered by name (DESIGN "Policy names").

The paper is Zhou, Brent and Qu, "An Efficient Scheduling Algorithm for Multiprogramming on
Parallel Computing Systems" (ACSC 1997; papers/multilevel-two-queue-coscheduling.txt).
Every policy is an office manager (:mod:`scheduler.gang.office`): it owns the registration
office, places jobs in up to ``mpl`` rows of an Ousterhout matrix with a registered
allocator, and moves the servant pointer P from slot to slot.

    from scheduler import gang
    g = gang.create("multilevel", "hypercube:4", allocator="buddy", mpl=4)

Driver interface (the simulator emulator.sim.gang and the live daemon drive it the same way;
time is always an argument, decisions are return values):

    arrive(job, now)    -> [Start]            check in (placed in a row) or queue for memory;
                                              a one-node job goes to a node's local queue
    depart(job_id, now) -> [Finish, Start..]  check out; frees nodes, may place waiting jobs
    cancel(job_id, now) -> [Finish, ...]
    retry(now)          -> [Start, ...]       nodes came back into service: place again
    tick(now)           -> [SlotSwitch]       the slot timer: P moves, jobs are dispatched
    next_wakeup()       -> time | None        call tick(now) when now >= this
    snapshot()          -> dict (JSON-able): rows, office order, P, each job's level, f,
                           slots and attained service, waiting and local jobs

A SlotSwitch says which jobs run (``running``, also ``by_row``) and which are kept in
(``suspended``) from ``time`` until ``until``; a node runs the task of the running job
allocated on it. Per-node lists: ``policy.office.list_on(node)``.

Registered: ``none``, ``round-robin``, ``two-queue``, ``modified-two-queue``,
``multilevel``, ``fb``. Bad parameters raise :class:`GangError`; an unknown name raises
UnknownPolicy listing the names.
"""
from __future__ import annotations

import importlib
import pkgutil

from scheduler.registry import Registry, UnknownPolicy
from scheduler.decisions import Finish, SlotSwitch, Start
from scheduler.gang.office import GangError, GangJob, OfficeError, OfficeManager, RegistrationOffice

REGISTRY = Registry("gang policy", base=OfficeManager)


def register(name: str):
    return REGISTRY.register(name)


def create(name: str, topology, allocator: str = "naive", **params) -> OfficeManager:
    """A new gang policy ``name`` on ``topology``; rows use the allocator ``allocator``."""
    return REGISTRY.get(name)(topology, allocator, **params)


def names() -> list[str]:
    return REGISTRY.names()


def _load_all() -> None:
    for mod in pkgutil.iter_modules(__path__):
        if mod.name not in ("office", "registration") and not mod.name.startswith("_"):
            importlib.import_module(f"{__name__}.{mod.name}")


_load_all()

__all__ = ["Finish", "GangError", "GangJob", "OfficeError", "OfficeManager", "REGISTRY",
           "RegistrationOffice", "SlotSwitch", "Start", "UnknownPolicy", "create", "names",
           "register"]
