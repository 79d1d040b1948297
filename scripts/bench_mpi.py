"""Benchmark of mpi4py programs on the live cluster (issue 28): ``python scripts/bench_mpi.py``.

Prints, with its method, on this machine:

(a) messages per second through the interconnect with 64 ranks: a mesh:8x8 cluster with
    ``--network wormhole --net-time virtual``, one 64-rank job (``--shape 8x8``) per kernel of
    scripts/mpi_kernels.py: ping-pong (32 pairs of neighbours, ``Send``/``Recv``) and all-to-all
    (``Alltoall``: 63 messages from every rank an iteration, nodes.mpi.collectives says in
    which order), each with 8-byte and 64 KiB messages. The 8-byte all-to-all runs 20
    iterations: with 5 the first (the matchers made, each code path's first use) weighed so
    much that the same build gave 13,000-14,000 messages/s against 20,000 with 20. The rate is the kernel's own: its messages (barriers not
    counted) over the slowest rank's wall time around the loop (``time.perf_counter`` between
    a ``Barrier`` before it and one after it, reported by rank 0). Beside it, the job's: the
    interconnect's message count for the job (``comm`` of ``mcemu queue --json``: barriers and
    the final gather included) over the job's wall time from start to end (the 64 processes'
    start-up, numpy's import, included);
(b) wall seconds per 1,000 virtual-time messages: 1000 x the loop's wall time / its messages
    (the same runs), with where those seconds went: the ranks' CPU (summed over the 64 ranks,
    in the loop) and the interconnect's (its process's CPU time over the job, psutil);
(c) the slowdown of the Jacobi example (docs/examples/jacobi.py, 16 ranks, ``--shape 4x4``):
    the job's wall time (start to end) / its ranks' summed CPU time (user + system, the job's
    ``usage``), and the same against that CPU time spread over min(16, cores) cores (the
    shortest wall time the host could give it); its ``MPI.Wtime()`` elapsed (virtual) beside;
(d) with ``--dilated``: the cheap ones again (8-byte ping-pong and all-to-all, Jacobi) on a
    cluster in dilated time (``--net-time dilated --net-dilation D``), where a 64 KiB worm of
    8,193 flits lasts 0.4 s of wall time at the default dilation and is left out.

Each cluster has its own MCEMU_HOME, comes up with the checkout's ``mcemu up --detach`` and goes
down with ``mcemu down``; every process it had is recorded by pid while it runs and whatever is
still alive after the shutdown is killed by pid and reported. ``--repo PATH`` (repeatable) runs
other checkouts too, case by case beside this one (same load). The host is shared: the load
average is printed with the figures. The issue's target: 20,000 messages/s on this 2-core host.

    python scripts/bench_mpi.py                       # (a)-(c), virtual time
    python scripts/bench_mpi.py --dilated --json      # and (d); one JSON document
    python scripts/bench_mpi.py --scale 0.2           # fewer iterations (a quick look)
    python scripts/bench_mpi.py --repo /tmp/old       # this checkout and another one
    python scripts/bench_mpi.py --only all-to-all --profile /tmp/prof   # where a rank's CPU goes
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from _cluster import ScriptCluster

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "scripts" / "mpi_kernels.py"
# (name, kernel, bytes, iterations at --scale 1, in dilated time too)
CASES = (("ping-pong 8 B", "pingpong", 8, 400, True), ("ping-pong 64 KiB", "pingpong", 65536, 60, False),
         ("all-to-all 8 B", "alltoall", 8, 20, True), ("all-to-all 64 KiB", "alltoall", 65536, 1, False))
JACOBI = ("jacobi 16 ranks", "64", "200")
TARGET = 20_000  # messages/s (issue 28)


class Cluster(ScriptCluster):
    """One cluster of one checkout (scripts/_cluster.py), in virtual or dilated time."""

    def __init__(self, repo: Path, time_mode: str, dilation: float | None):
        super().__init__(repo, Path(tempfile.mkdtemp(prefix="mcbench-mpi-")))
        self.mode, self.dilation = time_mode, dilation

    def up(self) -> None:
        extra = ["--net-time", self.mode] + (["--net-dilation", f"{self.dilation:g}"] if self.dilation else [])
        self.mcemu("up", "--detach", "--topology", "mesh:8x8", "--allocator", "first-fit", "--scheduler", "fcfs", "--time-unit", "1",
                   "--network", "wormhole", *extra)
        self.record()

    def down(self) -> list[int]:
        """Stopped (what outlived ``mcemu down`` killed by pid and returned), its home removed."""
        left = self.stop()
        subprocess.run(["rm", "-rf", str(self.home)], check=False)
        return left


def ic_cpu(c: Cluster) -> float | None:
    try:
        t = psutil.Process(c.pid("interconnect.pid")).cpu_times()
        return t.user + t.system
    except (psutil.Error, TypeError, ValueError):
        return None


def run_job(c: Cluster, shape: str, command: str, timeout: float) -> dict:
    """Submit ``command`` as a job of ``shape``, wait for it; its queue row, the output of its rank
    0 and the interconnect's CPU seconds over the job."""
    cpu0 = ic_cpu(c)
    jid = c.json("submit", "--shape", shape, "--runtime", str(timeout * 10), "--command", command,
                 "--name", "bench")["job"]
    time.sleep(1.0)  # the tasks have started: their processes are recorded
    c.record()
    try:
        c.mcemu("wait", str(jid), "--timeout", str(timeout), timeout=timeout + 30)
    except RuntimeError:  # failed, or still running at the timeout: the row says which
        pass
    cpu1 = ic_cpu(c)
    row = next(j for j in c.json("queue", "--all")["jobs"] if j["id"] == jid)
    t = time.monotonic() + 5  # the interconnect's last report may follow the job's end ("final")
    while row["state"] == "completed" and not (row.get("comm") or {}).get("final") and time.monotonic() < t:
        time.sleep(0.1)  # an older checkout's reports carry no "final": its row after 5 s
        row = next(j for j in c.json("queue", "--all")["jobs"] if j["id"] == jid)
    if row["state"] in ("queued", "running"):
        c.mcemu("cancel", str(jid))
        raise RuntimeError(f"job {jid} did not end in {timeout:g} s (cancelled)")
    if row["state"] != "completed":
        raise RuntimeError(f"job {jid} {row['state']}: {row.get('reason')}")
    out = (c.home / "output" / f"job{jid}.0.out").read_text(errors="replace")
    return {"row": row, "out": out, "ic_cpu_s": None if cpu0 is None or cpu1 is None else cpu1 - cpu0}


