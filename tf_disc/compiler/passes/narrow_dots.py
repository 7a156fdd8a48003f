"""Dots of 16-bit floats in their own type, for targets whose GEMM reads
16-bit operands and accumulates in float32 (cuBLASLt on CUDA: target/cuda.py).

The frontend lowers a half MatMul as float32 math rounded once (ops/half.py):

  %a32 = convert(%a : H)   %b32 = convert(%b : H)
  %c = dot(%a32, %b32) : f32
  %d = convert(%c) : H

Such a GEMM computes the same %d from %a and %b directly, without the two
float32 copies of the operands and with the 16-bit GEMM kernels, so this
pass makes it %d = dot(%a, %b) : H when %c has no other use.  The operand
converts are left to dce when nothing else reads them."""
from __future__ import annotations

import dataclasses

from ..dtypes import F32, HALF
from ..ir.core import Func, Op, Value


def narrow_dots(func: Func) -> Func:
    producer = {r: op for op in func.ops for r in op.results}
    users = func.users()
    replaced: dict[Op, Op] = {}
    dropped: set[Op] = set()
    for op in func.ops:
        narrow = _narrow_operands(op, producer)
        if narrow is None or op.result in func.rets:
            continue
        readers = users.get(op.result, [])
        if len(readers) != 1 or readers[0].name != "convert" \
                or readers[0].result.dtype != narrow[0].dtype:
            continue
        replaced[op] = Op("dot", list(narrow), [readers[0].result], dict(op.attrs))
        dropped.add(readers[0])
    if not replaced:
        return func
    ops = [replaced.get(op, op) for op in func.ops if op not in dropped]
    return dataclasses.replace(func, ops=ops)


def _narrow_operands(op: Op, producer: dict[Value, Op]) -> tuple[Value, Value] | None:
    """A float32 dot's operands before their converts from one 16-bit type."""
    if op.name != "dot" or op.result.dtype != F32 or op.attrs.get("precision"):
        return None
    sources = []
    for v in op.operands:
        conv = producer.get(v)
        if conv is None or conv.name != "convert" or conv.operands[0].dtype not in HALF:
            return None
        sources.append(conv.operands[0])
    if sources[0].dtype != sources[1].dtype:
        return None
    return sources[0], sources[1]
