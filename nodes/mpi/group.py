"""``MPI.Group``: the ranks of a communicator (what ``Get_group`` returns), enough to ask a
group's size and rank, translate ranks and build sub-groups; making a communicator from a
group (``Comm.Create``) is not supported."""
from __future__ import annotations

from nodes.mpi.constants import PROC_NULL, UNDEFINED
from nodes.mpi.errors import UnsupportedMeta, unsupported


class Group(metaclass=UnsupportedMeta):
    def __init__(self, world: tuple = (), me: int = -1):
        self._world, self._me = tuple(world), me

    def Get_size(self) -> int:
        return len(self._world)

    def Get_rank(self) -> int:
        return self._world.index(self._me) if self._me in self._world else UNDEFINED

    size = property(Get_size)
    rank = property(Get_rank)

    def Translate_ranks(self, ranks, group2: "Group") -> list:
        out = []
        for r in ranks:
            w = self._world[r] if r != PROC_NULL else None
            out.append(PROC_NULL if w is None else (group2._world.index(w) if w in group2._world else UNDEFINED))
        return out

    def Incl(self, ranks) -> "Group":
        return Group([self._world[r] for r in ranks], self._me)

    def Excl(self, ranks) -> "Group":
        drop = set(ranks)
        return Group([w for i, w in enumerate(self._world) if i not in drop], self._me)

    def Free(self) -> None:
        pass

    def __getattr__(self, name: str):
        raise unsupported(f"Group.{name}")
