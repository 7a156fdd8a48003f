"""Helpers for passes that rebuild a function with values substituted.
Passes never mutate their input: they build new Op lists (Values, being
immutable, are shared)."""
from __future__ import annotations

import dataclasses

from .core import Func, Op, Region, Value


def remap(v: Value, mapping: dict[Value, Value]) -> Value:
    while v in mapping:
        v = mapping[v]
    return v


def clone_op(op: Op, mapping: dict[Value, Value]) -> Op:
    region = None
    if op.region is not None:
        region = Region([clone_op(o, mapping) for o in op.region.ops],
                        [remap(v, mapping) for v in op.region.outputs])
    return Op(op.name, [remap(v, mapping) for v in op.operands], list(op.results),
              dict(op.attrs), region)


def rebuild(func: Func, ops: list[Op], mapping: dict[Value, Value] | None = None) -> Func:
    """New Func with `ops` (operands remapped) and remapped returns."""
    mapping = mapping or {}
    return dataclasses.replace(func, ops=[clone_op(o, mapping) for o in ops],
                               rets=[remap(v, mapping) for v in func.rets],
                               attrs=dict(func.attrs))
