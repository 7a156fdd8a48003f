"""Buffer assignment: each fusion (or library op) result is either output k (allocated with
rt->alloc_output) or a temp (rt->alloc_temp, freed after its last reader).
Recorded as the fusion attr "buffers": ["out:<k>" | "temp", ...]."""
from __future__ import annotations

import dataclasses

from ..ir.core import Func, Op
from ..ir.opset import spec


def _writes_buffers(op: Op) -> bool:
    """Fusion and stitch kernels and library ops (dot) write their results
    to memory."""
    return spec(op.name).kind in ("fusion", "library")


def assign_buffers(func: Func) -> Func:
    out_index = {v: k for k, v in enumerate(func.rets)}
    temps = {r for op in func.ops if _writes_buffers(op) for r in op.results
             if r not in out_index}
    last_use: dict = {}
    for i, op in enumerate(func.ops):
        for v in op.operands:
            last_use[v] = i
        for r in op.results:  # a temp nothing reads is freed by its writer
            last_use.setdefault(r, i)
    # a top-level reshape is an alias of its operand's buffer (fusion.py):
    # the buffer lives until the alias's last reader
    for op in reversed(func.ops):
        if op.name == "reshape":
            x = op.operands[0]
            last_use[x] = max(last_use[x], last_use[op.result])
    ops = []
    for i, op in enumerate(func.ops):
        if _writes_buffers(op):
            bufs = [f"out:{out_index[r]}" if r in out_index else "temp" for r in op.results]
            # temps this kernel is the last reader of (freed after it runs)
            frees = sorted(v.name for v, j in last_use.items()
                           if j == i and v in temps)
            attrs = dict(op.attrs, buffers=bufs)
            if frees:
                attrs["frees"] = frees
            op = Op(op.name, op.operands, op.results, attrs, op.region)
        ops.append(op)
    return dataclasses.replace(func, ops=ops)
