"""Restricted size reduction (Chang and Mohapatra), section 4: Figures 1-5.

Section 4.1: FCFS with the named allocator; a 32x32 mesh (2-D buddy: square jobs, side
uniform 1..32; frame sliding and first fit: w and h independently uniform 1..32) or an 8-cube
with buddy (cube dimension uniform or discretized normal over 0..7); exponential service of
mean 5; Poisson arrivals at lambda = system size / (mean job size x 5) x load; each run ends
at 50,500 completions, the first 500 not counted; the metric is the mean turnaround time
(queueing delay + execution time after folding). A fold multiplies the execution time by
the processors given up (x2 per cube fold, x4 per 2-D buddy fold: ``scheduler/reduction.py``).
"""
from __future__ import annotations

from emulator.experiments import register
from emulator.experiments import verdict as V
from emulator.experiments._points import sim_point
from emulator.experiments.experiment import Check, Experiment, Panel

PAPER = "Restricted size reduction paper (Chang, Mohapatra)"
LOADS = [round(0.1 * i, 1) for i in range(1, 10)]
QUICK_LOADS = [0.2, 0.6]
N_FULL, W_FULL = 50500, 500
N_QUICK, W_QUICK = 300, 50
MESH_SIZES = {"buddy-2d": "square-var", "frame-sliding": "rect-unrestricted", "first-fit": "rect-unrestricted"}
SIZES = {"uniform": "uniform job size", "normal": "normal job size"}


def base(quick: bool, **kw) -> dict:
    p = {"scheduler": "fcfs", "service": "exponential", "service_mean": 5.0, "demand": "dependent",
         "completions": N_QUICK if quick else N_FULL, "warmup": W_QUICK if quick else W_FULL}
    p.update(kw)
    return p


def rsr(t: int):
    return None if t == 0 else f"rsr:{t}"


def label(p: dict) -> str:
    r = p.get("reduction")
    if not r:
        return "RSR-0"
    kind, _, v = r.partition(":")
    return f"RSR-{v}" if kind == "rsr" else f"limit-{v}"


def settings(extra: str):
    def text(quick):
        n, w = (N_QUICK, W_QUICK) if quick else (N_FULL, W_FULL)
        return (f"FCFS; exponential service of mean 5; runs of {n:,} completions, the first {w} not "
                f"counted; mean turnaround (wait + execution after folding). {extra}")
    return text


NOTES = ("The checks are computed from the CSV. RSR-t folds a job only when it does not fit, "
         "at most t times (section 3.2, read as MAX{k - t, 0}); limit-k folds every job above a "
         "k-cube whatever the load. Past a policy's operational range the queue grows for the "
         "whole run, so the turnaround depends on the run length and the point reaches the "
         "replication cap (marked). The plotted turnaround is the paper's metric.")


def _tat(res, **w):
    return res.est("mean_turnaround", **w)


OPERATING = 10 * 5.0  # a turnaround under 10 x the mean execution time: the system is not saturated


# ---------------------------------------------------------------- Figure 1


def _f1_grid(quick):
    pts = []
    for alloc, size in MESH_SIZES.items():
        for t in range(4):
            for load in (QUICK_LOADS if quick else LOADS):
                pts.append(base(quick, topology="mesh:32x32", allocator=alloc, size=size, reduction=rsr(t), load=load))
    return pts


def _grows_with_t(res, t_values, **w):
    v = [_tat(res, reduction=rsr(t), **w) for t in t_values]
    return V.rises(v), v


