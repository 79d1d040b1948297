"""Dissertation chapter 5 (the heterogeneous multipath contention model): the m-n interaction
figures 5.8-5.12 here (``net-fig5-8`` .. ``net-fig5-12``); the 5-path model (Fig 5.15) in
:mod:`.ch5_paths` and the two transpose jobs (Figs 5.17/5.18) in :mod:`.ch5_two_jobs`.

**The m-n interaction model** (§5.3.2, Fig 5.7, whose drawing is lost). P_i is the bottom path
of a homogeneous m-layer stair with MTBS_i, P_j the bottom path of an n-layer stair with MTBS_j
(NETWORK.md 8.17: the text does not say which path), and the two share one channel H, "the
first contention point for both". Our layout on a mesh (x east, y north):

* P_j starts at (0,0), P_i at (1,0); H is the channel (1,0)->(2,0): P_i's starting channel,
  P_j's second (its first, (0,0)->(1,0), nobody else uses), as in the 2-path model where H is
  the upper path's entrance and the lower path passes it (Fig 5.3).
* P_i's stair runs east along row 0: P_i goes to (m+1,0); its m-1 stair-mates start at
  (2,0) .. (m,0) and go to (m+1,0), joining P_i downstream of H.
* P_j turns north at (2,0) (XY routing) to (2,n); its n-1 stair-mates start at (2,1) ..
  (2,n-1) and go to (2,n), joining P_j in column 2.

So after H each path meets only its own stair: the remaining times after the external
contention are its internal contention delays (§5.3.2), and a path blocked downstream keeps
holding H (wormhole). n = 0 means no P_j (Fig 5.11's origin). The analysis is the 2-path
function f (eqs 5.1-5.11, case 4 read physically, NETWORK.md 8.12) with rd = Dmax of the
bottom path of each stair from chapter 4
(:func:`scheduler.network.heterogeneous.mn_interaction`).
"""
from __future__ import annotations

from emulator.experiments import register
from emulator.experiments import verdict as V
from emulator.experiments.experiment import Check, Experiment, Panel, fmt
from emulator.experiments.network.ch4_sim import LT, MODEL, SIM, messages_for, stair_rates
from emulator.experiments.network.common import AGREE, PAPER, agrees, net_point
from scheduler.network.heterogeneous import mn_interaction


SETTINGS = ("Wormhole mesh, XY routing, L = 500 flits, T_t = 0.05 µs, 1-flit buffers, FCFS, "
            "non-blocking sink; each path loops send -> delivery -> Exp(MTBS). The m-n layout of "
            "the module docstring (P_i and P_j share the channel (1,0)->(2,0); each is the bottom "
            "path of its own stair). Run length: messages per path chosen from the chapter-4 rates "
            "so that a run simulates about 120,000 messages (20 to 4,000 per path; quick 5,000, 6 "
            "to 300), the first max(2, n/10) discarded. Metric: P_i's mean communication delay. ")

NOTES5 = (
    "Readings: the m-n layout is ours (Fig 5.7 is lost): P_i and P_j are the bottom paths of their "
    "stairs (NETWORK.md 8.17) and H is P_i's starting channel and P_j's first contention point; "
    "the analysis is f(MTBS_i, MTBS_j, rd_i, rd_j) with rd = chapter-4 Dmax of the bottom path "
    "of each stair (§5.3.2: 'the internal delays are assumed to be a known value'), case 4 read "
    "physically (a waiter waits half the other path's holding time, NETWORK.md 8.12), the "
    "ceiling of eq 5.4 as printed, E[N_t] = E[N_i] (8.13), halves of means for remaining times "
    "(8.11). Our figures draw every series solid with markers; the legend says sim or model "
    "(the text: solid = simulation, dotted = analysis). 'Agrees' means within "
    f"{AGREE:.0%} of the simulated mean delay. All sub-claims are computed from results.csv.")


