"""The dissertation's chapter-6 layout on a live 8x8 mesh, placed by the live allocator.

NETWORK.md 6.2: a contiguous 4x4 job *inside*, between the two halves of a 4x4 job split
in the middle (*outside*), over rows 0-3: the outside job's logical columns 0-1 on x = 0-1,
the inside job on x = 2-5, the outside's logical columns 2-3 on x = 6-7. Ranks are row-major
in both (a job's ranks are its nodes in ascending order, and the rows of ids do that).

How the live cluster gets there without a placement request of its own: a cluster with the
``naive`` allocator (the lowest free node ids) and ``fcfs``. Blocker jobs (synthetic sleeps)
take the mesh in row-major slices; cancelling the slices x = 2-5 of rows 0-3 leaves exactly
the inside job's nodes as the lowest free ones, so naive gives them to the queued inside job;
cancelling the rest of rows 0-3 then gives the outside job exactly its split nodes. The
allocator chooses, as for any job; the blockers only shape the free list it sees.

Used by tests/test_live_net.py and scripts/bench_net_live.py.
"""
from __future__ import annotations

import time

TOPOLOGY = "mesh:8x8"
# row-major slices of node ids: (first, count); the even-numbered ones (x = 2-5) hold the
# inside job's place, the others the outside job's (and 32-63 stay blocked)
_SLICES = [(0, 2), (2, 4), (6, 4), (10, 4), (14, 4), (18, 4), (22, 4), (26, 4), (30, 2), (32, 32)]
INSIDE_SLICES = (1, 3, 5, 7)
OUTSIDE_SLICES = (0, 2, 4, 6, 8)
INSIDE = sorted(n for i in INSIDE_SLICES for n in range(_SLICES[i][0], sum(_SLICES[i])))
OUTSIDE = sorted(n for i in OUTSIDE_SLICES for n in range(_SLICES[i][0], sum(_SLICES[i])))


def _running(client, jid: int, timeout: float = 30.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while True:
        j = client.queue(jobs=[jid])["jobs"][0]
        if j["state"] == "running":
            return j["nodes"]
        if j["state"] not in ("queued", "held") or time.monotonic() > deadline:
            raise RuntimeError(f"job {jid} is {j['state']}, not running ({j.get('reason')})")
        time.sleep(0.02)


def place(client, inside: tuple[dict, str], outside: tuple[dict, str], runtime: float = 1000.0) -> dict:
    """Submit ``inside`` and ``outside`` (each ``(request, command)``) onto the layout; returns
    {"inside": id, "outside": id, "blockers": [ids still running], "nodes": {...}}. Needs a
    fresh 8x8 cluster with ``--allocator naive --scheduler fcfs``."""
    blockers = []
    for first, count in _SLICES:
        jid = client.submit({"nodes": count}, 1e6, name=f"blocker{first}")
        nodes = _running(client, jid)
        if nodes != list(range(first, first + count)):
            raise RuntimeError(f"blocker got {nodes}, not {first}..{first + count - 1}: is the cluster fresh, "
                               f"with the naive allocator?")
        blockers.append(jid)
    ids = {}
    for name, (request, command) in (("inside", inside), ("outside", outside)):
        ids[name] = client.submit(request, runtime, name=name, command=command)
    for i in INSIDE_SLICES:
        client.cancel(blockers[i])
    got = {"inside": _running(client, ids["inside"])}
    for i in OUTSIDE_SLICES:
        client.cancel(blockers[i])
    got["outside"] = _running(client, ids["outside"])
    if got["inside"] != INSIDE or got["outside"] != OUTSIDE:
        raise RuntimeError(f"the allocator placed the jobs on {got}, not the chapter-6 layout")
    return {**ids, "blockers": [blockers[-1]], "nodes": got}


def job_file(nodes: dict, mtbs: dict, patterns=("transpose", "diagonal")) -> dict:
    """The same placement for ``mcemu net simulate --job-file``."""
    return {"jobs": [{"name": name, "pattern": pat, "shape": "4x4", "nodes": nodes[name], "mtbs": mtbs[name]}
                     for name, pat in zip(("inside", "outside"), patterns)]}


__all__ = ["INSIDE", "OUTSIDE", "TOPOLOGY", "job_file", "place"]