def _f1_check(res):
    c = Check()
    w = dict(allocator="buddy-2d")
    loads = res.values("load", **w)
    # "a tremendous improvement": where RSR-1 operates (not saturated) and RSR-0 does not, RSR-1
    # at most half RSR-0's turnaround; where both are saturated the turnaround grows with the run
    rows = [(x, _tat(res, reduction="rsr:1", load=x, **w), _tat(res, reduction=None, load=x, **w)) for x in loads]
    apart = [(x, a, b) for x, a, b in rows if a.mean < OPERATING <= b.mean]
    c(V.every(V.not_more(a, 0.5 * b) for _, a, b in apart) if apart else V.FAILS,
      "2-D buddy: RSR-1 a tremendous improvement over RSR-0, at most half its turnaround at every load "
      f"where RSR-1 operates (turnaround < {OPERATING:g}) and RSR-0 does not ("
      + ("; ".join(f"{x}: {a} vs {b}" for x, a, b in apart) or "no such load") + ")",
      tol="a factor 2", why="'tremendous' has no number in the text; a factor 2 is the least that reads so")
    hi = loads[-1]
    r1, r0 = _tat(res, reduction="rsr:1", load=hi, **w), _tat(res, reduction=None, load=hi, **w)
    c.sensitivity(V.not_more(r1, 0.5 * r0), f"2-D buddy, the saturated reading: RSR-1 at most half RSR-0 at load {hi}, "
                  f"where both are saturated ({r1} vs {r0})", tol="a factor 2", why="as above")
    rows = [(x, _tat(res, reduction="rsr:1", load=x, **w),
             min((_tat(res, reduction=f"rsr:{t}", load=x, **w) for t in (2, 3)), key=lambda e: e.mean)) for x in loads]
    c(V.every(V.not_more(0.9 * a, m) for _, a, m in rows),
      "2-D buddy: more than one reduction gains nothing (best of RSR-2/3 >= 0.9 x RSR-1 at every load: "
      + ", ".join(f"{x}: {m} vs {a}" for x, a, m in rows) + ")",
      tol="10% of RSR-1's", why="'does not provide performance gain': a gain under 10% is none on the figure")
    for alloc in ("frame-sliding", "first-fit"):
        w = dict(allocator=alloc)
        lo, hi = min(res.values("load", **w)), max(res.values("load", **w))
        ok, v = _grows_with_t(res, range(4), load=lo, **w)
        c(ok, f"{alloc}: at light load {lo} fewer reductions give a (slightly) shorter turnaround "
          f"(RSR-0..3: {', '.join(str(x) for x in v)})")
        a, b = _tat(res, reduction="rsr:3", load=hi, **w), _tat(res, reduction=None, load=hi, **w)
        c(V.less(a, b), f"{alloc}: more reductions give a wider operational range (RSR-3 {a} < RSR-0 "
          f"{b} at load {hi})")
    return c


register(Experiment(
    "rsr-fig1", PAPER, "Figure 1", "turnaround vs load on a 32x32 mesh",
    "RSR-1 improves the 2-D buddy (TDB) tremendously and more reductions give no further gain. "
    "For frame sliding and first fit, fewer reductions give slightly shorter turnaround at low "
    "load while more reductions give a wider operational range.",
    sim_point, _f1_grid, ("mean_turnaround", "utilization"),
    [Panel(f"({'abc'[i]}) {a}", "mean_turnaround", where={"allocator": a}, series=label,
           ylabel="mean turnaround time", xlabel="system load", logy=True) for i, a in enumerate(MESH_SIZES)],
    _f1_check,
    settings=settings("32x32 mesh; 2-D buddy with square jobs of side uniform 1..32; frame sliding and "
                      "first fit with w, h uniform 1..32; RSR-0 (no folding) to RSR-3. Loads 0.1-0.9 "
                      f"(quick: {QUICK_LOADS})."),
    notes=NOTES, layout=(1, 3)))

# ---------------------------------------------------------------- Figure 2


def _f2_grid(quick):
    return [base(quick, topology="hypercube:8", allocator="buddy", size=s, reduction=rsr(t), load=x)
            for s in SIZES for t in range(4) for x in (QUICK_LOADS + [0.8] if quick else LOADS)]


def _f2_check(res):
    c = Check()
    for s in SIZES:
        w = dict(size=s)
        lo = min(res.values("load", **w))
        ok, v = _grows_with_t(res, range(4), load=lo, **w)
        c(ok, f"{SIZES[s]}: at light load {lo} fewer reductions give a shorter turnaround "
          f"(RSR-0..3: {', '.join(str(x) for x in v)})")
        x = 0.8 if 0.8 in res.values("load", **w) else max(res.values("load", **w))
        a, b = _tat(res, reduction="rsr:1", load=x, **w), _tat(res, reduction=None, load=x, **w)
        c(V.every([V.less(a, OPERATING), V.less(a, b)]),
          f"{SIZES[s]}: one reduction extends the operational range past {x} (RSR-1 turnaround "
          f"{a} < 10 x the mean execution time, RSR-0 {b})")
    return c


register(Experiment(
    "rsr-fig2", PAPER, "Figure 2", "turnaround vs load, 8-cube buddy",
    "RSR widens the operational range of the buddy 8-cube; fewer reductions give shorter "
    "turnaround at low to medium load; one reduction already extends the operational range "
    "beyond 80% utilization.",
    sim_point, _f2_grid, ("mean_turnaround", "utilization"),
    [Panel(f"({'ab'[i]}) {SIZES[s]}", "mean_turnaround", where={"size": s}, series=label,
           ylabel="mean turnaround time", xlabel="system load", logy=True) for i, s in enumerate(SIZES)],
    _f2_check,
    settings=settings("8-cube, buddy; cube dimension uniform (1/8 each) or the paper's normal "
                      "(0.025, 0.076, 0.162, 0.237, ...) over 0..7; RSR-0..3 (the figure's t values are "
                      "lost; section 4.2 discusses 'one' to 'three' reductions). Loads 0.1-0.9 (quick: "
                      f"{QUICK_LOADS + [0.8]})."),
    notes=NOTES))

