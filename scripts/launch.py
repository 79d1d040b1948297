#!/usr/bin/env python
"""Launch a live cluster: ``python scripts/launch.py [mcemu up options]`` (same as ``mcemu up``)."""
import sys

from emulator.cli import main

if __name__ == "__main__":
    sys.exit(main(["up", *sys.argv[1:]]))
