"""``python -m emulator.cli``: the same as the ``mcemu`` console script."""
from emulator.cli import entry

entry()
