import sys
from emulator.cli import main
sys.exit(main(sys.argv[1:]))
