"""Benchmark of the live interconnect (issue 16): ``python scripts/bench_net_live.py``.

Prints, with its method:

1. messages per second through the interconnect with 64 communicating tasks: a mesh:8x8
   cluster at dilation 1 (the network's own time does not limit the rate), one 64-task job of
   the pattern task (``all-to-all`` at MTBS 0: every task keeps 63 paths busy); the rate is
   the interconnect's delivered count over a window of wall time in the job's steady part
   (read from ``mcemu net links`` twice);
2. the delivery-time error against the model: for every message a task received, its
   hand-over to the program (CLOCK_MONOTONIC in the task; the interconnect sends it up to
   10 ms ahead and nodes.comm holds it until due) minus the wall time the model gave for its delivery
   (``due``), p50 and p99 in wall microseconds and as a share of a contention-free message's
   dilated time, at the default dilation, from the chapter-6 agreement run (32 tasks); the
   same run is repeated with ``MCEMU_PROMPT_WAKEUPS=0`` (the tasks keep the kernel's timer
   slack and slice, see nodes.taskenv.prompt_wakeups) to show what asking for prompt wake-ups
   buys on this machine;
3. the smallest dilation at which agreement holds: the chapter-6 layout (transpose inside,
   diagonal split around it, 8x8 mesh, MTBS 25, 200 measured messages per path) at
   decreasing dilations (the two jobs in one ``--group``, so each keeps sending until both are
   done, as every path of ``mcemu net simulate`` does); agreement = both jobs' live mean
   delay within 10 % of ``mcemu net simulate`` for the same placement, MTBS and count.
The machine is shared: the load average during the run is printed with the figures.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from emulator.cli.lifecycle import start_cluster, stop_cluster  # noqa: E402
from emulator.cli.net import pattern_command  # noqa: E402
from tests.fixtures import ch6  # noqa: E402
from emulator.live.client import Client  # noqa: E402
from scheduler.network.stats import percentile  # noqa: E402


def _links(home: Path) -> dict:
    from emulator.live import netlocal
    from emulator.live import protocol as P

    got = netlocal.request(str(home / "net.sock"), P.encode("net_links", id=1), 10.0)
    if got is None:
        raise RuntimeError("no answer from the interconnect")
    return P.decode(got, max_size=P.MAX_REPLY)["data"]


def _cluster(dilation: float, allocator: str):
    home = Path(tempfile.mkdtemp(prefix="mcbench-"))
    start_cluster(home, topology="mesh:8x8", allocator=allocator, scheduler="fcfs", network="wormhole",
                  net_dilation=dilation, no_restart=True)
    return home, Client(home=home, timeout=10.0)


def _wait(c: Client, want: dict, timeout: float) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        js = c.queue(jobs=list(want))["jobs"]
        if all(j["state"] not in ("queued", "running") and (j["comm"] or {}).get("count") == want[j["id"]]
               for j in js):
            return js
        time.sleep(0.5)
    raise RuntimeError(f"jobs {list(want)} not done in {timeout} s")


def throughput(window: float) -> float:
    home, c = _cluster(1.0, "first-fit")
    try:
        jid = c.submit({"shape": [8, 8]}, 1e6, name="bench",
                       command=pattern_command("all-to-all", 8, 8, 0.0, 10_000, 0))
        deadline = time.monotonic() + 60
        while _links(home)["messages"] < 2000:  # the 64 tasks have started and sent
            if time.monotonic() > deadline:
                raise RuntimeError("the job's tasks do not send")
            time.sleep(0.2)
        a, t0 = _links(home)["messages"], time.monotonic()
        time.sleep(window)
        b, t1 = _links(home)["messages"], time.monotonic()
        c.cancel(jid)
        return (b - a) / (t1 - t0)
    finally:
        c.close()
        stop_cluster(home)


def agreement(dilation: float, mtbs: tuple[float, float] = (25.0, 25.0), n: int = 200, prompt: bool = True) -> dict:
    """The chapter-6 run at ``dilation``; ``mtbs``: the inside job's and the outside job's."""
    import subprocess

    warm = n // 10
    # the cluster's processes, and so the tasks, inherit this process's environment
    os.environ["MCEMU_PROMPT_WAKEUPS"] = "1" if prompt else "0"
    home, c = _cluster(dilation, "naive")
    try:
        placed = ch6.place(c, ({"shape": [4, 4]}, pattern_command("transpose", 4, 4, mtbs[0], n, warm, group="ch6")),
                           ({"shape": [4, 4]}, pattern_command("diagonal", 4, 4, mtbs[1], n, warm, group="ch6")))
        js = _wait(c, {placed["inside"]: 12 * n, placed["outside"]: 4 * n}, 600)
        f = home / "jobs.json"
        f.write_text(json.dumps(ch6.job_file(placed["nodes"], {"inside": mtbs[0], "outside": mtbs[1]})))
        sim = json.loads(subprocess.run([sys.executable, "-m", "emulator", "net", "simulate", "--mesh", "8x8",
                                         "--job-file", str(f), "--messages", str(n), "--warmup", str(warm),
                                         "--json"], check=True, capture_output=True, text=True).stdout)
        out = {"dilation": dilation, "jobs": {}}
        for s in sim["jobs"]:
            live = next(j for j in js if j["name"] == s["name"])["comm"]["mean_delay_us"]
            out["jobs"][s["name"]] = {"live_us": live, "sim_us": s["mean_delay_us"],
                                      "error": live / s["mean_delay_us"] - 1}
        late = []
        for jid in (placed["inside"], placed["outside"]):
            for p in (home / "output").glob(f"job{jid}.*.out"):
                for line in p.read_text().splitlines():
                    if line.startswith("{"):
                        late += json.loads(line)["lateness_us"]
        late.sort()
        out["lateness_us"] = {"p50": percentile(late, 50), "p99": percentile(late, 99), "n": len(late)}
        out["interconnect_lateness_us"] = _links(home)["release_lateness_us"]
        out["agrees"] = all(abs(v["error"]) < 0.10 for v in out["jobs"].values())
        return out
    finally:
        c.close()
        stop_cluster(home)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--window", type=float, default=10.0, help="seconds of the throughput window")
    ap.add_argument("--dilations", default="1000,300,200,100,30", help="dilations to try, decreasing")
    ap.add_argument("--pairs", default=None, metavar="IN/OUT,...",
                    help="only the agreement at the first dilation for these MTBS pairs (inside/outside job), "
                         "e.g. 0/0,25/250,250/25,100/100")
    a = ap.parse_args(argv)
    if a.pairs:
        d = float(a.dilations.split(",")[0])
        for pair in a.pairs.split(","):
            mi, mo = (float(x) for x in pair.split("/"))
            r = agreement(d, (mi, mo))
            print(f"MTBS {mi:g}/{mo:g} at dilation {d:g}: " + ", ".join(
                f"{k} live {v['live_us']:.2f} us vs simulated {v['sim_us']:.2f} us ({v['error']:+.1%})"
                for k, v in r["jobs"].items()) + f"; delivery error p99 {r['lateness_us']['p99']} us", flush=True)
        print(f"load average (1, 5, 15 min): {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        return 0
    print(__doc__)
    rate = throughput(a.window)
    print(f"1. throughput: {rate:,.0f} messages/s through the interconnect (64 tasks, all-to-all, MTBS 0, "
          f"dilation 1, {a.window:g} s window)")
    smallest = None
    d0 = float(a.dilations.split(",")[0])
    plain = agreement(d0, prompt=False)["lateness_us"]
    plain_text = (f"   the same with the kernel's timer slack and slice (MCEMU_PROMPT_WAKEUPS=0): p50 {plain['p50']} us, "
                  f"p99 {plain['p99']} us ({plain['p99'] / (25.05 * d0):.1%}) over {plain['n']} messages")
    for i, d in enumerate(float(x) for x in a.dilations.split(",")):
        r = agreement(d)
        jobs = ", ".join(f"{k} live {v['live_us']:.2f} us vs simulated {v['sim_us']:.2f} us ({v['error']:+.1%})"
                         for k, v in r["jobs"].items())
        lat, ic = r["lateness_us"], r["interconnect_lateness_us"]
        free = 25.05 * d  # a contention-free 1-hop message: (1 + 500 - 1) x 0.05 us, dilated
        err = (f"delivery error p50 {lat['p50']} us ({lat['p50'] / free:.1%}), p99 {lat['p99']} us "
               f"({lat['p99'] / free:.1%} of a contention-free message's {free / 1000:.2f} ms) over {lat['n']} "
               f"messages; the interconnect's own release p50 {ic['p50']} us, p99 {ic['p99']} us")
        if i == 0:
            print(f"2. at dilation {d:g}: {err}")
            print(plain_text)
        print(f"   dilation {d:g}: {jobs} -> {'agrees' if r['agrees'] else 'does not agree'}"
              + (f"; {err}" if i else ""))
        if r["agrees"]:
            smallest = d
        else:
            break
    print(f"load average (1, 5, 15 min): {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"3. smallest dilation at which agreement holds: {smallest:g}" if smallest else
          "3. agreement does not hold at any dilation tried")
    return 0


if __name__ == "__main__":
    sys.exit(main())
