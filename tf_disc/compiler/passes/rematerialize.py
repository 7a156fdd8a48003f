"""Gives each fusible user its own copy of a broadcast-only computation.

CSE merges equal broadcasts across the whole cluster: every attention layer's
`mask * -10000` at [B, H, S, S], softmax's broadcast +inf, a LayerNorm
statistic broadcast over its rows.  A value shared by two kernels must be
written to memory by the first and read back by the other: the first
softmax would write two [B, H, S, S] tensors that each later layer reads
again, where recomputing them from their small inputs costs one or two
instructions per element.  So a value computed only from broadcasts of
smaller tensors and elementwise ops on them that the target finds cheap to
recompute (`cheap`, e.g. target/cpu.py cheap_to_recompute; nothing that can
fail) is cloned, with its chain, right
before each further elementwise or reduce user; other users (GEMMs,
returns, index ops) keep sharing the original."""
from __future__ import annotations

import dataclasses

from typing import Callable

from ..ir.core import Func, Namer, Op, Value
from ..ir.opset import spec


def _expands(op: Op) -> bool:
    """A broadcast that makes more elements than it reads."""
    src, dst = op.operands[0].shape, op.result.shape
    return len(src) < len(dst) or any(s == "1" and d != "1" for s, d in zip(src, dst))


def _cheap(op: Op, cheap: set[Value], cheap_op: Callable[[str], bool]) -> bool:
    if op.region is not None or len(op.results) != 1:
        return False
    if op.name == "broadcast_in_dim":
        return _expands(op)
    s = spec(op.name)
    return (s.kind == "elementwise" and not s.may_fail and cheap_op(op.name)
            and all(v in cheap for v in op.operands))


def _fusible_user(op: Op) -> bool:
    return op.region is None and (spec(op.name).kind in ("elementwise", "broadcast")
                                  or op.name == "reduce")


def rematerialize_broadcasts(func: Func, cheap_op: Callable[[str], bool]) -> Func:
    producer = {r: op for op in func.ops for r in op.results}
    cheap: set[Value] = set()
    for op in func.ops:
        if _cheap(op, cheap, cheap_op):
            cheap.add(op.result)
    if not cheap:
        return func
    namer = Namer.for_func(func)
    claimed: set[Value] = set()
    ops: list[Op] = []

    def clone(v: Value, made: dict[Value, Value]) -> Value:
        if v not in cheap:
            return v
        if v not in made:
            op = producer[v]
            operands = [clone(x, made) for x in op.operands]
            made[v] = Value(namer(), v.type)
            ops.append(Op(op.name, operands, [made[v]], dict(op.attrs)))
        return made[v]

    for op in func.ops:
        if _fusible_user(op) and any(v in cheap for v in op.operands):
            made: dict[Value, Value] = {}
            operands = []
            for v in op.operands:
                if v in cheap and v in claimed:
                    v = clone(v, made)
                elif v in cheap:
                    claimed.add(v)
                operands.append(v)
            op = dataclasses.replace(op, operands=operands, attrs=dict(op.attrs))
        ops.append(op)
    return dataclasses.replace(func, ops=ops)
