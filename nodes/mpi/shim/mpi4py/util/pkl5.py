"""mpi4py.util.pkl5 is not offered by mcemu: importing it says so (not a ModuleNotFoundError)."""
raise NotImplementedError("mpi4py's mpi4py.util.pkl5 is not supported by mcemu")
