"""``mcemu submit / queue / cancel / workload / wait``: the jobs on the live cluster.

The cluster itself (``up``, ``down``, ``nodes``, ``node``) is :mod:`emulator.cli.cluster`,
which registers these sub-commands (``add_commands``) between ``nodes`` and ``node``; the
client, ``--key`` and the tables are :mod:`emulator.cli._client`.

``workload`` streams a synthetic workload (the simulator's generators, emulator.sim.workloads)
at its own arrival times in the cluster's time unit; ``--pattern`` makes every job a
communication pattern task (emulator.cli.net ``pattern_job``).

``wait`` polls the jobs until they are no longer queued or running; its exit status says how
they ended.
"""
from __future__ import annotations

import sys
import time
from types import SimpleNamespace

from emulator.cli import UsageError, print_json
from emulator.cli._client import FINISHED, client_options, connect, printable, ranges, table, use_key
from emulator.live import home as homemod

# lazy imports, measured on top of `mcemu --help`'s: the client, the workloads, the journal's
# reader and the pattern tasks (emulator.cli.net) inside the commands: `mcemu queue` builds the
# parser of this module alone (emulator.cli.COMMAND_MODULE) and imports what it uses


def _parse_request(args) -> dict:
    if args.cube is not None:
        return {"cube": args.cube}
    if args.shape:
        try:
            w, h = (int(x) for x in args.shape.lower().split("x"))
        except ValueError:
            raise UsageError(f"--shape must be WxH, got {args.shape!r}") from None
        if w < 1 or h < 1:
            raise UsageError(f"--shape {args.shape}: each side must be at least 1")
        return {"shape": [w, h]}
    return {"nodes": args.nodes}


def cmd_submit(args) -> int:
    from emulator.live.client import DaemonError  # lazy: the client (zmq, msgpack) 19 ms at every mcemu start-up

    from emulator.cli.net import pattern_job  # lazy: see the module's imports

    from emulator.cli.run import workdir  # lazy: see the module's imports

    request = _parse_request(args)
    own = args.task_command and not args.pattern
    if args.chdir and not own:
        raise UsageError("-D/--chdir goes with --command (a task that runs a program)")
    # a command runs where it was submitted, as srun's; a ready-made pattern task where it always did
    cwd = workdir(args.chdir) if own else None
    with connect(args) as c:
        command, runtime = pattern_job(args, request, c) if args.pattern else (args.task_command, args.runtime)
        if runtime is None:
            raise UsageError("--runtime is required (but for a --pattern job)")
        if runtime <= 0:
            raise UsageError(f"--runtime must be > 0, got {runtime}")
        try:
            jid = c.submit(request, runtime, args.name or "", command, args.burn, cwd=cwd)
        except DaemonError as e:
            raise UsageError(str(e)) from None
    if args.json:
        print_json({"job": jid})
    else:
        print(f"Submitted job {jid}")
    return 0


def cmd_queue(args) -> int:
    with connect(args) as c:
        q = c.queue(all=args.all)
    if args.json:
        print_json(q)
        return 0
    rows = []
    gang = q.get("gang")
    for j in q["jobs"]:
        row = (j["id"], j["name"], j.get("owner") or "-", j["state"], j["request_text"], j["allocation"] or "-",
               ranges(j["nodes"] or []) or "-", f"{j['submit']:.2f}",
               "" if j["start"] is None else f"{j['start']:.2f}", "" if j["end"] is None else f"{j['end']:.2f}",
               j["attempt"], j["reason"] or "")
        if gang:
            g = j.get("gang") or {}
            att = g.get("attained")
            row = row[:4] + (g.get("state", ""), "" if g.get("level") is None else g["level"],
                             "" if g.get("slots") is None else g["slots"],
                             "" if att is None else f"{att:.2f}") + row[4:]
        rows.append(row)
    cols = ["JOBID", "NAME", "OWNER", "STATE", "REQUEST", "ALLOCATION", "NODELIST", "SUBMIT", "START", "END", "ATT", "REASON"]
    if gang:
        cols[4:4] = ["SLOT", "LEVEL", "SLOTS", "ATTAINED"]
    table(f"now {q['now']:.2f}", cols, rows)
    return 0


