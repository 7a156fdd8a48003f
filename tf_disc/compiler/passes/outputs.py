"""Makes every returned value a distinct computed value: a return of an
argument, a constant, or a value returned twice gets an explicit `copy`, so
each output buffer is written by exactly one kernel."""
from __future__ import annotations

import dataclasses

from ..ir.core import Func, Namer, Op, Value


def materialize_outputs(func: Func) -> Func:
    namer = Namer.for_func(func)
    computed = {r for op in func.ops if op.name not in ("constant", "dims_tensor")
                for r in op.results}
    ops = list(func.ops)
    rets: list[Value] = []
    seen: set[Value] = set()
    for v in func.rets:
        if v not in computed or v in seen:
            c = Value(namer(), v.type)
            ops.append(Op("copy", [v], [c]))
            v = c
        seen.add(v)
        rets.append(v)
    return dataclasses.replace(func, ops=ops, rets=rets)
