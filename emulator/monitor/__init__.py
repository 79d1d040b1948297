"""The live monitor: ``model`` (state from the daemon's events), ``view`` (pure Rich
rendering of a view dict), ``app`` (the loop: SUB socket, keys, Rich Live)."""
