"""Expands `list_set` (a TensorListSetItem, ops/tensor_list.py) that no
loop updates in place into elementwise IR: every row of the list, the item
where the row number is the index, after TF's range check of the index (a
gather of the row numbers: it fails as TF does, and dce keeps it).  Runs
first in the pipeline; a loop body whose list is updated in place has none
left (passes/program.py; the loop checks the index itself)."""
from __future__ import annotations

from ..dtypes import BOOL
from ..ir.core import Func, Namer, Op, TensorType, Value
from ..ir.rewrite import rebuild


def expand_list_sets(func: Func) -> Func:
    if not any(op.name == "list_set" for op in func.ops):
        return func
    namer = Namer.for_func(func)
    ops: list[Op] = []

    def emit(name: str, operands: list[Value], like: TensorType, **attrs) -> Value:
        v = Value(namer(), like)
        ops.append(Op(name, operands, [v], attrs))
        return v

    for op in func.ops:
        if op.name != "list_set":
            ops.append(op)
            continue
        lst, index, item = op.operands
        shape = lst.shape
        numbers = emit("iota", [], TensorType(index.dtype, shape[:1]), dimension=0)
        emit("gather", [numbers, index], TensorType(index.dtype, ()), axis=0)
        rows = emit("iota", [], TensorType(index.dtype, shape), dimension=0)
        at = emit("broadcast_in_dim", [index], TensorType(index.dtype, shape),
                  broadcast_dimensions=[])
        eq = emit("compare", [rows, at], TensorType(BOOL, shape), direction="EQ")
        spread = emit("broadcast_in_dim", [item], lst.type,
                      broadcast_dimensions=list(range(1, len(shape))))
        ops.append(Op("select", [eq, spread, lst], [op.result]))
    return rebuild(func, ops)
