"""Common subexpression elimination over top-level ops (asserts included:
an identical check twice is one check)."""
from __future__ import annotations

import json

from ..ir.core import Func, Value
from ..ir.rewrite import rebuild, remap


def cse(func: Func) -> Func:
    mapping: dict[Value, Value] = {}
    seen: dict[tuple, list[Value]] = {}
    out = []
    for op in func.ops:
        operands = tuple(id(remap(v, mapping)) for v in op.operands)
        if op.region is None:
            key = (op.name, operands, json.dumps(op.attrs, sort_keys=True),
                   tuple(str(r.type) for r in op.results))
            if key in seen:
                for old, new in zip(op.results, seen[key]):
                    mapping[old] = new
                continue
            seen[key] = op.results
        out.append(op)
    return rebuild(func, out, mapping)