def mn_jobs(m: int, n: int, mtbs_i: float, mtbs_j: float) -> tuple[str, list]:
    """(topology, job dicts) of the m-n layout; P_i is path 0, P_j path m."""
    jobs = [{"name": "i", "paths": [[[1, 0], [m + 1, 0]]] + [[[x, 0], [m + 1, 0]] for x in range(2, m + 1)],
             "mtbs": [mtbs_i] * m}]
    if n:
        jobs.append({"name": "j", "paths": [[[0, 0], [2, n]]] + [[[2, y], [2, n]] for y in range(1, n)],
                     "mtbs": [mtbs_j] * n})
    return f"mesh:{max(3, m + 2)}x{n + 1}", jobs


def mn_params(source: str, m: int, n: int, mtbs_i: float, mtbs_j: float, quick: bool, **kw) -> dict:
    p = {"source": source, "m": m, "n": n, "mtbs_i": mtbs_i, "mtbs_j": mtbs_j, **kw}
    if source == SIM:
        topo, jobs = mn_jobs(m, n, mtbs_i, mtbs_j)
        rates = stair_rates(m, mtbs_i) + (stair_rates(n, mtbs_j) if n else [])
        msgs, w = messages_for(rates, quick)
        p.update(topology=topo, jobs=jobs, messages=msgs, warmup=w)
    return p


def mn_point(params: dict, seed: int) -> dict:
    """P_i's (``d_i``) and P_j's (``d_j``) mean delay in µs, simulated or by the 2-path model."""
    m, n = params["m"], params["n"]
    if params["source"] == MODEL:
        r = mn_interaction(m, n, params["mtbs_i"], params["mtbs_j"])
        return {"d_i": r.d_i} | ({"d_j": r.d_j} if n else {})
    r = net_point(params, seed)
    return {"d_i": r["delay#0"]} | ({"d_j": r[f"delay#{m}"]} if n else {})


def _src(p):
    return "sim" if p["source"] == SIM else "model"


def _d(res, **w):
    """P_i's mean delay at the one point matching ``w``, with its CI (the analysis: exact)."""
    return res.est("d_i", **w)


def _agree(c, res, what, **where):
    rows = []
    for p in res.select(source=SIM, **where):
        key = {k: p.params[k] for k in ("m", "n", "mtbs_i", "mtbs_j")}
        rows.append((key, p.est("d_i"), _d(res, source=MODEL, **key)))
    agrees(c, rows, what)


def _falls(v):
    """Each estimate strictly above the next."""
    return V.every(V.greater(a, b) for a, b in zip(v, v[1:]))


def _ordered(c, res, text, series, xkey, where):
    """Every x: the series' delays strictly decrease in the order given (sim, then model)."""
    for src in (SIM, MODEL):
        xs = res.values(xkey, source=src, **where)
        outs, bad = [], []
        for x in xs:
            v = [_d(res, source=src, **{xkey: x}, **where, **s) for s in series]
            outs.append(_falls(v))
            if outs[-1] != V.HOLDS:
                bad.append(f"{x}: " + " / ".join(str(y) for y in v) + f" ({outs[-1]})")
        c(V.every(outs), f"{'simulation' if src == SIM else 'analysis'}: {text}"
          + (f" (not beyond the CIs at {xkey} {'; '.join(bad)})" if bad else ""))


# ------------------------------------------------------------------ Figure 5.8

I8, J8 = [0, 25, 50, 100, 250, 500, 1000], [0, 25, 100]


def _grid58(quick):
    xis = [0, 100, 1000] if quick else I8
    out = [mn_params(src, 1, 1, xi, xj, quick) for xj in ([0, 100] if quick else J8) for src in (SIM, MODEL)
           for xi in xis]
    return out + [mn_params(src, 1, 0, xi, 0, quick) for src in (SIM, MODEL) for xi in xis]


def _label58(p):
    return f"no interaction {_src(p)}" if p["n"] == 0 else f"MTBS_j={p['mtbs_j']:g} {_src(p)}"


