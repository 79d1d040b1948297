"""The constants of mpi4py's MPI module that programs use: special ranks and tags (MPICH's
values), datatypes (each with the numpy dtype of its C type) and reduction operations.

A datatype here is a named element type only (no derived types): ``Get_size``, ``extent``,
``Commit``/``Free`` are accepted; ``Create_*`` are not supported. An operation applies to
two Python objects (the object API: mpi4py's functions, ``a + b``, ``b if b > a else a``,
``bool(a) & bool(b)``..., whatever the objects are) or, in the buffer API, to two numpy arrays
element-wise (``numpy.add``...); the MPI layer always combines operands in
rank order (left = lower ranks), so a reduction is deterministic.
"""
from __future__ import annotations

import numpy as np

from nodes.mpi.errors import ERR_OP, ERR_TYPE, MPIException, UnsupportedMeta, unsupported

PROC_NULL, ANY_SOURCE, ROOT, ANY_TAG = -1, -2, -3, -1
UNDEFINED = -32766
TAG_MAX = (1 << 29) - 1  # the largest tag: MPICH's (what Get_attr(TAG_UB) answers there)
# the predefined attribute keyvals (Comm.Get_attr), MPICH's handles; MPI.TAG_UB is a keyval,
# not the bound (mpi4py's and C's meaning)
TAG_UB, IO, WTIME_IS_GLOBAL, UNIVERSE_SIZE, LASTUSEDCODE, APPNUM = (
    0x64400001, 0x64400005, 0x64400007, 0x64400009, 0x6440000B, 0x6440000D)
KEYVAL_INVALID = 0x24000000
IDENT, CONGRUENT, SIMILAR, UNEQUAL = 0, 1, 2, 3
GRAPH, CART, DIST_GRAPH = 1, 2, 3  # MPICH's MPI_GRAPH, MPI_CART, MPI_DIST_GRAPH
THREAD_SINGLE, THREAD_FUNNELED, THREAD_SERIALIZED, THREAD_MULTIPLE = 0, 1, 2, 3
# the standard this layer follows: MPI 3.1's calls as mpi4py offers them (no MPI-4 feature:
# sessions, partitioned communication, large counts), whatever MPICH 4 says of itself
VERSION, SUBVERSION = 3, 1
BSEND_OVERHEAD = 96
MAX_PROCESSOR_NAME = 256
MAX_ERROR_STRING = 512


class _Sentinel:
    def __init__(self, name: str):
        self._name = name

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.{self._name}>"


IN_PLACE = _Sentinel("IN_PLACE")
BOTTOM = _Sentinel("BOTTOM")
ERRORS_RETURN = _Sentinel("ERRORS_RETURN")
ERRORS_ARE_FATAL = _Sentinel("ERRORS_ARE_FATAL")
INFO_NULL = _Sentinel("INFO_NULL")


class Datatype(metaclass=UnsupportedMeta):
    """A named MPI datatype: its numpy dtype, ``Get_size()`` bytes an element."""

    def __init__(self, name: str, dtype):
        # MPI's name (Get_name), as MPICH gives it: MPI.DOUBLE is "MPI_DOUBLE"
        self.name, self.dtype = f"MPI_{name}", np.dtype(dtype)
        self.size = self.extent = self.ub = self.dtype.itemsize
        self.lb = 0

    def Get_size(self) -> int:
        return self.size

    def Get_extent(self) -> tuple[int, int]:
        return 0, self.size

    def Get_name(self) -> str:
        return self.name

    def Commit(self) -> "Datatype":
        return self

    def Dup(self) -> "Datatype":
        return self

    def Free(self) -> None:
        pass

    def __getattr__(self, name: str):
        raise unsupported(f"Datatype.{name}")

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.Datatype {self.name}>"


def _types() -> dict[str, Datatype]:
    spec = {
        "CHAR": "S1", "SIGNED_CHAR": "i1", "UNSIGNED_CHAR": "u1", "BYTE": "u1", "SHORT": "i2",
        "UNSIGNED_SHORT": "u2", "INT": "i4", "UNSIGNED": "u4", "LONG": "i8", "UNSIGNED_LONG": "u8",
        "LONG_LONG": "i8", "UNSIGNED_LONG_LONG": "u8", "FLOAT": "f4", "DOUBLE": "f8", "LONG_DOUBLE": "g",
        "INT8_T": "i1", "INT16_T": "i2", "INT32_T": "i4", "INT64_T": "i8", "UINT8_T": "u1",
        "UINT16_T": "u2", "UINT32_T": "u4", "UINT64_T": "u8", "BOOL": "?", "C_BOOL": "?",
        "C_FLOAT_COMPLEX": "c8", "C_COMPLEX": "c8", "C_DOUBLE_COMPLEX": "c16", "COMPLEX": "c8",
        "DOUBLE_COMPLEX": "c16", "WCHAR": "U1", "INTEGER": "i4", "REAL": "f4", "DOUBLE_PRECISION": "f8",
        "LOGICAL": "i4", "CHARACTER": "S1", "AINT": "i8", "OFFSET": "i8", "COUNT": "i8",
    }
    return {name: Datatype(name, dt) for name, dt in spec.items()}


