"""Topologies, requests and the shapes an allocation is made of.

Node ids follow DESIGN: on an n-cube the binary address 0..2^n-1; on a W x H mesh
``y * W + x``. A subcube is written as a string over {0, 1, *} (most significant bit first),
stored as ``(mask, base)`` where ``mask`` has a 1 for every free ("*") dimension and ``base``
holds the fixed bits (0 under the mask).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterator, Union


class TopologyError(ValueError):
    """A malformed topology string or a shape that does not belong to the topology."""


class RequestError(ValueError):
    """A request that no allocation on this machine can ever satisfy, or a malformed one."""


class RequestTooLarge(RequestError):
    pass


# --------------------------------------------------------------------------- shapes


@dataclass(frozen=True, slots=True)
class Subcube:
    """A k-subcube of an n-cube: all addresses ``a`` with ``a & ~mask == base``."""

    n: int
    mask: int
    base: int

    @property
    def dim(self) -> int:
        return self.mask.bit_count()

    @property
    def size(self) -> int:
        return 1 << self.mask.bit_count()

    def contains(self, node: int) -> bool:
        return (node & ~self.mask) == self.base

    def nodes(self) -> Iterator[int]:
        free = [1 << i for i in range(self.n) if self.mask >> i & 1]
        for j in range(1 << len(free)):
            a = self.base
            for i, bit in enumerate(free):
                if j >> i & 1:
                    a |= bit
            yield a

    def __str__(self) -> str:
        return "".join(
            "*" if self.mask >> i & 1 else str(self.base >> i & 1) for i in reversed(range(self.n))
        ) or "<0-cube>"

    @classmethod
    def parse(cls, text: str) -> "Subcube":
        if not re.fullmatch(r"[01*]+", text):
            raise TopologyError(f"bad subcube {text!r}: use a string over 0, 1 and *")
        n, mask, base = len(text), 0, 0
        for i, ch in enumerate(reversed(text)):
            if ch == "*":
                mask |= 1 << i
            elif ch == "1":
                base |= 1 << i
        return cls(n, mask, base)


@dataclass(frozen=True, slots=True)
class Submesh:
    """A w x h submesh whose lower-left corner (smallest x and y) is at (x, y)."""

    x: int
    y: int
    w: int
    h: int

    @property
    def size(self) -> int:
        return self.w * self.h

    def nodes_in(self, width: int) -> Iterator[int]:
        for yy in range(self.y, self.y + self.h):
            row = yy * width
            for xx in range(self.x, self.x + self.w):
                yield row + xx

    def contains_xy(self, x: int, y: int) -> bool:
        return self.x <= x < self.x + self.w and self.y <= y < self.y + self.h

    def __str__(self) -> str:
        return f"{self.w}x{self.h}@({self.x},{self.y})"


@dataclass(frozen=True, slots=True)
class Scattered:
    """Nodes with no shape: the pieces of a scattered (non-contiguous) allocation."""

    node_ids: frozenset

    @property
    def size(self) -> int:
        return len(self.node_ids)

    def __str__(self) -> str:
        return "{" + ",".join(map(str, sorted(self.node_ids))) + "}"


Piece = Union[Subcube, Submesh, Scattered]


# --------------------------------------------------------------------------- requests


@dataclass(frozen=True, slots=True)
class Request:
    """What a job asks for: a k-cube, a w x h submesh or a processor count.

    Build with :meth:`cube`, :meth:`submesh` or :meth:`processors`; a topology's
    :meth:`Topology.normalize` turns it into the shape that topology allocates.
    """

    kind: str  # "cube" | "submesh" | "processors"
    a: int  # k, w or p
    b: int = 0  # h for a submesh
    # hash((kind, a, b)), the value the dataclass hash gives, computed once: requests are
    # dictionary keys at every arrival and allocation attempt (issue 18). Not compared, not
    # shown, not pickled (string hashes differ between processes: recomputed on unpickling).
    _hash: int = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self):
        object.__setattr__(self, "_hash", hash((self.kind, self.a, self.b)))

    def __hash__(self) -> int:
        return self._hash

    def __getstate__(self):
        return (self.kind, self.a, self.b)

    def __setstate__(self, state):
        kind, a, b = state[:3]
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "_hash", hash((kind, a, b)))

    @classmethod
    def cube(cls, k: int) -> "Request":
        if not isinstance(k, int) or isinstance(k, bool) or k < 0:
            raise RequestError(f"a cube request needs a dimension k >= 0, got {k!r}")
        return cls("cube", k)

    @classmethod
    def submesh(cls, w: int, h: int) -> "Request":
        for v in (w, h):
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise RequestError(f"a submesh request needs sides >= 1, got {w!r}x{h!r}")
        return cls("submesh", w, h)

    @classmethod
    def processors(cls, p: int) -> "Request":
        if not isinstance(p, int) or isinstance(p, bool) or p < 1:
            raise RequestError(f"a processor request needs a count >= 1, got {p!r}")
        return cls("processors", p)

    @classmethod
    def parse(cls, text: str) -> "Request":
        """``cube:3``, ``3-cube``, ``4x2``, ``submesh:4x2`` or ``nodes:12``/``12``."""
        t = text.strip().lower()
        if m := re.fullmatch(r"(?:cube:)?(\d+)-?cube|cube:(\d+)", t):
            return cls.cube(int(m.group(1) or m.group(2)))
        if m := re.fullmatch(r"(?:submesh:|shape:)?(\d+)x(\d+)", t):
            return cls.submesh(int(m.group(1)), int(m.group(2)))
        if m := re.fullmatch(r"(?:nodes:|processors:|p:)?(\d+)", t):
            return cls.processors(int(m.group(1)))
        raise RequestError(f"cannot read request {text!r}: use cube:K, WxH or nodes:P")

    @property
    def k(self) -> int:
        if self.kind != "cube":
            raise AttributeError("only a cube request has a dimension k")
        return self.a

    @property
    def w(self) -> int:
        if self.kind != "submesh":
            raise AttributeError("only a submesh request has a width")
        return self.a

    @property
    def h(self) -> int:
        if self.kind != "submesh":
            raise AttributeError("only a submesh request has a height")
        return self.b

    @property
    def processors_needed(self) -> int:
        if self.kind == "cube":
            return 1 << self.a
        if self.kind == "submesh":
            return self.a * self.b
        return self.a

    def __str__(self) -> str:
        if self.kind == "cube":
            return f"{self.a}-cube"
        if self.kind == "submesh":
            return f"{self.a}x{self.b}"
        return f"{self.a} nodes"

    def to_dict(self) -> dict:
        if self.kind == "cube":
            return {"cube": self.a}
        if self.kind == "submesh":
            return {"shape": [self.a, self.b]}
        return {"nodes": self.a}

    @classmethod
    def from_dict(cls, d: dict) -> "Request":
        if not isinstance(d, dict) or len(d) != 1:
            raise RequestError(f"bad request {d!r}")
        (key, v), = d.items()
        if key == "cube":
            return cls.cube(v)
        if key == "shape" and isinstance(v, (list, tuple)) and len(v) == 2:
            return cls.submesh(v[0], v[1])
        if key == "nodes":
            return cls.processors(v)
        raise RequestError(f"bad request {d!r}")


def ceil_log2(p: int) -> int:
    return max(0, (p - 1).bit_length())


# --------------------------------------------------------------------------- topologies


class Topology:
    kind: str = ""
    size: int = 0

    def normalize(self, request: Request) -> Request:  # pragma: no cover - abstract
        raise NotImplementedError

    def size_class(self, request: Request) -> int:
        """The per-size queue a request belongs to: ceil(log2(processors)) after rounding.

        On a cube it is the dimension k; on a mesh requests are grouped by the same
        power-of-two class, so that scan, static and lazy have n+1 queues on either machine.
        """
        return ceil_log2(self.normalize(request).processors_needed)

    @property
    def num_classes(self) -> int:
        return ceil_log2(self.size) + 1

    def neighbours(self, node: int) -> list[int]:  # pragma: no cover - abstract
        raise NotImplementedError

    def route(self, src: int, dst: int) -> list[int]:  # pragma: no cover - abstract
        raise NotImplementedError

    def piece_nodes(self, piece: Piece) -> Iterator[int]:  # pragma: no cover - abstract
        raise NotImplementedError

    def check_node(self, node: int) -> None:
        if not isinstance(node, int) or not 0 <= node < self.size:
            raise TopologyError(f"node {node!r} is not in {self}")


class Hypercube(Topology):
    """An n-cube of 2^n nodes; node ids are binary addresses."""

    kind = "hypercube"

    def __init__(self, n: int):
        if not isinstance(n, int) or not 0 <= n <= 24:
            raise TopologyError(f"hypercube dimension must be 0..24, got {n!r}")
        self.n = n
        self.size = 1 << n

    def __str__(self) -> str:
        return f"hypercube:{self.n}"

    def __repr__(self) -> str:
        return f"Hypercube({self.n})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Hypercube) and other.n == self.n

    def __hash__(self) -> int:
        return hash(("hypercube", self.n))

    def normalize(self, request: Request) -> Request:
        """A processor count (or a w x h submesh, taken as w*h processors) becomes the
        smallest cube that holds it."""
        if request.kind == "cube":
            k = request.a
        else:
            k = ceil_log2(request.processors_needed)
        if k > self.n:
            raise RequestTooLarge(f"request {request} needs a {k}-cube; the machine is a {self.n}-cube")
        return request if request.kind == "cube" else Request.cube(k)

    @property
    def num_classes(self) -> int:
        return self.n + 1

    def neighbours(self, node: int) -> list[int]:
        self.check_node(node)
        return [node ^ (1 << i) for i in range(self.n)]

    def route(self, src: int, dst: int) -> list[int]:
        """The e-cube route: correct the differing address bits from dimension 0 upward."""
        self.check_node(src)
        self.check_node(dst)
        path, cur = [src], src
        for i in range(self.n):
            if (cur ^ dst) >> i & 1:
                cur ^= 1 << i
                path.append(cur)
        return path

    def piece_nodes(self, piece: Piece) -> Iterator[int]:
        if isinstance(piece, Subcube):
            return piece.nodes()
        if isinstance(piece, Scattered):
            return iter(piece.node_ids)
        raise TopologyError(f"{piece!r} is not a piece of {self}")

    def subcube(self, text: str) -> Subcube:
        s = Subcube.parse(text)
        if s.n != self.n:
            raise TopologyError(f"subcube {text!r} has {s.n} symbols; {self} needs {self.n}")
        return s


class Mesh(Topology):
    """A W x H 2-D mesh; node (x, y) has id ``y * W + x``."""

    kind = "mesh"

    def __init__(self, width: int, height: int):
        for v in (width, height):
            if not isinstance(v, int) or not 1 <= v <= 4096:
                raise TopologyError(f"mesh sides must be 1..4096, got {width!r}x{height!r}")
        self.width, self.height = width, height
        self.size = width * height

    def __str__(self) -> str:
        return f"mesh:{self.width}x{self.height}"

    def __repr__(self) -> str:
        return f"Mesh({self.width}, {self.height})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Mesh) and (other.width, other.height) == (self.width, self.height)

    def __hash__(self) -> int:
        return hash(("mesh", self.width, self.height))

    def xy(self, node: int) -> tuple[int, int]:
        self.check_node(node)
        return node % self.width, node // self.width

    def node(self, x: int, y: int) -> int:
        if not (0 <= x < self.width and 0 <= y < self.height):
            raise TopologyError(f"({x},{y}) is outside {self}")
        return y * self.width + x

    def smallest_submesh(self, p: int) -> tuple[int, int]:
        """The smallest w x h (w <= W, h <= H) with w*h >= p (dissertation ch. 8: "the smallest
        submesh that can accommodate the job request").

        Ties between shapes of equal area are broken toward the squarest shape (least
        |w - h|, which keeps XY routes short and leaves the squarest hole), then toward the
        wider one (w >= h), so that the choice is deterministic.
        """
        if p > self.size:
            raise RequestTooLarge(f"request of {p} nodes exceeds {self} ({self.size} nodes)")
        best = None
        for w in range(1, self.width + 1):
            h = -(-p // w)
            if h > self.height:
                continue
            key = (w * h, abs(w - h), -w)
            if best is None or key < best[0]:
                best = (key, w, h)
        assert best is not None
        return best[1], best[2]

    def normalize(self, request: Request) -> Request:
        if request.kind == "submesh":
            w, h = request.a, request.b
            if w > self.width or h > self.height:
                if h <= self.width and w <= self.height:
                    msg = f" (it would fit rotated as {h}x{w})"
                else:
                    msg = ""
                raise RequestTooLarge(f"submesh {w}x{h} does not fit in {self}{msg}")
            return request
        w, h = self.smallest_submesh(request.processors_needed)
        return Request.submesh(w, h)

    def neighbours(self, node: int) -> list[int]:
        x, y = self.xy(node)
        out = []
        for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            if 0 <= x + dx < self.width and 0 <= y + dy < self.height:
                out.append((y + dy) * self.width + x + dx)
        return out

    def route(self, src: int, dst: int) -> list[int]:
        """Dimension-ordered XY routing: along x to the destination column, then along y."""
        (x, y), (tx, ty) = self.xy(src), self.xy(dst)
        path = [src]
        while x != tx:
            x += 1 if tx > x else -1
            path.append(y * self.width + x)
        while y != ty:
            y += 1 if ty > y else -1
            path.append(y * self.width + x)
        return path

    def piece_nodes(self, piece: Piece) -> Iterator[int]:
        if isinstance(piece, Submesh):
            return piece.nodes_in(self.width)
        if isinstance(piece, Scattered):
            return iter(piece.node_ids)
        raise TopologyError(f"{piece!r} is not a piece of {self}")


def parse_topology(text: str) -> Topology:
    """``hypercube:N`` (also ``cube:N``) or ``mesh:WxH``."""
    if isinstance(text, Topology):
        return text
    t = str(text).strip().lower()
    if m := re.fullmatch(r"(?:hypercube|cube):(\d+)", t):
        return Hypercube(int(m.group(1)))
    if m := re.fullmatch(r"mesh:(\d+)x(\d+)", t):
        return Mesh(int(m.group(1)), int(m.group(2)))
    raise TopologyError(f"unknown topology {text!r}: use hypercube:N or mesh:WxH")


__all__ = [
    "Topology", "Hypercube", "Mesh", "Subcube", "Submesh", "Scattered", "Piece", "Request",
    "RequestError", "RequestTooLarge", "TopologyError", "parse_topology", "ceil_log2",
]
