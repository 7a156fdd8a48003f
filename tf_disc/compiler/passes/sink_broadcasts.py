"""Sinks broadcasts below cheap elementwise ops:
broadcast_in_dim(f(a, b)) -> f(broadcast_in_dim(a), broadcast_in_dim(b))
when f has no other user.  Then the broadcast reaches a buffer (a strided
load) and f fuses into the consumer's loop instead of needing its own kernel
and a temp.  Only ops the target finds cheap to recompute (`cheap`, e.g.
target/cpu.py cheap_to_recompute: no more than a divide per element) are
sunk: recomputing exp, erf or a libm call per broadcast element could cost
more than the extra kernel."""
from __future__ import annotations

import dataclasses

from typing import Callable

from ..ir.core import Func, Namer, Op, TensorType, Value
from ..ir.opset import spec


def _sinkable(op: Op, cheap: Callable[[str], bool]) -> bool:
    return spec(op.name).kind == "elementwise" and cheap(op.name) and \
        not spec(op.name).may_fail


def sink_broadcasts(func: Func, cheap: Callable[[str], bool]) -> Func:
    namer = Namer.for_func(func)
    ops = list(func.ops)
    changed = True
    while changed:
        changed = False
        producer = {r: op for op in ops for r in op.results}
        uses: dict[Value, int] = {}
        for op in ops:
            for v in op.operands:
                uses[v] = uses.get(v, 0) + 1
        for v in func.rets:
            uses[v] = uses.get(v, 0) + 1
        for i, op in enumerate(ops):
            if op.name != "broadcast_in_dim":
                continue
            inner = producer.get(op.operands[0])
            if inner is None or not _sinkable(inner, cheap) or uses[inner.result] != 1:
                continue
            bd = op.attrs["broadcast_dimensions"]
            new_ops, new_operands = [], []
            for x in inner.operands:
                b = Value(namer(), TensorType(x.dtype, op.result.shape))
                new_ops.append(Op("broadcast_in_dim", [x], [b], {"broadcast_dimensions": bd}))
                new_operands.append(b)
            new_ops.append(Op(inner.name, new_operands, [op.result], dict(inner.attrs)))
            ops[i:i + 1] = new_ops
            ops.remove(inner)
            changed = True
            break
    return dataclasses.replace(func, ops=ops)
