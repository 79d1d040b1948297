"""The live cluster: the daemon, its protocol, journal, client and state directory.

Kept empty: a node agent imports ``emulator.live.protocol`` and must not pay for the rest."""
