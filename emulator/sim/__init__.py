"""Virtual time: the event engine, the simulators, workloads, SWF logs and the metrics.

``from emulator.sim import simulate`` (and Simulation, SimResult, SimulationError) load the
simulator on first use: importing it builds every policy registry (about 90 ms), which the
live monitor, importing only ``emulator.sim.metrics`` for the formulas, does not need.
"""
_SIMULATOR = ("SimResult", "Simulation", "SimulationError", "simulate")


def __getattr__(name):
    if name in _SIMULATOR:
        from emulator.sim import simulator

        return getattr(simulator, name)
    raise AttributeError(f"module 'emulator.sim' has no attribute {name!r}")


__all__ = list(_SIMULATOR)
