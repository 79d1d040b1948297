"""Miscellaneous utilities (mpi4py.util): dtlib for named datatypes; pkl5, pool and sync are
not supported (importing one raises NotImplementedError naming it)."""
