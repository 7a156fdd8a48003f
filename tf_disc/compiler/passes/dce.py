"""Dead code elimination: drop ops whose results are never used (asserts
are side effects and always stay)."""
from __future__ import annotations

from ..ir.core import Func, Value
from ..ir.opset import spec
from ..ir.rewrite import rebuild


def dce(func: Func) -> Func:
    live: set[Value] = set(func.rets)
    keep = []
    for op in reversed(func.ops):
        if spec(op.name).kind == "assert" or any(r in live for r in op.results):
            keep.append(op)
            live.update(op.operands)
            if op.region is not None:
                for inner in op.region.ops:
                    live.update(inner.operands)
    return rebuild(func, list(reversed(keep)))
