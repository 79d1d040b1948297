"""Mesh processor management dissertation: BWQ (chapter 7, Figures 7.5-7.9) and HELM
(chapter 8, Figures 8.2-8.8).

Chapter 7 (7.2): a 16x16 mesh with frame sliding, Poisson arrivals, exponential hold times
independent of the submesh size ("uncorrelated", our dependent-demand mode), the four job
shape classes of 7.1. The mean hold time is not given; we use 5 (only the time scale
depends on it). Chapter 8 (8.2): a 32x32 mesh with first fit, exponential service of mean 20,
a processor count uniform over 1..1024 given the smallest submesh that holds it, the load set
by the mean inter-arrival time IATM. Neither chapter states a run length; we run 20,500
completions and discard the first 500 (the RSR paper's protocol, scaled), replicating until
the 95% confidence half-width is within 5% (8.2: "batches of 1000 jobs until a 95% confidence
interval is achieved").

One module per chapter: ``common`` (what both share: the run length, the base points ``ch7`` and
``ch8``, the settings text and the notes of every report), ``ch7_bwq`` (Figures 7.5-7.9 and
``balanced_limits``), ``ch8_helm`` (Figures 8.2-8.8 and the two open readings). The
dissertation's network chapters 4-6 are the ``network`` package.
"""
from __future__ import annotations

# each module registers its experiments on import; this order is the order of ``mcemu reproduce
# --list`` and of the results index (the dissertation's figure order)
from emulator.experiments.dissertation.common import (
    CHANGED8, N_FULL, N_QUICK, NOTES7, NOTES8, PAPER, W_FULL, W_QUICK,
    ch7, ch7_settings, ch8, ch8_settings, q_label, run_len,
)
from emulator.experiments.dissertation.ch7_bwq import (
    BQSLS, CH7_LOADS, FIXED, SHAPES, WINDOWS, balanced_limits,
)
from emulator.experiments.dissertation.ch8_helm import (
    HELM_D, HIGH_IATM, IATMS, K1S, K2S, MEDIUM_IATM, MQ_D, READINGS, TUNING_IATM,
)

__all__ = [
    "PAPER", "N_FULL", "W_FULL", "N_QUICK", "W_QUICK", "run_len", "ch7", "ch8", "ch7_settings",
    "ch8_settings", "q_label", "NOTES7", "NOTES8", "CHANGED8",
    "CH7_LOADS", "SHAPES", "BQSLS", "FIXED", "WINDOWS", "balanced_limits",
    "IATMS", "TUNING_IATM", "K1S", "K2S", "HELM_D", "MQ_D", "READINGS", "MEDIUM_IATM", "HIGH_IATM",
]