DATATYPES = _types()
DATATYPE_NULL = Datatype("DATATYPE_NULL", "u1")
# the datatype of a numpy array given without one (mpi4py's MPI._typedict, by dtype.char)
_typedict = {np.dtype(c).char: DATATYPES[n] for c, n in [
    ("f8", "DOUBLE"), ("f4", "FLOAT"), ("g", "LONG_DOUBLE"), ("i1", "SIGNED_CHAR"), ("i2", "SHORT"),
    ("i4", "INT"), ("i8", "LONG"), ("u1", "UNSIGNED_CHAR"), ("u2", "UNSIGNED_SHORT"), ("u4", "UNSIGNED"),
    ("u8", "UNSIGNED_LONG"), ("?", "C_BOOL"), ("c8", "C_FLOAT_COMPLEX"), ("c16", "C_DOUBLE_COMPLEX"),
    ("S1", "CHAR"), ("U1", "WCHAR")]}
_typedict["q"], _typedict["Q"] = DATATYPES["LONG_LONG"], DATATYPES["UNSIGNED_LONG_LONG"]
_typedict["b"], _typedict["B"] = DATATYPES["SIGNED_CHAR"], DATATYPES["UNSIGNED_CHAR"]


def datatype_of(dtype: np.dtype) -> Datatype:
    t = _typedict.get(dtype.char)
    if t is None or t.dtype.itemsize != dtype.itemsize:
        raise MPIException(ERR_TYPE, f"no MPI datatype for numpy dtype {dtype}")
    return t


def _maxloc(x, y):
    (u, i), (v, j) = x, y
    if u > v:
        return u, i
    return (v, j) if v > u or j < i else (u, i)


def _minloc(x, y):
    (u, i), (v, j) = x, y
    if u < v:
        return u, i
    return (v, j) if v < u or j < i else (u, i)


class Op(metaclass=UnsupportedMeta):
    """A reduction operation: ``op(a, b)`` combines two Python objects or numpy arrays."""

    def __init__(self, name: str, py, arr=None, logical: bool = False):
        self.name, self._py, self._arr, self._logical = name, py, arr, logical

    def __call__(self, a, b):
        # mpi4py's object reduction is the plain Python function whatever the operands: MAX of
        # two numpy arrays raises (their comparison has no truth value), SUM adds them
        return self._py(a, b)

    def arrays(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The buffer API's form: element-wise, the result in a's dtype."""
        if self._arr is None:
            raise MPIException(ERR_OP, f"MPI.{self.name} on buffers is not supported by mcemu (use the object API)")
        out = self._arr(a, b)
        return out.astype(a.dtype, copy=False) if self._logical else out

    def Is_commutative(self) -> bool:
        return True

    is_commutative = property(Is_commutative)

    def Free(self) -> None:
        pass

    @staticmethod
    def Create(function, commute: bool = False):
        raise unsupported("Op.Create")

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.Op {self.name}>"


SUM = Op("SUM", lambda a, b: a + b, np.add)
PROD = Op("PROD", lambda a, b: a * b, np.multiply)
MAX = Op("MAX", lambda a, b: b if b > a else a, np.maximum)
MIN = Op("MIN", lambda a, b: b if b < a else a, np.minimum)
# logical operations on objects give bools, as mpi4py's (bool(a) & bool(b), not a and b)
LAND = Op("LAND", lambda a, b: bool(a) & bool(b), np.logical_and, logical=True)
LOR = Op("LOR", lambda a, b: bool(a) | bool(b), np.logical_or, logical=True)
LXOR = Op("LXOR", lambda a, b: bool(a) ^ bool(b), np.logical_xor, logical=True)
BAND = Op("BAND", lambda a, b: a & b, np.bitwise_and)
BOR = Op("BOR", lambda a, b: a | b, np.bitwise_or)
BXOR = Op("BXOR", lambda a, b: a ^ b, np.bitwise_xor)
MAXLOC = Op("MAXLOC", _maxloc)
MINLOC = Op("MINLOC", _minloc)
REPLACE = Op("REPLACE", lambda a, b: b, lambda a, b: np.array(b, copy=True))
NO_OP = Op("NO_OP", lambda a, b: a, lambda a, b: np.array(a, copy=True))
OP_NULL = Op("OP_NULL", lambda a, b: a)
