"""Virtual time: the event engine, the simulators, workloads, SWF logs and the metrics."""
from emulator.sim.simulator import SimResult, Simulation, SimulationError, simulate

__all__ = ["SimResult", "Simulation", "SimulationError", "simulate"]
