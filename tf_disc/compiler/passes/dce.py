"""Dead code elimination: drop ops whose results are never used (asserts
and ops that can fail, e.g. the integer division under a ZerosLike, are side
effects and always stay: TF raises their error)."""
from __future__ import annotations

from ..ir.core import Func, Value
from ..ir.opset import spec
from ..ir.rewrite import rebuild


def dce(func: Func) -> Func:
    live: set[Value] = set(func.rets)
    keep = []
    for op in reversed(func.ops):
        if spec(op.name).kind == "assert" or spec(op.name).may_fail or \
                any(r in live for r in op.results):
            keep.append(op)
            live.update(op.operands)
            if op.region is not None:
                for inner in op.region.ops:
                    live.update(inner.operands)
    return rebuild(func, list(reversed(keep)))
