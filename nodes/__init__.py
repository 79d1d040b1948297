"""The node agent: the OS process that plays one processor of the emulated machine."""
