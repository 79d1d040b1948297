"""``python -m mpi4py ...``: mcemu's mpi4py.run (the launcher mpi4py's documentation recommends)."""
from mpi4py.run import main

if __name__ == "__main__":
    main()
