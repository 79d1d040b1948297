"""JSON-safe copies of result dicts: NaN becomes null and infinities the strings "inf"/"-inf"
(strict JSON has neither), tuples become lists."""
from __future__ import annotations

import math


def jsonable(o):
    if isinstance(o, float) and not math.isfinite(o):
        return None if math.isnan(o) else ("inf" if o > 0 else "-inf")
    if isinstance(o, dict):
        return {k: jsonable(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [jsonable(v) for v in o]
    return o