def _check58(res):
    c = Check()
    alone = [p.mean("d_i") for p in res.select(n=0)]
    # a message alone in the network takes L x T_t by construction: the data cannot say otherwise
    c.note(V.NOT_INFORMATIVE, "the lowest line is the transmission delay alone, 25 µs, for every MTBS_i "
           f"({fmt(min(alone))}..{fmt(max(alone))} µs): with no P_j a message meets no contention, so its delay "
           "is L x T_t by construction")
    js = res.values("mtbs_j", n=1)
    series = [{"mtbs_j": j, "n": 1} for j in js] + [{"n": 0, "mtbs_j": 0}]
    _ordered(c, res, "P_i's delay rises as P_j's rate rises, for every MTBS_i "
             f"(MTBS_j {', '.join(f'{j:g}' for j in js)}, then no P_j)", series, "mtbs_i", {"m": 1})
    xs = res.values("mtbs_i")
    for src in (SIM, MODEL):
        inc = {j: (_d(res, source=src, n=1, mtbs_j=j, mtbs_i=xs[0]) - LT,
                   _d(res, source=src, n=1, mtbs_j=j, mtbs_i=xs[-1]) - LT) for j in js}
        c(V.every(V.greater(a, b) for a, b in inc.values()),
          f"{'simulation' if src == SIM else 'analysis'}: the increase is larger at high rates of P_i (MTBS_i "
          f"{xs[0]} vs {xs[-1]}: "
          + ", ".join(f"MTBS_j {j:g}: +{a} vs +{b} µs" for j, (a, b) in inc.items()) + ")")
    both = [x for x in res.values("mtbs_i") if x in js]
    pairs = [(a, b) for a in both for b in both if a != b]
    if pairs:
        dev = {(a, b): res.est("d_j", source=SIM, n=1, mtbs_i=a, mtbs_j=b)
               / _d(res, source=SIM, n=1, mtbs_i=b, mtbs_j=a) - 1 for a, b in pairs}
        c(V.every(V.within(v, 0.05) for v in dev.values()), "simulation: the effects of P_i on P_j are identical "
          "to those of P_j on P_i (P_j's delay at (MTBS_i, MTBS_j) = (a, b) against P_i's at (b, a): "
          + ", ".join(f"({a}, {b}): {100 * v}%" for (a, b), v in dev.items()) + ")",
          tol="5% of P_i's delay", why="the two runs are different random streams of a symmetric layout: 'identical' "
          "allows their finite-run difference, 5% being past the CIs of these runs")
    _agree(c, res, "1-1 model", n=1)
    return c


register(Experiment(
    "net-fig5-8", PAPER, "Figure 5.8", "1-1 model: delay of P_i vs MTBS_i for MTBS_j = 0, 25, 100",
    "'Since P_i does not have any internal contention, the communication delay of P_i without "
    "interactions with P_j is merely the transmission delay, i.e., 25 µsec, as shown on the lowest "
    "plot [...] As the communication rate of P_j increases, the communication delay of P_i increases "
    "for all ranges of communication rates of P_i. It increases more significantly for high rates' "
    "(§5.3.2); the section compares the 2-path analysis with simulation.",
    mn_point, _grid58, ("d_i",),
    [Panel("(a) Fig 5.8: P_i in the 1-1 interaction model", "d_i", x="mtbs_i", series=_label58,
           ylabel="mean communication delay of P_i (µs)", xlabel="MTBS of P_i (µs)"),
     Panel("(b) P_j in the same runs (the text: the effects are identical)", "d_j", x="mtbs_i",
           where={"n": 1}, series=_label58, ylabel="mean communication delay of P_j (µs)", xlabel="MTBS of P_i (µs)")],
    _check58, stop_on=("d_i",),
    settings=lambda q: SETTINGS + f"m = n = 1; MTBS_i {[0, 100, 1000] if q else I8}, MTBS_j "
    f"{[0, 100] if q else J8} and no P_j.",
    notes=NOTES5 + " 'More significantly for high rates' is read as high rates of P_i (NETWORK.md 5.4: "
    "'most at small MTBS_i'): the increase over 25 µs at the smallest MTBS_i exceeds that at the largest."))


