"""Lazy scheduling for hypercubes (Mohapatra, Yu and Das, journal paper, sections 4-5):
Figures 3-10 and Table I.

Common settings (section 4): a 10-cube with the buddy allocator under every discipline,
Poisson arrivals at lambda = 2^n / (mean job size x mean residence) x load, cube sizes
0..9 uniform (p_i = 1/10) or the paper's discretized normal, residence time uniform on
(0, 10] or bimodal hyperexponential (mean 5, Cx 4, alpha 0.95), dependent demand, observation
time T = 10,000 units. "Scan" is ``scan-up`` with its defaults and lazy uses the paper's
dynamic threshold d_t^2 lambda (``threshold="dynamic"``); static is the fixed partitioning
of section 3.1.

One module per figure group: ``common`` (the shared settings), ``delay`` (Figures 3, 4),
``utilization`` (5-7), ``observation`` (8), ``power`` (Table I), ``completion`` (9),
``allocators`` (10), ``independent`` (section 5's independent-demand runs).
"""
from __future__ import annotations

# each module registers its experiments on import; this order is the order of ``mcemu reproduce
# --list`` and of the results index (the paper's figure order)
from emulator.experiments.lazy import (  # noqa: F401
    delay, utilization, observation, power, completion, allocators, independent,
)
