"""``mcemu policies``: what is registered, by kind; which allocator is the default on which
topology (scheduler.allocators.DEFAULTS)."""
from __future__ import annotations

import importlib

from emulator.cli import print_json

KINDS = [
    ("allocators", "scheduler.allocators"),
    ("disciplines", "scheduler.disciplines"),
    ("reductions", "scheduler.reduction"),
    ("gang", "scheduler.gang"),
    ("size distributions", "emulator.sim.workloads"),
    ("service distributions", "emulator.sim.workloads"),
    ("communication patterns", "scheduler.network.patterns"),
]


def registries() -> dict:
    out = {}
    for label, modname in KINDS:
        try:
            mod = importlib.import_module(modname)
        except ModuleNotFoundError:
            continue
        reg = {"size distributions": "SIZE_DISTRIBUTIONS", "service distributions": "SERVICE_DISTRIBUTIONS",
               "communication patterns": "PATTERNS"}.get(label, "REGISTRY")
        r = getattr(mod, reg, None)
        if r is None:
            continue
        out[label] = {n: r.doc(n) for n in r.names()}
    return out


def _marked_defaults(regs: dict, defaults: dict) -> None:
    """Each default allocator's line says on which topology it is the default."""
    allocs = regs.get("allocators", {})
    for kind, name in defaults.items():
        if name in allocs:
            allocs[name] = f"(default on a {kind}) {allocs[name]}"


def run(args) -> int:
    regs = registries()
    allocs = importlib.import_module("scheduler.allocators")
    if args.json:
        data = {k: sorted(v) for k, v in regs.items()}
        data["allocator_topologies"] = {n: list(allocs.REGISTRY.get(n).kinds) for n in allocs.names()}
        data["allocator_defaults"] = dict(allocs.DEFAULTS)  # topology kind -> the allocator used when none is named
        print_json(data)
        return 0
    from rich.console import Console  # lazy: Rich costs 14 ms at start-up of every mcemu command
    from rich.table import Table
    from rich.text import Text

    _marked_defaults(regs, allocs.DEFAULTS)
    console = Console()
    for label, entries in regs.items():
        t = Table(title=label, title_justify="left", show_header=False, box=None, pad_edge=False)
        for n, doc in entries.items():
            t.add_row(Text(n, style="bold"), Text(doc))  # Text: a plugin's doc is not markup
        console.print(t)
        console.print()
    return 0


def add_commands(sub) -> None:
    p = sub.add_parser("policies", help="list registered allocators, disciplines, gang policies, workloads")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=run)
