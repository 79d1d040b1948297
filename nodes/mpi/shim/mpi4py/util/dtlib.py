"""mpi4py.util.dtlib for the named datatypes (the only ones mcemu has): a numpy dtype's MPI
datatype and back. A structured or sub-array dtype would need a derived datatype."""
import numpy as np

from nodes.mpi.constants import Datatype, datatype_of
from nodes.mpi.errors import unsupported

__all__ = ["from_numpy_dtype", "to_numpy_dtype"]


def from_numpy_dtype(dtype) -> Datatype:
    dtype = np.dtype(dtype)
    if dtype.fields is not None or dtype.subdtype is not None:
        raise unsupported(f"mpi4py.util.dtlib.from_numpy_dtype of {dtype} (a derived datatype)")
    return datatype_of(dtype)


def to_numpy_dtype(datatype: Datatype) -> np.dtype:
    return datatype.dtype
