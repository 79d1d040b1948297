"""``mcemu sweep [GRID.toml]``: a user's own sweep (emulator.sweep), from a TOML file, flags, or
both (a flag overrides the file's key). Every setting is checked, and every stack and workload
built once, before the first run: a malformed file or an unknown policy is a one-line error."""
from __future__ import annotations

from emulator.cli import UsageError, print_json
from emulator.cli.reproduce import add_dask_options, check_dask, print_runs

# flag -> (settings key, type of one value); an axis flag takes a comma list or repeats
AXIS_FLAGS = {"topology": str, "allocator": str, "scheduler": str, "reduction": str, "gang": str,
              "load": float, "size": str, "service": str, "service_mean": float, "demand": str}
VALUE_FLAGS = {"name": str, "time": float, "completions": int, "warmup": int, "trace": str, "time_unit": float,
               "limit": int, "precision": float, "min_reps": int, "max_reps": int, "metric": str, "x": str}
VALUE_HELP = {"name": "output folder DIR/NAME (default: the file's stem, else 'sweep')",
              "time": "observation time of one run (time units)", "completions": "or: stop a run after N completions",
              "warmup": "completions not counted (with --completions)", "trace": "replay this SWF log instead",
              "time_unit": "seconds of the trace per time unit", "limit": "the trace's first N jobs",
              "precision": "stop when the 95%% half-width is within this share of the mean (0.05)",
              "min_reps": "at least this many replications (3)", "max_reps": "at most this many (30)",
              "metric": "the figure's metric (mean_queueing_delay)", "x": "the figure's x axis (load)"}


def _axis_values(flag: str, items: list[str], kind) -> list:
    out = []
    for item in items:
        for part in item.split(","):
            part = part.strip()
            if not part:
                raise UsageError(f"--{flag.replace('_', '-')}: an empty value in {item!r}")
            try:
                out.append(kind(part))
            except ValueError:
                raise UsageError(f"--{flag.replace('_', '-')}: not a number: {part!r}") from None
    return out


def settings_from(args) -> dict:
    """The file's settings (if any) with the flags given laid over them."""
    from emulator.sweep import load_toml  # lazy: 186 ms at start-up of every mcemu command (measured)

    data = load_toml(args.grid) if args.grid else {}
    for flag, kind in AXIS_FLAGS.items():
        items = getattr(args, flag)
        if items:
            vals = _axis_values(flag, items, kind)
            data[flag] = vals if len(vals) > 1 else vals[0]
    for flag in VALUE_FLAGS:
        v = getattr(args, flag)
        if v is not None:
            data[flag] = v
    if args.seeds is not None:
        data["seeds"] = _axis_values("seeds", [args.seeds], int) if "," in args.seeds else _int(args.seeds)
        for k in ("min_reps", "max_reps", "precision"):  # the file's stopping rule gives way
            if getattr(args, k) is None:
                data.pop(k, None)
    if args.stop_on:
        data["stop_on"] = _axis_values("stop_on", args.stop_on, str)
    if args.metrics:
        data["metrics"] = _axis_values("metrics", args.metrics, str)
    if args.param:
        from scheduler.stack import parse_params  # lazy: 43 ms (every policy registry), as above

        table = dict(data.get("params") or {})
        table.update(parse_params(args.param))
        data["params"] = table
    return data


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"--seeds must be a count or a comma list of seeds, got {text!r}") from None


def run(args) -> int:
    from emulator.sweep import Sweep, run_sweep  # lazy: see settings_from

    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be >= 1")
    check_dask(args)
    data = settings_from(args)
    if not data:
        raise UsageError("give a GRID.toml or the sweep's flags (see mcemu sweep --help)")
    sweep = Sweep.from_dict(data)
    out = args.out or data.get("out") or "sweeps"
    if not isinstance(out, str):
        raise UsageError(f"out must be a folder name, got {out!r}")
    summary = run_sweep(sweep, out, jobs=args.jobs, dask=args.dask, dask_timeout=args.dask_timeout,
                        progress=None if not args.json else False)
    if args.json:
        print_json(summary)
        return 0
    from rich.console import Console  # lazy: 14 ms at start-up of every mcemu command

    print_runs(Console(), summary, f"[bold]{sweep.name}[/]: ")
    return 0


def add_commands(sub) -> None:
    p = sub.add_parser(
        "sweep", help="your own sweep (policies x loads x ...): CSV, figure, report",
        description="Sweep your own grid in the simulator: every combination of the axes (topologies, "
                    "allocators, disciplines, reductions, gang policies, loads, workload distributions), "
                    "replicated until the 95% CI half-width is within a precision of the mean (or a cap), "
                    "or a fixed number of seeds. Writes DIR/NAME/{results.csv,figure.png,REPORT.md,"
                    "sweep.toml}; finished runs are kept in runs.jsonl, so an interrupted sweep resumes. "
                    "Axis flags take a comma list (--scheduler lazy,scan-up --load 0.1,0.5,0.9); a flag "
                    "overrides the same key of GRID.toml.",
        epilog="Example: mcemu sweep --topology hypercube:10 --scheduler lazy,scan-up,fcfs "
               "--load 0.1,0.3,0.5,0.7,0.9 --time 2000 --seeds 5 --name lazy-vs-scan")
    p.add_argument("grid", nargs="?", metavar="GRID.toml", help="the sweep's settings (see README, Sweeps)")
    for flag, kind in AXIS_FLAGS.items():
        p.add_argument(f"--{flag.replace('_', '-')}", dest=flag, action="append", metavar="V[,V...]",
                       help=f"{flag} axis" + (" (numbers)" if kind is float else ""))
    for flag, kind in VALUE_FLAGS.items():
        p.add_argument(f"--{flag.replace('_', '-')}", dest=flag, type=kind, default=None, help=VALUE_HELP[flag],
                       metavar=flag.upper())
    p.add_argument("--seeds", default=None, metavar="N|S,S,...", help="exactly N replications, or these seeds")
    p.add_argument("--stop-on", action="append", metavar="METRIC", help="metrics of the stopping rule")
    p.add_argument("--metrics", action="append", metavar="METRIC", help="metrics written to results.csv")
    p.add_argument("--param", action="append", metavar="KEY=VALUE", help="a policy parameter, for every policy")
    p.add_argument("--out", default=None, metavar="DIR", help="output folder (default: the file's out, else ./sweeps)")
    p.add_argument("--jobs", type=int, default=None, metavar="J", help="local worker processes (default: every core)")
    add_dask_options(p)
    p.add_argument("--json", action="store_true", help="print the results as one JSON document")
    p.set_defaults(func=run)
