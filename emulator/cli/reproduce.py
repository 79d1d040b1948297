"""``mcemu reproduce``: re-run a figure or table of the papers (CSV, PNG, REPORT.md)."""
from __future__ import annotations

from emulator.cli import UsageError, print_json


def _list(args) -> int:
    from emulator import experiments  # lazy: 1.4 ms at start-up of every command that builds the whole parser

    exps = experiments.all_experiments()
    if args.json:
        print_json([{"name": e.name, "paper": e.paper, "figure": e.figure, "title": e.title} for e in exps])
        return 0
    from rich.console import Console  # lazy: Rich costs 14 ms at start-up of every mcemu command
    from rich.table import Table

    t = Table(show_header=True, header_style="bold")
    for col in ("experiment", "paper", "figure", "what"):
        t.add_column(col)
    for e in exps:
        t.add_row(e.name, e.paper, e.figure, e.title)
    Console().print(t)
    return 0


def run(args) -> int:
    # lazy: the runner (Rich's progress bar, the experiment outputs) costs 33 ms at start-up of
    # every mcemu command
    from emulator.experiments.runner import _jsonable, run_experiment

    if args.list:
        return _list(args)
    if not args.name:
        raise UsageError("give an experiment NAME (see `mcemu reproduce --list`)")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be >= 1")
    check_dask(args)
    from emulator import experiments  # lazy: see _list

    if args.name not in experiments.names():
        raise UsageError(f"unknown experiment {args.name!r}; known: {', '.join(experiments.names())}")
    exp = experiments.get(args.name)
    summary = run_experiment(exp, args.out, quick=args.quick, jobs=args.jobs, dask=args.dask,
                             dask_timeout=args.dask_timeout, progress=None if not args.json else False)
    if args.json:
        print_json(_jsonable(summary))
        return 0
    from rich.console import Console  # lazy: see _list

    c = Console()
    colour = {"agree": "green", "partly agree": "yellow", "disagree": "red",
              "inconclusive": "blue"}.get(summary["verdict"], "white")
    n = summary.get("counts") or {}
    c.print(f"[bold]{exp.name}[/] ({exp.paper}, {exp.figure}): verdict [{colour}]{summary['verdict']}[/] "
            f"({n.get('holds', 0)} hold, {n.get('fails', 0)} fail, {n.get('inconclusive', 0)} inconclusive)")
    for item in summary["checks"]:
        c.print(f"  {_mark(item)} {item['claim']}", highlight=False)
    print_runs(c, summary)
    return 0


def _mark(item: dict) -> str:
    """A sub-claim's mark (emulator.experiments.verdict): held, failed, inside the CIs, or not
    scored (the other reading of the text, a point the data cannot decide)."""
    if item.get("role", "claim") != "claim":
        return f"[dim]· ({item.get('role')}: {item.get('outcome')})[/]"
    return {"holds": "[green]✓[/]", "fails": "[red]✗[/]", "inconclusive": "[blue]~[/]"}.get(
        item.get("outcome"), "[dim]·[/]")


def print_runs(c, summary: dict, title: str = "") -> None:
    """What a reproduction or a sweep computed, where, and the files it wrote."""
    capped = sum(p["capped"] for p in summary["points"])
    c.print(f"{title}{len(summary['points'])} points, {summary['replications_computed']} runs computed in "
            f"{summary['wall_seconds']:.1f} s on {summary['executor']}"
            + (f", {capped} point(s) at the replication cap" if capped else ""), highlight=False)
    for k in ("REPORT.md", "figure.png", "results.csv"):
        c.print(f"  {summary['outputs'][k]}", highlight=False)


def check_dask(args) -> None:
    """``--dask``/``--jobs``/``--dask-timeout`` checked before anything runs (reproduce, sweep)."""
    from emulator.experiments.executors import check_dask_address  # lazy: 9 ms at start-up of every mcemu command

    if args.dask is not None:
        if args.jobs is not None:
            raise UsageError("--jobs is the local pool's; with --dask the cluster's workers run the replications")
        check_dask_address(args.dask)
    if not args.dask_timeout > 0:
        raise UsageError("--dask-timeout must be > 0 seconds")


def add_dask_options(p) -> None:
    p.add_argument("--dask", default=None, metavar="ADDRESS",
                   help="run the replications on a Dask cluster: a scheduler address (tcp://HOST:PORT) or "
                        "local:N (start N local workers); needs pip install 'mcemu[dask]'")
    p.add_argument("--dask-timeout", type=float, default=10.0, metavar="SEC",
                   help="seconds to wait for the Dask scheduler (default 10)")


def add_commands(sub) -> None:
    p = sub.add_parser("reproduce", help="re-run a figure or table of the papers: CSV, PNG plot, report",
                       description="Run one experiment of the papers in the simulator, with "
                                   "replications until the 95%% confidence half-width is within 5%% "
                                   "of the mean, and write DIR/NAME/{results.csv,figure.png,REPORT.md}. "
                                   "Finished replications are kept in DIR/NAME/runs.jsonl, so an "
                                   "interrupted run resumes.")
    p.add_argument("name", nargs="?", metavar="NAME", help="experiment name (see --list)")
    p.add_argument("--out", default="results", metavar="DIR", help="output folder (default ./results)")
    p.add_argument("--quick", action="store_true", help="reduced grid, short runs: well under a minute")
    p.add_argument("--jobs", type=int, default=None, metavar="J", help="worker processes (default: every core)")
    add_dask_options(p)
    p.add_argument("--list", action="store_true", help="name every experiment with its paper and figure")
    p.add_argument("--json", action="store_true", help="print the results as one JSON document")
    p.set_defaults(func=run)
