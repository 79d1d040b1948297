"""mpi4py.futures needs dynamic process management (MPI_Comm_spawn) or a pool over COMM_WORLD's
ranks; neither is offered: importing it says so, instead of a ModuleNotFoundError that would
send a user looking for a missing installation."""
raise NotImplementedError("mpi4py's mpi4py.futures is not supported by mcemu")