def cmd_cancel(args) -> int:
    from emulator.live.client import DaemonError  # lazy: see cmd_submit

    with connect(args) as c:
        try:
            r = c.cancel(args.job)
        except DaemonError as e:
            raise UsageError(str(e)) from None
    if args.json:
        print_json(r)
    else:
        print(f"job {r['job']} cancelled")
    return 0


def workload_jobs(topology, n_jobs, load, size_dist=None, service=None, seed=0, service_mean=None):
    """The synthetic workload to stream, from emulator.sim.workloads (the simulator's generators):
    a list of {"at": model time, "request", "runtime", "name"}."""
    from emulator.sim import workloads  # lazy: 74 ms (numpy) at start-up of every mcemu command

    # what is not named is the run spec's default (emulator.sim.spec.WorkloadSpec), not a copy here
    kw = {k: v for k, v in (("service_dist", service), ("service_mean", service_mean)) if v is not None}
    jobs = workloads.generate(topology, load, size_dist, seed=seed, jobs=n_jobs, **kw)
    return [{"at": j.submit, "request": j.request.to_dict(), "runtime": j.runtime, "name": j.name or f"w{j.id}"}
            for j in jobs]


def cmd_workload(args) -> int:
    with connect(args) as c:
        st = c.status()
        jobs = workload_jobs(st["config"]["topology"], args.jobs, args.load, args.size_dist, args.service, args.seed,
                             args.service_mean)
        unit = st["config"]["time_unit"]
        tasks = _pattern_tasks(args, jobs, c) if args.pattern else [(None, j["runtime"]) for j in jobs]
        t0 = time.monotonic()
        ids = []
        for j, (command, runtime) in zip(jobs, tasks):
            delay = t0 + j["at"] * unit - time.monotonic()
            if delay > 0:
                time.sleep(delay)  # streaming at the workload's own arrival times
            j["runtime"] = runtime
            ids.append(c.submit(j["request"], runtime, j.get("name", ""), command=command))
            if not args.json:
                print(f"submitted job {ids[-1]} {j['request']} runtime {j['runtime']:.3g}", flush=True)
    if args.json:
        print_json({"jobs": ids, "submitted": len(ids)})
    return 0


def _pattern_tasks(args, jobs, client) -> list:
    """``workload --pattern``: every job runs the ready-made pattern task (emulator.cli.net
    ``pattern_job``), its run time set by its messages; all checked before the first submit
    (a pattern that does not fit a drawn shape is a one-line error, nothing is submitted)."""
    from emulator.cli.net import pattern_job  # lazy: see the module's imports

    out = []
    for i, j in enumerate(jobs):
        a = SimpleNamespace(pattern=args.pattern, mtbs=args.mtbs, iterations=args.iterations, warmup=args.warmup,
                            seed=args.seed * 1_000_003 + i, group=None, runtime=None)
        try:
            out.append(pattern_job(a, j["request"], client))
        except UsageError as e:
            raise UsageError(f"job {i + 1} of the stream ({j['request']}): {e}") from None
    return out


WAIT_POLL = 0.2  # seconds between two looks at the jobs


