"""Gang scheduling (Zhou, Brent and Qu 1997, "multilevel two-queue coscheduling"): equation (3)
of section 3, and the policies of sections 3-6 compared on a hyperexponential workload.

Both run the gang simulator of :mod:`emulator.sim.gang` (its work, context-switch and
cache-reload model is documented there).

* ``gang-eq3``: the perfectly balanced closed system of section 3 (M = L N jobs always
  present, each completion brings in the next job), jobs entering in increasing order of
  service time, zero switch cost. The simulated two-queue turnaround of job i is compared
  with equation (3), T^(i) = N sum_{k=0}^{L-1} T_{i-kN}, on the paper's scope: i > M (the
  text: "we are interested in ... the cases when i > M") and i <= K - N + 1 for a list of K
  jobs (the last N-1 jobs see the service queue drain, which the derivation excludes; this is
  the reading of tests/test_gang.py). Service times are whole numbers of slots (the
  derivation's T_s = N T_0 needs every slot used in full).
* ``gang-compare``: round robin, two-queue, multilevel and FB on Poisson arrivals with
  hyperexponential run times, with a context-switch cost and a cache-reload penalty.
"""
from __future__ import annotations

# each module registers its experiment on import; this order is the order of ``mcemu reproduce
# --list`` and of the results index
from emulator.experiments.gang import eq3, compare  # noqa: F401