def kernel_case(c: Cluster, kernel: str, nbytes: int, iterations: int, timeout: float,
                profile: Path | None = None) -> dict:
    env = f"MCEMU_MPI_PROFILE={profile} " if profile else ""  # nodes.mpi.live: cProfile of every rank
    r = run_job(c, "8x8", f"{env}{sys.executable} {KERNELS} {kernel} {nbytes} {iterations}", timeout)
    line = next((s for s in r["out"].splitlines() if s.startswith("{")), None)
    if line is None:
        raise RuntimeError(f"rank 0 printed no result: {r['out'][-300:]}")
    k, row = json.loads(line), r["row"]
    comm, job_wall = row.get("comm") or {}, row["end"] - row["start"]  # time unit 1 s (up)
    return {"messages": k["messages"], "loop_wall_s": k["wall_s"], "rate": k["messages"] / k["wall_s"],
            "s_per_1000": 1000 * k["wall_s"] / k["messages"], "vtime_s": k["vtime_s"],
            "ranks_cpu_s": k["cpu_s"], "ranks_sys_s": k.get("sys_s"), "ranks_switches": k.get("switches"),
            "ic_cpu_s": r["ic_cpu_s"], "job_messages": comm.get("count"),
            "job_bytes": comm.get("bytes"), "job_wall_s": job_wall,
            "job_rate": (comm.get("count") or 0) / job_wall if job_wall > 0 else None,
            "mean_delay_us": comm.get("mean_delay_us")}