def cmd_wait(args) -> int:
    """Block until the jobs finish; 0 when all completed, 1 when any failed or was cancelled,
    2 on a usage error (an unknown job, no cluster), 3 when ``--timeout`` passed first. The
    daemon may die and be restarted meanwhile (recovery): the wait goes on."""
    from emulator.live.client import Client, ClientTimeout  # lazy: see cmd_submit

    if args.timeout is not None and args.timeout <= 0:
        raise UsageError(f"--timeout must be > 0 seconds, got {args.timeout}")
    deadline = None if args.timeout is None else time.monotonic() + args.timeout
    home = None if args.connect else homemod.home_dir()
    use_key(args)
    c = Client(args.connect or None, timeout=5.0)
    try:
        try:
            if args.jobs:
                ids = sorted(set(args.jobs))
                known = {j["id"] for j in c.queue(jobs=ids)["jobs"]}
                if set(ids) - known:
                    raise UsageError(f"no such job: {ranges(set(ids) - known)}")
            else:
                ids = sorted(j["id"] for j in c.queue()["jobs"])
        except ClientTimeout as e:
            raise UsageError(str(e)) from None
        jobs = _wait_until_finished(c, ids, deadline, home)
    finally:
        c.close()
    return _report_wait(args, ids, jobs)


def _wait_until_finished(c, ids: list[int], deadline: float | None, home) -> list[dict]:
    """Poll the jobs until all are finished or the deadline passed; the last answer (empty
    when the daemon did not answer since the deadline). A daemon that does not answer is
    waited for while its cluster may still be recovering."""
    from emulator.live.client import ClientTimeout

    jobs, told = [], False
    while ids:
        try:
            jobs = c.queue(jobs=ids)["jobs"]
            if told:
                print("mcemu wait: the daemon answers again", file=sys.stderr)
                told = False
        except ClientTimeout:
            if stopped(home):
                raise UsageError(f"the cluster in {home} was stopped before jobs "
                                 f"{ranges(ids)} finished") from None
            if not told:
                print("mcemu wait: the daemon does not answer (restarting?); still waiting", file=sys.stderr)
                told = True
            jobs = []
        if jobs and all(j["state"] in FINISHED for j in jobs):
            break
        if deadline is not None and time.monotonic() >= deadline:
            break
        time.sleep(WAIT_POLL if deadline is None else max(0.0, min(WAIT_POLL, deadline - time.monotonic())))
    return jobs


def stopped(home) -> bool:
    """The cluster of ``home`` (None: a daemon of another host, which cannot be told) was
    stopped for good (``mcemu down``: no daemon, its journal closed), not merely restarting:
    a command that follows its jobs has nothing more to wait for."""
    from emulator.live.recovery import pending_meta  # lazy: the journal's reader, 5 ms

    return home is not None and homemod.read_pidfile(home / "daemon.pid") is None and not pending_meta(home)


def _report_wait(args, ids: list[int], jobs: list[dict]) -> int:
    counts: dict[str, int] = {}
    for j in jobs:
        counts[j["state"]] = counts.get(j["state"], 0) + 1
    active = [j["id"] for j in jobs if j["state"] not in FINISHED]
    if not jobs and ids:  # the daemon never answered again before the deadline
        active = ids
    code = 3 if active else (1 if any(j["state"] != "completed" for j in jobs) else 0)
    if args.json:
        print_json({"jobs": [{k: j.get(k) for k in ("id", "name", "state", "exit", "reason", "attempt")}
                             for j in jobs], "states": counts, "timed_out": bool(active), "exit": code})
    elif not ids:
        print("no job queued or running: nothing to wait for")
    else:
        for j in jobs:
            if j["state"] != "completed":
                why = printable(j.get("reason")) or (f"exit {j['exit']}" if j.get("exit") else "")
                print(f"job {j['id']} {j['state']}" + (f": {why}" if why else ""))
        summary = ", ".join(f"{n} {st}" for st, n in sorted(counts.items()))
        print(f"{len(ids)} jobs: {summary}" + (f"; still active at the timeout: {ranges(active)}" if active else ""))
    return code


