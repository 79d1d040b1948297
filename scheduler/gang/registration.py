"""The registration office (Zhou, Brent and Qu 1997, section 2): per-node linked lists of
the registered parallel jobs, kept in one relative order on every processor, and the servant
pointer P. The office manager that moves P is :mod:`scheduler.gang.office`."""
from __future__ import annotations


class OfficeError(ValueError):
    """Checking in a job twice, checking out or pointing at an unregistered job."""


HEAD = object()  # ``check_in(..., after=HEAD)`` inserts at the head of the list


class RegistrationOffice:
    """The per-node linked lists of registered parallel jobs and the servant pointer P."""

    def __init__(self):
        self._order: list = []
        self._nodes: dict = {}  # job id -> tuple of node ids
        self._lists: dict = {}  # node -> list of job ids, in global order
        self.pointer = None

    def check_in(self, job_id, nodes, after=None) -> None:
        """Register ``job_id`` on ``nodes``: at the tail (``after=None``), at the head
        (``after=HEAD``) or right after the registered job ``after``."""
        if job_id in self._nodes:
            raise OfficeError(f"job {job_id} is already registered")
        nodes = tuple(nodes)
        if not nodes:
            raise OfficeError(f"job {job_id} has no nodes to register on")
        if after is None:
            idx = len(self._order)
        elif after is HEAD:
            idx = 0
        elif after in self._nodes:
            idx = self._order.index(after) + 1
        else:
            raise OfficeError(f"cannot insert after job {after}: it is not registered")
        self._order.insert(idx, job_id)
        self._nodes[job_id] = nodes
        rank = {j: i for i, j in enumerate(self._order)}
        mine = rank[job_id]
        for n in nodes:
            lst = self._lists.setdefault(n, [])
            # the nearest predecessor present on this node: count the ones that rank before us
            pos = 0
            while pos < len(lst) and rank[lst[pos]] < mine:
                pos += 1
            lst.insert(pos, job_id)

    def check_out(self, job_id) -> int:
        """Remove ``job_id`` from every node's list; returns the global index it had."""
        nodes = self._nodes.pop(job_id, None)
        if nodes is None:
            raise OfficeError(f"job {job_id} is not registered")
        idx = self._order.index(job_id)
        del self._order[idx]
        for n in nodes:
            lst = self._lists[n]
            lst.remove(job_id)
            if not lst:
                del self._lists[n]
        if self.pointer == job_id:
            self.pointer = None
        return idx

    def move(self, job_id, after=None) -> None:
        """Re-insert a registered job elsewhere, on all its nodes at once; P is kept."""
        if after is not None and after is not HEAD and after not in self._nodes:
            raise OfficeError(f"cannot move after job {after}: it is not registered")
        if after == job_id:
            raise OfficeError("cannot move a job after itself")
        p = self.pointer
        nodes = self._nodes.get(job_id)
        if nodes is None:
            raise OfficeError(f"job {job_id} is not registered")
        self.check_out(job_id)
        self.check_in(job_id, nodes, after)
        self.pointer = p

    def arrange(self, order) -> None:
        """Bring the list into ``order`` (a permutation of the registered jobs) by moves."""
        order = list(order)
        if sorted(map(repr, order)) != sorted(map(repr, self._order)) or len(set(order)) != len(order):
            raise OfficeError("arrange needs a permutation of the registered jobs")
        prev = HEAD
        for i, j in enumerate(order):
            if self._order[i] != j:
                self.move(j, prev)
            prev = j

    def point(self, job_id) -> None:
        if job_id is not None and job_id not in self._nodes:
            raise OfficeError(f"P cannot point at job {job_id}: it is not registered")
        self.pointer = job_id

    # ------------------------------------------------------------------ views

    @property
    def order(self) -> tuple:
        return tuple(self._order)

    def list_on(self, node) -> tuple:
        return tuple(self._lists.get(node, ()))

    def nodes_of(self, job_id) -> tuple:
        return self._nodes[job_id]

    def index(self, job_id) -> int:
        return self._order.index(job_id)

    def nodes_with_lists(self) -> list:
        return sorted(self._lists)

    def __contains__(self, job_id) -> bool:
        return job_id in self._nodes

    def __len__(self) -> int:
        return len(self._order)


__all__ = ["HEAD", "OfficeError", "RegistrationOffice"]