# ---------------------------------------------------------------- Figure 3


def _f3_grid(quick):
    pts = [base(quick, topology="mesh:32x32", allocator="frame-sliding", size="rect-unrestricted",
                reduction=rsr(t), load=x) for t in range(4) for x in (QUICK_LOADS if quick else LOADS)]
    pts += [base(quick, topology="mesh:32x32", allocator="first-fit", size="rect-unrestricted",
                 reduction=None, load=x) for x in (QUICK_LOADS if quick else LOADS)]
    return pts


def _f3_label(p):
    return ("FF" if p["allocator"] == "first-fit" else "FS ") + ("" if p["allocator"] == "first-fit" else label(p))


def _f3_check(res):
    c = Check()
    loads = res.values("load")
    ff = {x: _tat(res, allocator="first-fit", load=x) for x in loads}
    fs = {t: {x: _tat(res, allocator="frame-sliding", reduction=rsr(t), load=x) for x in loads} for t in range(4)}
    mid = [x for x in loads if 0.2 <= x <= 0.4] or loads[:1]
    c(V.every(V.close(fs[1][x], ff[x], 0.2) for x in mid),
      "frame sliding with RSR-1 performs close to first fit (within 20%) at loads 0.2-0.4 ("
      + ", ".join(f"{x}: {fs[1][x]} vs {ff[x]}" for x in mid) + ")",
      tol="20% of first fit's", why="'close' has no number in the text; 20% is the spread the figure's "
      "curves show between schemes called close")
    hi = loads[-1]
    c(V.every(V.less(fs[t][hi], ff[hi]) for t in (2, 3)),
      f"with more reductions frame sliding outperforms first fit at load {hi} (FS RSR-2 {fs[2][hi]}, "
      f"RSR-3 {fs[3][hi]}, FF {ff[hi]})")
    lo = loads[0]
    c(V.every(V.greater(fs[t][lo], ff[lo]) for t in (1, 2, 3)),
      f"at very low load {lo} frame sliding with RSR is slightly worse than first fit "
      f"(FS RSR-1..3 {', '.join(str(fs[t][lo]) for t in (1, 2, 3))}, FF {ff[lo]})")
    return c


register(Experiment(
    "rsr-fig3", PAPER, "Figure 3", "frame sliding with RSR vs first fit (32x32 mesh)",
    "Frame sliding performs close to first fit after one size reduction and, with more "
    "reductions, outperforms it with a wider operational range; at very low load it is slightly "
    "worse because of the folding.",
    sim_point, _f3_grid, ("mean_turnaround", "utilization"),
    [Panel("frame sliding (FS) with RSR-t vs first fit (FF)", "mean_turnaround", series=_f3_label,
           ylabel="mean turnaround time", xlabel="system load", logy=True)],
    _f3_check,
    settings=settings("32x32 mesh, w and h uniform 1..32; frame sliding with RSR-0..3, first fit "
                      f"without reduction. Loads 0.1-0.9 (quick: {QUICK_LOADS})."),
    notes=NOTES))

# ---------------------------------------------------------------- Figure 4

PAIRS = [("rsr:7", "limit:0"), ("rsr:2", "limit:5"), ("rsr:1", "limit:6")]


def _f4_grid(quick):
    return [base(quick, topology="hypercube:8", allocator="buddy", size=s, reduction=r, load=x)
            for s in SIZES for pair in PAIRS for r in pair for x in (QUICK_LOADS if quick else LOADS)]


def _f4_check(res):
    c = Check()
    for s in SIZES:
        loads = [x for x in res.values("load", size=s) if x <= 0.5] or res.values("load", size=s)[:1]
        for r, lim in PAIRS:
            rows = [(x, _tat(res, size=s, reduction=r, load=x), _tat(res, size=s, reduction=lim, load=x))
                    for x in loads]
            c(V.every(V.less(a, b) for _, a, b in rows),
              f"{SIZES[s]}: {label({'reduction': r})} below {label({'reduction': lim})} at low to medium load ("
              + ", ".join(f"{x}: {a} vs {b}" for x, a, b in rows) + ")")
    return c


