"""Dissertation chapters 4-6 (the interconnection network) and our job-level experiment:
one module per chapter; importing the package registers them."""
from __future__ import annotations

import importlib

for _m in ("ch4", "ch5", "ch6", "jobs"):
    try:
        importlib.import_module(f"{__name__}.{_m}")
    except ModuleNotFoundError as e:  # a chapter not written yet
        if e.name != f"{__name__}.{_m}":
            raise