# ------------------------------------------------------------------ Figure 5.9

I9, J9 = [0, 25, 100, 250, 1000], [0, 25, 50, 100, 250, 500, 1000]


def _grid59(quick):
    return [mn_params(src, 1, 1, xi, xj, quick) for xi in ([0, 250] if quick else I9) for src in (SIM, MODEL)
            for xj in ([0, 100, 1000] if quick else J9)]


def _check59(res):
    c = Check()
    for src in (SIM, MODEL):
        outs, bad = [], []
        for xi in res.values("mtbs_i"):
            v = [_d(res, source=src, mtbs_i=xi, mtbs_j=xj) for xj in res.values("mtbs_j")]
            outs.append(_falls(v))
            if outs[-1] != V.HOLDS:
                bad.append(f"MTBS_i {xi}: " + ", ".join(str(y) for y in v) + f" ({outs[-1]})")
        c(V.every(outs), f"{'simulation' if src == SIM else 'analysis'}: the smaller MTBS_j, the larger P_i's delay, "
          "for every MTBS_i" + (f" (not beyond the CIs: {'; '.join(bad)})" if bad else ""))
    _agree(c, res, "1-1 model")
    return c


register(Experiment(
    "net-fig5-9", PAPER, "Figure 5.9", "1-1 model: delay of P_i vs MTBS_j for MTBS_i = 0, 25, 100, 250, 1000",
    "'As the MTBS of P_j becomes smaller (i.e., the communication rate becomes larger), the "
    "analytical results show that the mean communication delay of P_i becomes larger' (§5.3.2).",
    mn_point, _grid59, ("d_i",),
    [Panel(f"({'ab'[i]}) 1-1 model: {name}", "d_i", x="mtbs_j", where={"source": src},
           series=lambda p: f"MTBS_i={p['mtbs_i']:g} {_src(p)}",
           ylabel="mean communication delay of P_i (µs)", xlabel="MTBS of P_j (µs)")
     for i, (src, name) in enumerate(((MODEL, "analysis (the text's 'analytical results')"), (SIM, "simulation")))],
    _check59, stop_on=("d_i",),
    settings=lambda q: SETTINGS + f"m = n = 1; MTBS_i {[0, 250] if q else I9}, MTBS_j {[0, 100, 1000] if q else J9}.",
    notes=NOTES5))


# ------------------------------------------------------------------ Figure 5.10

I10, N10 = [0, 25, 50, 100, 250, 500], [1, 3, 5]


def _grid510(quick):
    return [mn_params(src, 1, n, xi, 25, quick) for n in ([1, 5] if quick else N10) for src in (SIM, MODEL)
            for xi in ([0, 250] if quick else I10)]


def _check510(res):
    c = Check()
    ns = sorted(res.values("n"), reverse=True)
    _ordered(c, res, "more layers around P_j give P_i a larger delay at every MTBS_i ("
             + ", ".join(f"1-{n}" for n in ns) + ")", [{"n": n} for n in ns], "mtbs_i", {})
    _agree(c, res, "1-1, 1-3, 1-5 models")
    return c


register(Experiment(
    "net-fig5-10", PAPER, "Figure 5.10", "1-1, 1-3, 1-5 models: delay of P_i vs MTBS_i (MTBS_j = 25)",
    "'the internal contention delay of the path increases as the number of layers becomes large. "
    "This increase in the internal contention delay can effect the performance of P_i' (§5.3.2, "
    "Fig 5.10: P_j in 1, 3 or 5 layers, MTBS_2 = 25).",
    mn_point, _grid510, ("d_i",),
    [Panel("(a) Fig 5.10: P_i, MTBS of P_j = 25 µs", "d_i", x="mtbs_i", series=lambda p: f"1-{p['n']} {_src(p)}",
           ylabel="mean communication delay of P_i (µs)", xlabel="MTBS of P_i (µs)", logy=True),
     Panel("(b) P_j (its holding time of the shared channel)", "d_j", x="mtbs_i", series=lambda p: f"1-{p['n']} {_src(p)}",
           ylabel="mean communication delay of P_j (µs)", xlabel="MTBS of P_i (µs)", logy=True)],
    _check510, stop_on=("d_i",),
    settings=lambda q: SETTINGS + f"m = 1, n {[1, 5] if q else N10}, MTBS_j = 25; MTBS_i {[0, 250] if q else I10}.",
    notes=NOTES5 + " The caption's MTBS_2 is MTBS_j."))


