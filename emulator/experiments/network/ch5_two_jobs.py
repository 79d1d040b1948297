"""Dissertation Figures 5.17/5.18: two interleaved 4x4 transpose jobs (``net-fig5-17``).

Fig 5.16's layout cannot be recovered (NETWORK.md 5.5, 8.18), so this is a *procedure check*
on a documented layout of ours, the chapter-6 Scenario A layout (NETWORK.md 6.2): a 4-row by
8-column mesh; the inside job is a contiguous 4x4 transpose on columns 2-5; the outside job is
a 4x4 transpose cut in the middle, its logical columns 0-1 on mesh columns 0-1 and 2-3 on mesh
columns 6-7 (logical column order kept across the pieces, NETWORK.md 8.23), rows shared.

The procedure (§5.5): decompose the two jobs' paths row by row into left- and right-directed
heterogeneous multipath models, solve each, and average the paths' delays per job. Under XY
routing only the X segments can meet (every Y segment in a column carries paths of one source
row only, which already met on the row; NETWORK.md 4.5). In this layout two of the row groups
(row 0 leftwards, row 3 rightwards) are not single stairs: the outside job's crossing paths
leave the inside job's stair and then meet another outside path near their destination. The
text's m-path model assumes one stair; :func:`solve_segments` (a private helper of ours) runs
the same divide-and-conquer (§5.4, the readings of ``scheduler/network/heterogeneous.py``) on
paths that enter and leave a row anywhere: the competitors at a stage are the paths that pass
its channel, and a path's remaining delay after a stage is its delay from the next stage on its
own route. On a stair it is :func:`~scheduler.network.heterogeneous.solve_multipath` exactly
(tests/test_network_figures.py). The text's own reading, sorting every group into one stair
(§3.2), is listed beside it in the report.
"""
from __future__ import annotations

from emulator.experiments import register
from emulator.experiments.experiment import Check, Experiment, Panel, fmt
from emulator.experiments.network.ch4_sim import LT, MODEL, SIM, messages_for
from emulator.experiments.network.common import AGREE, PAPER, agrees, net_point
from scheduler.network.heterogeneous import solve_multipath, two_path

N, WIDTH = 4, 8
IN_X0 = 2  # the inside job's first mesh column


def outside_column(c: int) -> int:
    """Mesh column of the outside job's logical column c (cut in the middle)."""
    return c if c < N // 2 else c + N


def two_job_paths(mtbs_in: float, mtbs_out: float) -> list[tuple[str, tuple, tuple, float]]:
    """(job, source (x, y), destination (x, y), MTBS) of every path: Node_{i,j} -> Node_{j,i},
    inside first, in the pattern's row-major order."""
    out = []
    for job, col, mt in (("inside", lambda c: IN_X0 + c, mtbs_in), ("outside", outside_column, mtbs_out)):
        out += [(job, (col(j), i), (col(i), j), mt) for i in range(N) for j in range(N) if i != j]
    return out


def two_job_specs(mtbs_in: float, mtbs_out: float) -> list:
    nodes = [[outside_column(c), r] for r in range(N) for c in range(N)]
    return [f"transpose:{N}x{N}@{IN_X0},0:mtbs={mtbs_in:g}:name=inside",
            {"name": "outside", "pattern": "transpose", "shape": f"{N}x{N}", "nodes": nodes, "mtbs": mtbs_out}]


def row_groups(paths) -> list[list[tuple[int, int, int]]]:
    """The heterogeneous multipath models: per row and direction, the paths whose X segments
    share a channel, as (path index, entry, exit) in positions along the direction of travel
    (a path uses the channels [entry, exit))."""
    segs: dict = {}
    for k, (_, (sx, sy), (dx, _), _) in enumerate(paths):
        sign = 1 if dx > sx else -1
        segs.setdefault((sy, sign), []).append((k, sign * sx, sign * dx))
    groups = []
    for key in sorted(segs):
        items = sorted(segs[key], key=lambda t: t[1])
        cur, end = [items[0]], items[0][2]
        for it in items[1:]:
            if it[1] < end:
                cur.append(it)
                end = max(end, it[2])
            else:
                groups.append(cur)
                cur, end = [it], it[2]
        groups.append(cur)
    return groups


