"""Everything of mcemu that touches the outside world: the simulator, workloads, metrics,
SWF, the daemon, protocol, journal, client, CLI and monitor."""
