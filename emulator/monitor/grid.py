"""Where the monitor draws each node: the machine as a grid of node ids (pure)."""
from __future__ import annotations

from scheduler.allocators.gray_code import gray
from scheduler.topology import parse_topology


def grid_layout(topology) -> dict:
    """The machine as a grid of node ids. A mesh is its W x H grid (y down, x right). An
    n-cube is a 2^ceil(n/2) x 2^floor(n/2) grid: column c holds the low ceil(n/2) address
    bits gray(c), row r the high bits gray(r), so cells side by side (and the wrap-around)
    differ in one address bit: they are cube neighbours."""
    topo = parse_topology(topology) if isinstance(topology, str) else topology
    if topo.kind == "mesh":
        w, h = topo.width, topo.height
        return {"kind": "mesh", "width": w, "height": h,
                "grid": [[y * w + x for x in range(w)] for y in range(h)],
                "col_labels": [str(x) for x in range(w)], "row_labels": [str(y) for y in range(h)],
                "note": f"node (x, y) = y*{w}+x; x across, y=0 on top",
                "short_note": "node = y*W+x"}
    n = topo.n
    cb, rb = (n + 1) // 2, n // 2
    w, h = 1 << cb, 1 << rb
    return {"kind": "hypercube", "dims": n, "width": w, "height": h,
            "grid": [[(gray(r) << cb) | gray(c) for c in range(w)] for r in range(h)],
            "col_labels": [format(gray(c), f"0{cb}b") if cb else "" for c in range(w)],
            "row_labels": [format(gray(r), f"0{rb}b") if rb else "" for r in range(h)],
            "note": (f"Gray-code order (column: bits {cb - 1}..0, row: bits {n - 1}..{cb}): "
                     f"adjacent cells are cube neighbours" if n > 1 else f"{n}-cube"),
            "short_note": "Gray-code order: adjacent = neighbours"}
