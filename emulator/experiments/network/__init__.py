"""Dissertation chapters 4-6 (the interconnection network) and our job-level experiment:
one module per chapter (split by figure group where a chapter is long); importing the package
registers them."""
from __future__ import annotations

from emulator.experiments import REGISTRY
from emulator.experiments.network import ch4, ch5, ch6, jobs  # noqa: F401  (they register)
from emulator.experiments.network.common import analysis_dotted

# the figures' own convention, once for every chapter's panels: analysis dotted
for _name in REGISTRY.names():
    if _name.startswith("net-fig"):
        for _panel in REGISTRY.get(_name).panels:
            if _panel.linestyle is None:
                _panel.linestyle = analysis_dotted