def solve_segments(segs, *, case4: str = "physical", tol: float = 1e-9, max_iter: int = 2000,
                   L_T: float = LT) -> list[float]:
    """Mean delay (µs) of each path ``(entry, exit, mtbs)`` meeting others only at entrance
    channels (distinct entries), by the §5.4 divide and conquer generalised from a stair."""
    m = len(segs)
    a = [s[0] for s in segs]
    if len(set(a)) != m:
        raise ValueError("two paths enter at one channel")
    mt = [float(s[2]) for s in segs]
    order = sorted(range(m), key=lambda p: -a[p])  # stages, the most downstream (S_1) first
    comp = {q: [p for p in order if p != q and a[p] < a[q] < segs[p][1]] for q in range(m)}
    route = {p: [q for q in order if a[p] <= a[q] < segs[p][1]] for p in range(m)}  # downstream first
    nxt = {(p, q): (route[p][k - 1] if k else None) for p in range(m) for k, q in enumerate(route[p])}

    def rest(D, p, q):
        n = nxt[p, q]
        return L_T if n is None else D[p, n]

    def sweep(Dp, taup):
        D, tau = {}, {}
        for q in order:
            lam = {j: 1.0 / (taup[q, j] + Dp[j, q]) for j in comp[q]} if Dp else {}
            for j in comp[q]:
                tau[q, j] = mt[j] + (max(0.0, Dp[j, j] - Dp[j, q]) if Dp else 0.0)

            def reduced(ps):
                tot = sum(lam[j] for j in ps)
                here = sum(lam[j] * Dp[j, q] for j in ps) / tot
                return max(0.0, 1.0 / tot - here), sum(lam[j] * rest(Dp, j, q) for j in ps) / tot

            rd_i = rest(D, q, q)
            if Dp and comp[q]:
                tq, rq = reduced(comp[q])
                D[q, q] = two_path(mt[q], tq, rd_i, rq, case4)[0]
            else:
                D[q, q] = rd_i
            for j in comp[q]:
                others = [k for k in comp[q] if k != j]
                if Dp and others:
                    tq, rq = reduced(others)
                    rd_hat = two_path(mt[q], tq, rd_i, rq, case4)[0]
                else:
                    rd_hat = rd_i
                D[j, q] = two_path(mt[q], tau[q, j], rd_hat, rest(D, j, q), case4)[1]
        return D, tau

    D, tau = sweep(None, None)
    keys = sorted(D)
    hist = [[D[k] for k in keys]]
    for _ in range(max_iter):
        D, tau = sweep(D, tau)
        now = [D[k] for k in keys]
        for per in range(1, min(len(hist), 64) + 1):  # a fixed point (1) or a cycle (the ceiling of 5.4)
            if max(abs(x - y) for x, y in zip(now, hist[-per])) <= tol:
                orbit = hist[-per + 1:] + [now] if per > 1 else [now]
                return [sum(o[keys.index((p, p))] for o in orbit) / per for p in range(m)]
        hist = hist[-64:] + [now]
    raise ArithmeticError(f"solve_segments: no fixed point or cycle after {max_iter} iterations")


def analyse(mtbs_in: float, mtbs_out: float, reading: str = "segments") -> list[float]:
    """Per-path delays (µs) by the row decomposition; ``reading`` "segments" (our generalised
    solver) or "stair" (each group sorted into one stair, the text's §3.2, solve_multipath)."""
    paths = two_job_paths(mtbs_in, mtbs_out)
    out = [LT] * len(paths)
    for g in row_groups(paths):
        if reading == "stair":
            top_first = sorted(g, key=lambda t: -t[1])
            res = solve_multipath([paths[k][3] for k, _, _ in top_first]).delays
            for (k, _, _), d in zip(top_first, res):
                out[k] = d
        else:
            for (k, _, _), d in zip(g, solve_segments([(e, x, paths[k][3]) for k, e, x in g])):
                out[k] = d
    return out


def _job_means(paths, d) -> dict:
    out = {}
    for job in ("inside", "outside"):
        v = [x for p, x in zip(paths, d) if p[0] == job]
        out[job] = sum(v) / len(v)
    return out


def two_params(source: str, mtbs_in: float, mtbs_out: float, quick: bool) -> dict:
    p = {"source": source, "mtbs_in": mtbs_in, "mtbs_out": mtbs_out}
    if source == SIM:
        paths = two_job_paths(mtbs_in, mtbs_out)
        rates = [1.0 / (pp[3] + d) for pp, d in zip(paths, analyse(mtbs_in, mtbs_out))]
        msgs, w = messages_for(rates, quick)
        p.update(topology=f"mesh:{WIDTH}x{N}", jobs=two_job_specs(mtbs_in, mtbs_out), messages=msgs, warmup=w)
    return p


def two_point(params: dict, seed: int) -> dict:
    """Mean communication delay (µs) of the inside and the outside job (mean over their 12
    paths); the analysis also gives the text's sort-into-one-stair reading (``*_stair``) and the
    right-directed half alone (``*_right``, which the text computes by symmetry)."""
    mi, mo = params["mtbs_in"], params["mtbs_out"]
    if params["source"] == SIM:
        r = net_point(params, seed)
        return {"inside": r["delay@inside"], "outside": r["delay@outside"]}
    paths = two_job_paths(mi, mo)
    seg, stair = analyse(mi, mo), analyse(mi, mo, "stair")
    right = [(p, d) for p, d in zip(paths, seg) if p[2][0] > p[1][0]]
    out = _job_means(paths, seg)
    out.update({f"{k}_stair": v for k, v in _job_means(paths, stair).items()})
    out.update({f"{k}_right": v for k, v in _job_means([p for p, _ in right], [d for _, d in right]).items()})
    return out


IN, OUT = [0, 25, 100, 500], [0, 25, 50, 100, 200, 300, 400, 500]


