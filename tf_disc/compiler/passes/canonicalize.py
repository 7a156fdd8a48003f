"""Local simplifications: drop identity broadcasts/converts, compose nested
broadcasts, fold converts of constants, fold broadcasts of constants whose
result shape is static and small."""
from __future__ import annotations

import math

import numpy as np

from ..dtypes import DType
from ..ir.core import Func, Op, TensorType, Value
from ..ir.rewrite import rebuild, remap

_FOLD_LIMIT = 4096  # elements; larger constants are not materialized by folding


def _const_array(op: Op) -> np.ndarray:
    dt: DType = op.result.dtype
    shape = tuple(int(d) for d in op.result.shape)
    return np.asarray(op.attrs["value"], dtype=dt.np).reshape(shape)


def _const_op(res: Value, arr: np.ndarray) -> Op:
    dt = res.dtype
    flat = [bool(x) if dt.is_bool else (int(x) if dt.is_int else float(x))
            for x in arr.reshape(-1).tolist()]
    return Op("constant", [], [res], {"value": flat})


def _fold_convert(src: np.ndarray, dt: DType) -> np.ndarray | None:
    if src.dtype.kind == "f" and (dt.is_int or dt.is_bool):
        if not np.all(np.isfinite(src)):
            return None
        if dt.is_int and np.any(np.abs(src) >= 2.0 ** (8 * dt.itemsize - 1)):
            return None
    if dt.is_bool:
        return src != 0
    return src.astype(dt.np)


def canonicalize(func: Func) -> Func:
    mapping: dict[Value, Value] = {}
    producer: dict[Value, Op] = {}
    out: list[Op] = []
    for op in func.ops:
        operands = [remap(v, mapping) for v in op.operands]
        op = Op(op.name, operands, list(op.results), dict(op.attrs), op.region)
        if op.name == "broadcast_in_dim":
            (x,) = operands
            bd = op.attrs["broadcast_dimensions"]
            if x.shape == op.result.shape and bd == list(range(len(bd))):
                mapping[op.result] = x
                continue
            inner = producer.get(x)
            if inner is not None and inner.name == "broadcast_in_dim":
                ibd = inner.attrs["broadcast_dimensions"]
                op = Op(op.name, [inner.operands[0]], op.results,
                        {"broadcast_dimensions": [bd[j] for j in ibd]})
            elif inner is not None and inner.name == "constant" and \
                    all(d.isdigit() for d in op.result.shape) and \
                    math.prod(int(d) for d in op.result.shape) <= _FOLD_LIMIT:
                arr = _const_array(inner)
                rshape = tuple(int(d) for d in op.result.shape)
                view = arr.reshape([arr.shape[bd.index(k)] if k in bd else 1
                                    for k in range(len(rshape))])
                op = _const_op(op.result, np.broadcast_to(view, rshape).copy())
        elif op.name == "convert":
            (x,) = operands
            if x.dtype == op.result.dtype:
                mapping[op.result] = x
                continue
            inner = producer.get(x)
            if inner is not None and inner.name == "constant":
                folded = _fold_convert(_const_array(inner), op.result.dtype)
                if folded is not None:
                    op = _const_op(op.result, folded)
        out.append(op)
        for r in op.results:
            producer[r] = op
    return rebuild(func, out, mapping)


del TensorType
