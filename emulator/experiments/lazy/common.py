"""What the lazy paper's experiments share (section 4): the 10-cube, the four disciplines, the
loads, the size and residence distributions, the settings text and the notes of every report,
and the two workloads (cases A and B) of Table I and Figure 10."""
from __future__ import annotations

PAPER = "Lazy scheduling journal paper (Mohapatra, Yu, Das)"
NAMES = {"static": "Static", "fcfs": "FCFS", "scan-up": "Scan", "lazy": "Lazy"}
FOUR = ("static", "fcfs", "scan-up", "lazy")
LOADS = [round(0.1 * i, 1) for i in range(1, 10)]
QUICK_LOADS = [0.3, 0.8]
T_FULL, T_QUICK = 10000.0, 400.0
SIZES = {"uniform": "uniform sizes", "normal": "normal sizes"}
SERVICES = {"uniform": "uniform residence", "hyperexp": "hyperexponential residence"}


def base(quick: bool, **kw) -> dict:
    p = {"topology": "hypercube:10", "allocator": "buddy", "service_mean": 5.0, "demand": "dependent",
         "until": T_QUICK if quick else T_FULL}
    p.update(kw)
    return p


EVENT = {"threshold_check": "event"}  # lazy's other reading of when the threshold is checked
EVENT_LABEL = "Lazy (event check)"


def label(p: dict) -> str:
    if p["scheduler"] == "lazy" and (p.get("dparams") or {}).get("threshold_check") == "event":
        return EVENT_LABEL
    return NAMES.get(p["scheduler"], p["scheduler"])


def is_default(p) -> bool:
    """The point runs the discipline's default reading (not lazy's event-check variant)."""
    return not (p or {}).get("threshold_check")


def common_settings(extra: str) -> callable:
    def text(quick: bool) -> str:
        T = T_QUICK if quick else T_FULL
        return (f"10-cube, buddy allocator for every discipline, observation time T = {T:g} time "
                "units, mean residence time 5, dependent demand (residence time independent of "
                "size), Poisson arrivals at lambda = 1024 / (mean job size x 5) x load with the exact "
                "mean of 2^k over the size distribution (the captions' '5-cube' is loose). Scan = "
                "`scan-up` (Krueger's c-scan, a blocked head waits); lazy = dynamic threshold "
                "d_t^2 lambda, checked at releases (Lazy_Release step 1, the default; 'Lazy (event check)' "
                "is the other reading, `threshold_check=event`: checked at every event and on a "
                "timer); static = fixed partitions S_0..S_9. Hyperexponential: mean 5, Cx 4, "
                f"alpha 0.95. {extra}")
    return text


NOTES = (
    "The check lines above are computed from the CSV; nothing in them is written by hand. "
    "Differences in absolute values are expected: the paper averages 1000 runs with its own "
    "random streams and does not state every reading (which scan variant, how the lazy "
    "threshold's d_t is measured); we use the readings documented in "
    "`scheduler/disciplines/{scan,lazy,static}.py`. Where a system is saturated (FCFS at high "
    "load) M grows with T, so its value depends on T and runs disagree: those points reach the "
    "replication cap and are marked.")


def _grid(schedulers, panels, loads, quick, **kw):
    pts = []
    for size, service in panels:
        for s in schedulers:
            for load in loads:
                pts.append(base(quick, scheduler=s, size=size, service=service, load=load, **kw))
    return pts


def _loads_from(res, lo=0.0, **where):
    return [x for x in res.values("load", **where) if x >= lo]


CASES = {"A": ("uniform", "uniform"), "B": ("normal", "hyperexp")}

CHANGED = (
    " **What changed (issue 17) and why.** (1) Lazy now checks the starvation threshold where the "
    "paper's pseudo-code does, in `Lazy_Release` step 1, i.e. at departures only (with the retry "
    "pass kept); before, it was checked at every event and on a timer, and at light load, where "
    "d_t^2 lambda is tiny, that timer ended every lazy wait at once, so lazy behaved exactly like "
    "scan (M_lazy/M_scan 0.99-1.02 at loads 0.1-0.2). The paper says the opposite at light load "
    "(Table I; jobs are delayed 'even though the system has enough idle processors'). The old "
    "behaviour is the parameter `threshold_check=event`, shown as 'Lazy (event check)' where it "
    "is run. (2) Every metric of a run is taken over one observation window (with a warm-up: "
    "from the W-th completion); the runs here have no warm-up, so that changes nothing in them. "
    "FCFS's, scan's and static's replications are recomputed on the same seeds and are "
    "bit-identical to before: only lazy's runs changed.")

NOTES = NOTES + CHANGED
