"""``mcemu policies``: what is registered, by kind."""
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


def run(args) -> int:
    regs = registries()
    if args.json:
        allocs = importlib.import_module("scheduler.allocators")
        data = {k: sorted(v) for k, v in regs.items()}
        data["allocator_topologies"] = {n: list(allocs.REGISTRY.get(n).kinds) for n in allocs.names()}
        print_json(data)
        return 0
    from rich.console import Console  # lazy: Rich costs 14 ms at start-up of every mcemu command
    from rich.table import Table

    console = Console()
    for label, entries in regs.items():
        t = Table(title=label, title_justify="left", show_header=False, box=None, pad_edge=False)
        for n, doc in entries.items():
            t.add_row(f"[bold]{n}[/]", doc)
        console.print(t)
        console.print()
    return 0


def add_commands(sub) -> None:
    p = sub.add_parser("policies", help="list registered allocators, disciplines, gang policies, workloads")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=run)
