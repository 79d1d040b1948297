"""``mpi4py.MPI`` is nodes.mpi.MPI itself (one module, one COMM_WORLD): this module replaces
itself in sys.modules, which the import system then binds as ``mpi4py.MPI``."""
import sys

from nodes.mpi import MPI as _MPI

sys.modules[__name__] = _MPI