def add_commands(sub) -> None:
    _submit_parser(sub)

    p = sub.add_parser("queue", help="waiting and running jobs (like squeue)")
    p.add_argument("--all", action="store_true", help="include finished jobs")
    client_options(p)
    p.set_defaults(func=cmd_queue)

    p = sub.add_parser("cancel", help="cancel a job")
    p.add_argument("job", type=int)
    client_options(p)
    p.set_defaults(func=cmd_cancel)

    p = sub.add_parser("workload", help="stream a synthetic Poisson workload into the running cluster",
                       description="Submit N jobs with Poisson arrivals in real time (the cluster's time unit), "
                                   "sizes and run times drawn as `mcemu simulate` draws them; `mcemu policies` "
                                   "lists the distributions.")
    p.add_argument("--jobs", type=int, required=True, help="how many jobs to submit")
    p.add_argument("--load", type=float, required=True,
                   help="offered load: arrival rate x mean size x mean service / machine size (e.g. 0.8)")
    p.add_argument("--size-dist", help="job size distribution (default: uniform on a cube, processors on a mesh)")
    p.add_argument("--service", help="service time distribution (default uniform)")
    p.add_argument("--service-mean", type=float, help="mean service time in model units (default 5)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the stream (default 0)")
    p.add_argument("--pattern", help="every job runs this communication pattern (`mcemu submit --pattern`; needs "
                                     "`up --network wormhole`): its run time comes from its messages")
    p.add_argument("--mtbs", type=float, default=0.0, help="--pattern: mean time between sends, network us (0)")
    p.add_argument("--iterations", type=int, default=100, help="--pattern: measured messages per path (100)")
    p.add_argument("--warmup", type=int, help="--pattern: messages per path before those measured (a tenth)")
    client_options(p)
    p.set_defaults(func=cmd_workload)

    p = sub.add_parser("wait", help="block until jobs finish; the exit status says how they ended",
                       description="Wait for the given jobs (default: every job queued or running now) to finish. "
                                   "Exit status: 0 every job completed, 1 some failed or were cancelled, 2 a usage "
                                   "error (no such job, no cluster), 3 --timeout passed with jobs still queued or "
                                   "running. A daemon that dies and is restarted meanwhile (`mcemu up`) is waited for.")
    p.add_argument("jobs", type=int, nargs="*", metavar="JOB", help="job ids (default: every active job)")
    p.add_argument("--timeout", type=float, help="give up after this many seconds (exit status 3)")
    p.add_argument("--connect", help="daemon endpoint (default: MCEMU_HOME's ipc socket)")
    p.add_argument("--key", help="credential file for a tcp daemon (`mcemu keys issue`; default: MCEMU_KEY)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=cmd_wait)


def _submit_parser(sub) -> None:
    p = sub.add_parser("submit", help="submit one job")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--cube", type=int, help="a K-cube (on a hypercube)")
    g.add_argument("--shape", help="a WxH submesh (on a mesh)")
    g.add_argument("--nodes", "-n", type=int, help="a processor count (-n: sbatch's and mpiexec's name)")
    p.add_argument("--runtime", type=float, help="run time in model time units (required without --pattern)")
    p.add_argument("--name")
    p.add_argument("--pattern", help="a ready-made task that runs this communication pattern (transpose, "
                                     "diagonal, ring, ...; needs --shape and a cluster with --network)")
    p.add_argument("--mtbs", type=float, default=0.0, help="--pattern: mean time between sends, network us (0)")
    p.add_argument("--iterations", type=int, default=100, help="--pattern: measured messages per path (100)")
    p.add_argument("--warmup", type=int, default=None,
                   help="--pattern: messages per path before those measured (default a tenth of --iterations)")
    p.add_argument("--seed", type=int, default=0, help="--pattern: seed of the computation times (0)")
    p.add_argument("--group", help="--pattern: keep sending (unmeasured) until every job of this group is done, "
                                   "as `mcemu net simulate` keeps every path sending")
    p.add_argument("--command", dest="task_command", help="shell command each task runs (default: a synthetic task)")
    p.add_argument("-D", "--chdir", metavar="DIR", help="--command: the tasks' working directory on their nodes "
                                                        "(default: this one, as srun's)")
    p.add_argument("--burn", action="store_true", help="synthetic task burns CPU instead of sleeping")
    client_options(p)
    p.set_defaults(func=cmd_submit)