def _check(res):
    c = Check()
    for job, fig in (("inside", "5.17"), ("outside", "5.18")):
        for mi in res.values("mtbs_in"):
            xs = res.values("mtbs_out", mtbs_in=mi)
            agrees(c, [(f"MTBS_out {x}", res.est(job, source=SIM, mtbs_in=mi, mtbs_out=x),
                        res.est(job, source=MODEL, mtbs_in=mi, mtbs_out=x)) for x in xs],
                   f"Fig {fig}, {job} job, MTBS_in {mi}, every MTBS_out")
    return c


def _table(res):
    lines = ["**Other readings of the analysis** (mean delay, µs): our generalised solver (plotted) "
             "against sorting every row group into one stair (§3.2) and solve_multipath.", "",
             "| MTBS_in | MTBS_out | inside: sim | segments | one stair | outside: sim | segments | one stair |",
             "|---|---|---|---|---|---|---|---|"]
    sym = 0.0
    for mi in res.values("mtbs_in"):
        for mo in res.values("mtbs_out", mtbs_in=mi):
            a = res.get(source=MODEL, mtbs_in=mi, mtbs_out=mo)
            cells = []
            for job in ("inside", "outside"):
                cells += [fmt(res.mean(job, source=SIM, mtbs_in=mi, mtbs_out=mo)), fmt(a.mean(job)),
                          fmt(a.mean(job + "_stair"))]
                sym = max(sym, abs(a.mean(job) - a.mean(job + "_right")))
            lines.append(f"| {mi} | {mo} | " + " | ".join(cells) + " |")
    lines += ["", f"The right-directed half alone (what the text computes, by symmetry) gives the same job means "
              f"at every point: largest difference {fmt(sym)} µs."]
    return "\n".join(lines)


def _label(p):
    return f"MTBS_in={p['mtbs_in']:g} {'sim' if p['source'] == SIM else 'model'}"


register(Experiment(
    "net-fig5-17", PAPER, "Figures 5.17, 5.18", "two 4x4 transpose jobs: inside and outside job delay vs MTBS_out",
    "Decomposed row by row into left- and right-directed heterogeneous multipath models, the "
    "analysis predicts the mean communication delay of the inside job (Fig 5.17) and of the outside "
    "job (Fig 5.18) for several MTBS of the inside job as the outside job's MTBS varies from 0 to "
    "500 µs: 'The simulation results are verified with the computation of the analytical model for "
    "all cases' (§5.5). Checked here as a procedure on our own layout (Fig 5.16's is lost).",
    two_point, lambda q: [two_params(src, mi, mo, q) for mi in ([0, 100] if q else IN) for src in (SIM, MODEL)
                          for mo in ([0, 500] if q else OUT)],
    ("inside", "outside"),
    [Panel("Fig 5.17: the inside job", "inside", x="mtbs_out", series=_label,
           ylabel="mean delay of the inside job (µs)", xlabel="MTBS of the outside job (µs)", logy=True),
     Panel("Fig 5.18: the outside job", "outside", x="mtbs_out", series=_label,
           ylabel="mean delay of the outside job (µs)", xlabel="MTBS of the outside job (µs)", logy=True)],
    _check, stop_on=("inside", "outside"), table=_table,
    settings=lambda q: ("Wormhole 8x4 mesh, XY routing, L = 500 flits, T_t = 0.05 µs, 1-flit buffers, FCFS, "
                        "non-blocking sink; each path loops send -> delivery -> Exp(MTBS). Inside: 4x4 transpose "
                        "on mesh columns 2-5; outside: 4x4 transpose with logical columns 0-1 on mesh columns "
                        "0-1 and 2-3 on 6-7 (rows shared). MTBS_in "
                        f"{[0, 100] if q else IN}, MTBS_out {[0, 500] if q else OUT} µs. Run length: messages "
                        "per path chosen from the analysis' rates so that a run simulates about 120,000 "
                        "messages (quick 5,000), the first max(2, n/10) discarded. Job delay = mean over its 12 paths."),
    notes=("Readings: the layout is ours, the chapter-6 Scenario A layout with the middle cut "
           "(NETWORK.md 5.5, 6.2, 8.18, 8.19); the text's models for Fig 5.16, (0,0), (0,0), (1,0), "
           "(2,0), (3,2), (0,2), are not ours. Our right-directed models, row 0 to row 3, are: none; "
           "(1,0) and (0,1) apart; (2,2); and (3,3) in which the two crossing outside paths leave the "
           "inside stair and then meet the outside path that starts one column before their "
           "destination. The layout is symmetric under a half turn (row i <-> row 3-i, left <-> "
           "right), as the text says of its own, so the left-directed half gives the same job means; "
           "we average over all 12 paths of each job (the table lists the right half alone). The "
           "m-path readings are those of net-fig5-15 (case 4 physical, upstream-only tau, "
           "lambda-weighted D^Q, this iteration's remaining delay). Our generalised solver is a "
           "private helper (the library's solve_multipath takes one stair only). 'Agrees' means "
           f"within {AGREE:.0%} of the simulated job mean. The MTBS_in values are not stated. Every "
           "series is drawn solid with markers; the legend says sim or model. All sub-claims are "
           "computed from results.csv.")))