# ------------------------------------------------------------------ Figure 5.11

N11, PAIRS11 = list(range(8)), [(25, 25), (100, 25), (500, 25), (25, 500), (100, 500), (500, 500)]


def _grid511(quick):
    pairs = [(25, 25), (25, 500)] if quick else PAIRS11
    return [mn_params(src, 1, n, xi, xj, quick) for xi, xj in pairs for src in (SIM, MODEL)
            for n in ([0, 3] if quick else N11)]


def _check511(res):
    c = Check()
    ns = res.values("n")
    for src in (SIM, MODEL):
        name = "simulation" if src == SIM else "analysis"
        for xj, test, text in ((500, lambda v: V.every(V.not_more(x, 1.1 * v[0]) for x in v[1:]),
                                "P_j at MTBS 500 does not affect P_i: within 10% of the no-P_j delay at every number "
                                "of layers"),
                               (25, lambda v: V.not_more(2 * v[0], v[-1]), f"P_j at MTBS 25 increases P_i's delay "
                                f"greatly: at least doubled from 0 to {ns[-1]} layers")):
            rows = {xi: [_d(res, source=src, mtbs_i=xi, mtbs_j=xj, n=n) for n in ns]
                    for xi in res.values("mtbs_i", source=src, mtbs_j=xj)}
            c(V.every(test(v) for v in rows.values()), f"{name}: {text}, for every MTBS_i ("
              + "; ".join(f"MTBS_i {xi}: {v[0]} -> {v[-1]} (max {max(v, key=lambda e: e.mean)})"
                          for xi, v in rows.items()) + ")")
    _agree(c, res, "1-n models", n=lambda n: n > 0)
    return c


register(Experiment(
    "net-fig5-11", PAPER, "Figure 5.11", "delay of P_i vs number of layers of P_j",
    "'the communication of P_i is not affected by the communication of P_j, when P_j sends message "
    "slowly at around 500 µsec. Nevertheless, at high rates such as 25 µsec, the communication delay "
    "of P_i increases greatly for all ranges of MTBS of P_i' (§5.3.2; P_j's layers 0-7, P_i's 1).",
    mn_point, _grid511, ("d_i",),
    [Panel(f"({'ab'[i]}) P_i in 1 layer, P_j at MTBS {xj}; pair = (MTBS_i, MTBS_j)", "d_i", x="n",
           where={"mtbs_j": xj}, series=lambda p: f"({p['mtbs_i']:g}, {p['mtbs_j']:g}) {_src(p)}",
           ylabel="mean communication delay of P_i (µs)", xlabel="number of layers of P_j", logy=xj == 25)
     for i, xj in enumerate((25, 500))],
    _check511, stop_on=("d_i",),
    settings=lambda q: SETTINGS + f"m = 1, n {[0, 3] if q else N11}; (MTBS_i, MTBS_j) "
    f"{[(25, 25), (25, 500)] if q else PAIRS11} (the text's pairs are not stated; it names 500 and 25 for P_j).",
    notes=NOTES5 + " 'Not affected' is read as within 10% of the delay without P_j, 'increases greatly' "
    "as at least doubled at 7 layers."))

# ------------------------------------------------------------------ Figure 5.12

K12, I12, J12 = [1, 3, 5], [0, 25, 100, 500], [0, 25, 50, 100, 250, 500]


def _grid512(quick):
    return [mn_params(src, k, k, xi, xj, quick) for k in K12 for xi in ([0, 100] if quick else I12)
            for src in (SIM, MODEL) for xj in ([0, 500] if quick else J12)]