register(Experiment(
    "rsr-fig4", PAPER, "Figure 4", "RSR vs limit allocation, 8-cube",
    "Each RSR scheme performs better than the limit scheme with the same maximum number of folds "
    "(RSR-7/limit-0, RSR-2/limit-5, RSR-1/limit-6); limit allocations are poor at low to medium "
    "load because they fold large jobs regardless of the load.",
    sim_point, _f4_grid, ("mean_turnaround", "utilization"),
    [Panel(f"({'ab'[i]}) {SIZES[s]}", "mean_turnaround", where={"size": s}, series=label,
           ylabel="mean turnaround time", xlabel="system load", logy=True) for i, s in enumerate(SIZES)],
    _f4_check,
    settings=settings("8-cube, buddy, uniform or normal dimensions over 0..7; RSR-7, RSR-2, RSR-1 and "
                      f"limit-0, limit-5, limit-6. Loads 0.1-0.9 (quick: {QUICK_LOADS}). 'Low to medium "
                      "load' is checked at loads <= 0.5."),
    notes=NOTES))

# ---------------------------------------------------------------- Figure 5

F5 = {"a": ("rsr:7", "limit:0"), "b": ("rsr:1", "rsr:2", "limit:6", "limit:5")}
F5_LOAD = 0.7
PER_SIZE = tuple(f"tat@{2 ** k}" for k in range(8))


def _f5_grid(quick):
    return [base(quick, topology="hypercube:8", allocator="buddy", size="uniform", reduction=r,
                 load=F5_LOAD, per_size=True, panel=panel) for panel, rs in F5.items() for r in rs]


def _spread(res, r):
    v = [res.est(m, reduction=r) for m in PER_SIZE]
    v = [x for x in v if x.mean == x.mean]
    return max(v, key=lambda e: e.mean) / min(v, key=lambda e: e.mean), v


def _f5_check(res):
    c = Check()
    _, a = _spread(res, "rsr:1")
    _, b = _spread(res, "limit:6")
    c(V.every(V.ratio_within(x, y, 0.5, 2) for x, y in zip(a, b)),
      "limit-6 and RSR-1 have close turnaround for every job size (ratio within 0.5-2: "
      + ", ".join(str(x / y) for x, y in zip(a, b)) + ")",
      tol="a factor 2 either way", why="'close' has no number in the text; the figure's axis is logarithmic")
    s0, v0 = _spread(res, "limit:0")
    c(V.greater(v0[-1], 10 * v0[0]), f"limit-0 is unfair: a 7-cube job's turnaround {v0[-1]} > 10 x a 0-cube's {v0[0]}",
      tol="a factor 10", why="'unfair' has no number in the text; a factor 10 is an order of magnitude on its log axis")
    for r, lim in (("rsr:7", "limit:0"), ("rsr:2", "limit:5")):
        sr, v = _spread(res, r)
        sl, _ = _spread(res, lim)
        c(V.less(sr, sl), f"{label({'reduction': r})} is fairer than {label({'reduction': lim})} "
          f"(max/min turnaround over sizes {sr} vs {sl})")
        c(V.greater(v[-1], v[0]), f"{label({'reduction': r})} treats large jobs worse: 7-cube {v[-1]} > 0-cube {v[0]}")
    return c


register(Experiment(
    "rsr-fig5", PAPER, "Figure 5", "turnaround per job size at load 0.7 (8-cube)",
    "At a high load (0.7) RSR treats jobs of different sizes more fairly than limit allocation: "
    "limit-0 and limit-5 are visibly unfair to large jobs; RSR-1 and limit-6 are close for all "
    "sizes; RSR-2 and RSR-7 start to give large jobs a higher turnaround.",
    sim_point, _f5_grid, PER_SIZE + ("mean_turnaround",),
    [Panel(f"({p}) " + ", ".join(label({'reduction': r}) for r in rs), PER_SIZE[-1], x="size", where={"panel": p},
           series=label, ylabel="mean turnaround time", xlabel="job size (cube dimension asked for)", logy=True,
           xmetrics=[(k, f"tat@{2 ** k}") for k in range(8)]) for p, rs in F5.items()],
    _f5_check, stop_on=PER_SIZE,
    settings=settings("8-cube, buddy, uniform dimensions 0..7, load 0.7; turnaround grouped by the size "
                      "the job asked for (before folding). Panel (a) RSR-7 vs limit-0, (b) RSR-1, RSR-2 "
                      "vs limit-6, limit-5 (uniform sizes: the caption does not say which)."),
    notes=NOTES))
