"""Folds transposes into GEMM operand layouts.

A Transpose lowers to a `view` that permutes its source's dims (dense
strides, no offset).  When that view feeds a dot, the dot can read the
source directly: its dim groups (batch/free/contract) are renumbered through
the permutation, and codegen/gemm.py derives strides and the transpose flag
from the source's own row-major layout.  Attention's head split
([B,S,H,D] -> [B,H,S,D]) and K^T then cost no copy; a transpose of a dot's
product (the context [B,H,S,D] -> [B,S,H,D]) becomes the dot's output
layout (ldc and batch strides of the transposed buffer).  A fold is kept only
when the renumbered dot is one the GEMM can run (ir/dot.py's rules).
"""
from __future__ import annotations

import dataclasses

from ..ir.core import Func, Op, Value
from ..ir.dot import verify_dot
from ..shapes.symbolic import dim_mul


def _dense_strides(shape: tuple[str, ...]) -> list[str]:
    return [dim_mul(*shape[k + 1:]) if shape[k + 1:] else "1" for k in range(len(shape))]


def permutation_of(view: Op) -> list[int] | None:
    """perm with view = transpose(source, perm), or None for other views."""
    if view.name != "view" or view.attrs.get("base", "0") != "0":
        return None
    (x,) = view.operands
    if x.type.rank != view.result.type.rank:
        return None
    st = _dense_strides(x.shape)
    perm: list[int] = []
    for d, (size, stride) in enumerate(zip(view.result.shape, view.attrs["strides"])):
        cands = [p for p in range(x.type.rank)
                 if p not in perm and x.shape[p] == size and st[p] == stride]
        if not cands:
            return None
        perm.append(cands[0])
    return perm


def _fold(dot: Op, side: int, perm: list[int], source: Value) -> Op | None:
    a = dict(dot.attrs)
    keys = ("batch_lhs", "lhs_free", "lhs_contract") if side == 0 else \
        ("batch_rhs", "rhs_free", "rhs_contract")
    for k in keys:
        a[k] = [d if d == -1 else perm[d] for d in a[k]]
    operands = list(dot.operands)
    operands[side] = source
    new = Op("dot", operands, dot.results, a)
    return None if verify_dot(new) else new


def _fold_result(dot: Op, view: Op, perm: list[int]) -> Op | None:
    """The dot writing the view's (transposed) layout itself."""
    if "result_perm" in dot.attrs:
        return None
    new = Op("dot", list(dot.operands), [view.result], dict(dot.attrs, result_perm=perm))
    return None if verify_dot(new) else new


def fold_transposes(func: Func) -> Func:
    producer = {r: op for op in func.ops for r in op.results}
    users: dict[Value, list[Op]] = {}
    for op in func.ops:
        for x in op.operands:
            users.setdefault(x, []).append(op)
    ops = []
    for op in func.ops:
        if op.name == "dot":
            for side in (0, 1):
                p = producer.get(op.operands[side])
                perm = permutation_of(p) if p is not None else None
                if perm is not None:
                    op = _fold(op, side, perm, p.operands[0]) or op
            # the only reader transposes the product (attention's context)
            readers = users.get(op.result, [])
            perm = permutation_of(readers[0]) if len(readers) == 1 else None
            if perm is not None and op.result not in func.rets:
                folded = _fold_result(op, readers[0], perm)
                if folded is not None:
                    ops.append(folded)
                    continue
        ops.append(op)
    # the transposes now written by their dots
    written = {r for op in ops if op.name == "dot" for r in op.results}
    ops = [op for op in ops if not (op.name == "view" and op.result in written)]
    return dataclasses.replace(func, ops=ops)