def jacobi_case(c: Cluster, n: str, iterations: str, timeout: float) -> dict:
    prog = c.repo / "docs" / "examples" / "jacobi.py"
    r = run_job(c, "4x4", f"{sys.executable} {prog} {n} {iterations}", timeout)
    row, usage = r["row"], r["row"].get("usage") or {}
    cpu = usage.get("utime", 0.0) + usage.get("stime", 0.0)
    wall = row["end"] - row["start"]
    cores = min(16, os.cpu_count() or 1)
    m = re.search(r"elapsed ([0-9.eE+-]+) s", r["out"])
    return {"job_wall_s": wall, "ranks_cpu_s": cpu, "cores": cores,
            "slowdown_vs_cpu": wall / cpu if cpu else None,
            "slowdown_vs_cpu_on_cores": wall / (cpu / cores) if cpu else None,
            "vtime_s": float(m.group(1)) if m else None, "ic_cpu_s": r["ic_cpu_s"],
            "messages": (row.get("comm") or {}).get("count"),
            "mean_delay_us": (row.get("comm") or {}).get("mean_delay_us")}


def plan(a) -> list[tuple]:
    """(time mode, case name, what to run) in the order run."""
    out = []
    for mode in ["virtual"] + (["dilated"] if a.dilated else []):
        for name, kernel, nbytes, it, cheap in CASES:
            if (mode == "virtual" or cheap) and a.only in name:
                out.append((mode, name, ("kernel", kernel, nbytes, max(1, round(it * a.scale)))))
        if not a.no_jacobi and a.only in JACOBI[0]:
            out.append((mode, JACOBI[0], ("jacobi", JACOBI[1], str(max(10, round(int(JACOBI[2]) * a.scale))))))
    return out


def run_all(a, repos: list[Path]) -> list[dict]:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    steps = plan(a)
    results = []
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=_err(), transient=True) as prog:
        bar = prog.add_task("bench_mpi", total=len(steps) * len(repos))
        for mode in dict.fromkeys(s[0] for s in steps):
            clusters = {}
            try:
                for repo in repos:
                    clusters[repo] = Cluster(repo, mode, a.dilation if mode == "dilated" else None)
                    clusters[repo].up()
                for _, name, what in (s for s in steps if s[0] == mode):
                    for repo, c in clusters.items():  # case by case, checkouts side by side
                        prog.update(bar, description=f"{mode} · {name} · {repo.name}")
                        results.append(one_case(c, mode, name, what, a.timeout, a.profile))
                        prog.advance(bar)
            finally:
                for repo, c in clusters.items():
                    left = c.down()
                    if left:
                        _err().print(f"[yellow]{repo}: killed by pid after `mcemu down`: {left}[/]")
    return results


def one_case(c: Cluster, mode: str, name: str, what: tuple, timeout: float, profile: Path | None = None) -> dict:
    res = {"repo": str(c.repo), "time": mode, "case": name,
           "load_avg": round(os.getloadavg()[0], 2)}
    where = profile / f"{c.repo.name}-{mode}-{what[1]}-{what[2]}" if profile else None
    try:
        if what[0] == "kernel":
            res.update(kernel_case(c, what[1], what[2], what[3], timeout, where), iterations=what[3])
        else:
            res.update(jacobi_case(c, what[1], what[2], timeout), iterations=int(what[2]))
    except Exception as e:  # noqa: BLE001 - a case that breaks is reported, the others still run
        res["error"] = str(e)
    return res


def _err():
    from rich.console import Console

    return Console(stderr=True)


def _f(x, fmt="{:,.0f}"):
    return "-" if x is None else fmt.format(x)


def _cpu_us(r: dict) -> float | None:
    """CPU microseconds per message, the ranks' and the interconnect's together."""
    if r.get("ranks_cpu_s") is None or r.get("ic_cpu_s") is None or not r.get("messages"):
        return None
    return 1e6 * (r["ranks_cpu_s"] + r["ic_cpu_s"]) / r["messages"]


def _ceiling(r: dict) -> float | None:
    cpu = _cpu_us(r)
    return None if not cpu else 1e6 * (os.cpu_count() or 1) / cpu


