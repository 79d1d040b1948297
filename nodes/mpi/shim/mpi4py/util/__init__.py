"""Miscellaneous utilities (mpi4py.util): dtlib for named datatypes, pkl5's communicators and
pool's multiprocessing-like Pool (over mpi4py.futures); sync is not supported (importing it
raises NotImplementedError naming it)."""
