"""The pure policy core of mcemu: topologies, allocators, size reduction, disciplines, gang.

Nothing in this package reads a clock, sleeps, opens a socket or prints: time is an argument,
decisions are return values, so the simulator and the live daemon drive the same objects.
"""