def _check512(res):
    c = Check()
    ks, xs, js = res.values("m"), res.values("mtbs_i"), res.values("mtbs_j")

    def show(rise, base):
        return ", ".join(f"{xi}: {'+' if rise[xi].mean >= 0 else ''}{rise[xi]} µs "
                         f"({fmt(100 * rise[xi].mean / base[xi].mean, 3)}%)" for xi in xs)

    for src in (SIM, MODEL):
        name = "simulation" if src == SIM else "analysis"
        d = {(k, xi, xj): _d(res, source=src, m=k, mtbs_i=xi, mtbs_j=xj) for k in ks for xi in xs for xj in js}
        # a small decrease of MTBS_j: the step between its two smallest values, in µs of P_i's delay
        outs, parts = [], []
        for k in ks:
            rise = {xi: d[k, xi, js[0]] - d[k, xi, js[1]] for xi in xs}
            outs += [V.not_more(rise[xi], rise[xs[0]]) for xi in xs[1:]]
            parts.append(f"k={k}: " + show(rise, {xi: d[k, xi, js[1]] for xi in xs}))
        c(V.every(outs), f"{name}: at MTBS_i = {xs[0]} a small decrease of MTBS_j ({js[1]} -> {js[0]}) adds the most to P_i's "
          "delay, for every k (" + "; ".join(parts) + ")")
        if len(ks) > 1:
            outs, parts = [], []
            for xj in js:
                rise = {xi: d[ks[1], xi, xj] - d[ks[0], xi, xj] for xi in xs}
                outs += [V.not_more(rise[xi], rise[xs[0]]) for xi in xs[1:]]
                parts.append(f"MTBS_j {xj}: " + show(rise, {xi: d[ks[0], xi, xj] for xi in xs}))
            c(V.every(outs), f"{name}: at MTBS_i = {xs[0]} a small increase in layers ({ks[0]}-{ks[0]} -> {ks[1]}-{ks[1]}) adds "
              "the most to P_i's delay, for every MTBS_j (" + "; ".join(parts) + ")")
    _agree(c, res, "k-k models")
    return c


register(Experiment(
    "net-fig5-12", PAPER, "Figure 5.12", "k-k models: delay of P_i vs MTBS_j (combined factors)",
    "'At extremely small values of MTBS of P_i, a small decrease in the MTBS of P_j or a small "
    "increase in the number of layers causes very significant interactions. At other rates of MTBS "
    "of P_i, the decrease of MTBS of P_j or an increase in the number of layers of P_j increases the "
    "communication time of P_i less significantly' (§5.3.2).",
    mn_point, _grid512, ("d_i", "d_j"),
    [Panel(f"{k}-{k} model", "d_i", x="mtbs_j", where={"m": k},
           series=lambda p: f"({p['m']}-{p['m']}, {p['mtbs_i']:g}) {_src(p)}",
           ylabel="mean communication delay of P_i (µs)", xlabel="MTBS of P_j (µs)", logy=True) for k in K12],
    _check512, stop_on=("d_i",), layout=(1, 3),
    settings=lambda q: SETTINGS + f"k-k models, k {K12}; MTBS_i {[0, 100] if q else I12}; "
    f"MTBS_j {[0, 500] if q else J12}.",
    notes=NOTES5 + " Fig 5.12's x axis is not stated; we take MTBS of P_j, with series (k-k model, "
    "MTBS_i) as the caption's pairs. The text's Fig 5.12 has dotted = simulation, solid = "
    "prediction. 'A small decrease in MTBS_j' is the step between the two smallest MTBS_j, 'a small "
    "increase in layers' the step from k = 1 to k = 3; 'very significant interactions' are judged "
    "by the µs they add to P_i's delay (what a linear plot shows; the relative rise is given too). "
    "With k-k models P_i's own stair grows with k as well."))

# after Figures 5.8-5.12, so that the experiments are listed in the chapter's order
from emulator.experiments.network import ch5_paths, ch5_two_jobs  # noqa: E402,F401 - register 5.15, 5.17