def report(results: list[dict], repos: list[Path]) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console(width=max(Console().width, 150))  # a pipe reports 80 columns
    con.print(__doc__.split("\n\n    python")[0])
    t = Table(title="(a), (b), (d): 64 ranks on mesh:8x8", title_justify="left", header_style="bold")
    for col in ["time", "case"] + (["checkout"] if len(repos) > 1 else []) + [
            "messages", "msgs/s (loop)", "wall s / 1000 msgs", "ranks' CPU s", "interconnect CPU s",
            "msgs/s (job)", "CPU us / msg", "ceiling msgs/s", "virtual s", "load avg"]:
        t.add_column(col, justify="left" if col in ("time", "case", "checkout") else "right")
    for r in (x for x in results if "messages" in x and "rate" in x or ("error" in x and "jacobi" not in x["case"])):
        head = [r["time"], r["case"]] + ([Path(r["repo"]).name] if len(repos) > 1 else [])
        if "error" in r:
            t.add_row(*head, f"[red]{r['error'][:80]}[/]")
            continue
        t.add_row(*head, _f(r["messages"]), _f(r["rate"]), _f(r["s_per_1000"], "{:.3f}"),
                  _f(r["ranks_cpu_s"], "{:.2f}"), _f(r["ic_cpu_s"], "{:.2f}"), _f(r["job_rate"]),
                  _f(_cpu_us(r)), _f(_ceiling(r)), _f(r["vtime_s"], "{:.4g}"), _f(r["load_avg"], "{:.1f}"))
    con.print(t)
    con.print(f"CPU us / msg: the ranks' CPU in the loop and the interconnect's over the job, per message; "
              f"ceiling: {os.cpu_count()} cores / that, the rate this host could give with every core busy "
              f"and no waiting (the target needs {1e6 * (os.cpu_count() or 1) / TARGET:,.0f} us a message or less)")
    for r in (x for x in results if "jacobi" in x["case"]):
        who = f" [{Path(r['repo']).name}]" if len(repos) > 1 else ""
        if "error" in r:
            con.print(f"(c) {r['time']}{who}: [red]{r['error']}[/]")
            continue
        con.print(f"(c) {r['time']}{who}: Jacobi 64x64, {r['iterations']} sweeps, 16 ranks: job wall "
                  f"{r['job_wall_s']:.2f} s, ranks' CPU {r['ranks_cpu_s']:.2f} s -> slowdown "
                  f"{_f(r['slowdown_vs_cpu'], '{:.2f}')} x against the summed CPU time, "
                  f"{_f(r['slowdown_vs_cpu_on_cores'], '{:.2f}')} x against it on {r['cores']} cores; "
                  f"MPI.Wtime elapsed {_f(r['vtime_s'], '{:.4g}')} s, {_f(r['messages'])} messages, "
                  f"interconnect CPU {_f(r['ic_cpu_s'], '{:.2f}')} s")
    best = max((r["rate"] for r in results if "rate" in r), default=None)
    con.print(f"target {TARGET:,} messages/s: best measured {_f(best)} -> "
              + ("met" if best is not None and best >= TARGET else "not met"))
    con.print(f"load average (1, 5, 15 min): {' '.join(f'{x:.1f}' for x in os.getloadavg())}, "
              f"{os.cpu_count()} cores")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", type=Path, action="append", default=[],
                    help="another checkout to run beside this one (repeatable)")
    ap.add_argument("--scale", type=float, default=1.0, help="iterations x this (default 1)")
    ap.add_argument("--dilated", action="store_true", help="(d): the cheap cases in dilated time too")
    ap.add_argument("--dilation", type=float, default=None, help="--net-dilation of (d) (default: the cluster's)")
    ap.add_argument("--no-jacobi", action="store_true", help="leave (c) out")
    ap.add_argument("--only", default="", metavar="TEXT", help="only the cases whose name holds TEXT (e.g. ping-pong)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per job (default 600)")
    ap.add_argument("--profile", type=Path, default=None, metavar="DIR",
                    help="cProfile every rank of the kernels: DIR/<checkout>-<time>-<kernel>-<bytes>/rank-<r>.prof "
                         "(MCEMU_MPI_PROFILE, nodes.mpi.live; a checkout without it ignores it)")
    ap.add_argument("--json", action="store_true", help="print every figure as one JSON document")
    a = ap.parse_args(argv)
    if a.scale <= 0:
        ap.error("--scale must be > 0")
    repos = list(dict.fromkeys([ROOT, *(r.resolve() for r in a.repo)]))
    results = run_all(a, repos)
    if a.json:
        print(json.dumps({"repos": [str(r) for r in repos], "cores": os.cpu_count(), "target": TARGET,
                          "load_avg": os.getloadavg(), "results": results}, indent=2))
    else:
        report(results, repos)
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
