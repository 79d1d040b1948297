#!/usr/bin/env python
"""Submit one job to the running cluster: ``python scripts/submit.py --cube 3 --runtime 10``
(same as ``mcemu submit``)."""
import sys

from emulator.cli import main

if __name__ == "__main__":
    sys.exit(main(["submit", *sys.argv[1:]]))
