"""The directed channels of a machine and the dimension-ordered routes over them.

Dissertation §3.1 (NETWORK.md 1.2 items 1-3): neighbours are joined by two independent
unidirectional channels, a channel is the unit of reservation, and a route is the list of
channels that deterministic routing produces: XY on a mesh (all x hops, then y), e-cube on a
hypercube (lowest differing dimension first, the iPSC/860's routing). Injection and ejection
are not channels (NETWORK.md 1.2 item 4): a path's starting channel is its first
inter-router channel.

Channel ids are small integers so that the timing model keeps its state in flat lists:
on a W x H mesh ``4 * node + direction`` (0: +x, 1: -x, 2: +y, 3: -y); on an n-cube
``n * node + dimension``. Ids of channels that would leave the mesh exist but are never on a
route.
"""
from __future__ import annotations

from scheduler.topology import Hypercube, Mesh, Topology, TopologyError, parse_topology

_MESH_DIRS = {(1, 0): 0, (-1, 0): 1, (0, 1): 2, (0, -1): 3}
_DIR_NAMES = ("+x", "-x", "+y", "-y")


class Channels:
    """The channel ids of ``topology`` and a cache of its routes as channel-id tuples."""

    def __init__(self, topology: Topology | str):
        self.topology = topology = parse_topology(topology)
        if isinstance(topology, Mesh):
            self.count = 4 * topology.size
        elif isinstance(topology, Hypercube):
            self.count = max(1, topology.n) * topology.size
        else:  # pragma: no cover - the two topologies are all there is
            raise TopologyError(f"no channels for {topology}")
        self._routes: dict[tuple[int, int], tuple[int, ...]] = {}

    def channel(self, u: int, v: int) -> int:
        """The id of the directed channel from node ``u`` to its neighbour ``v``."""
        t = self.topology
        if isinstance(t, Mesh):
            (ux, uy), (vx, vy) = t.xy(u), t.xy(v)
            d = _MESH_DIRS.get((vx - ux, vy - uy))
            if d is None:
                raise TopologyError(f"nodes {u} and {v} are not neighbours in {t}")
            return 4 * u + d
        diff = u ^ v
        t.check_node(u), t.check_node(v)
        if diff == 0 or diff & (diff - 1):
            raise TopologyError(f"nodes {u} and {v} are not neighbours in {t}")
        return t.n * u + diff.bit_length() - 1

    def ends(self, c: int) -> tuple[int, int]:
        """(source node, destination node) of channel ``c``."""
        t = self.topology
        if isinstance(t, Mesh):
            u, d = divmod(c, 4)
            x, y = t.xy(u)
            dx, dy = ((1, 0), (-1, 0), (0, 1), (0, -1))[d]
            return u, t.node(x + dx, y + dy)
        u, dim = divmod(c, t.n)
        return u, u ^ (1 << dim)

    def name(self, c: int) -> str:
        """``"(x,y)+x"`` on a mesh, ``"node:dim"`` on a hypercube: how the JSON names a channel."""
        t = self.topology
        if isinstance(t, Mesh):
            u, d = divmod(c, 4)
            x, y = t.xy(u)
            return f"({x},{y}){_DIR_NAMES[d]}"
        u, dim = divmod(c, t.n)
        return f"{u}:{dim}"

    def route(self, src: int, dst: int) -> tuple[int, ...]:
        """The channels of the dimension-ordered route from ``src`` to ``dst`` (empty if equal)."""
        key = (src, dst)
        r = self._routes.get(key)
        if r is None:
            nodes = self.topology.route(src, dst)
            r = self._routes[key] = tuple(self.channel(a, b) for a, b in zip(nodes, nodes[1:]))
        return r


__all__ = ["Channels"]
