"""Hoists the input projection out of RNN loops: a body product
dot(gather(L, i), W) of a row of a list L the loop never changes with a
weight W it never changes is row i of dot(L, W), one GEMM over every step
before the loop (what cuDNN and XLA's RNN lowerings do).  The loop then
carries that product unchanged and the body gathers its row, which the
consumers' kernel reads directly (Keras LSTM/GRU: x_t @ W each step).

Runs on a function with `while` ops before it is split into a Program
(passes/program.py); the pass is pure: a new Func, the input untouched."""
from __future__ import annotations

import dataclasses

from ..ir.control import loop_funcs
from ..ir.core import Func, Namer, Op, TensorType, Value

# The step product's attrs: [B, F] x [F, N] -> [B, N].
_STEP_DOT = {"batch_lhs": [], "batch_rhs": [], "lhs_free": [0], "lhs_contract": [1],
             "rhs_contract": [0], "rhs_free": [1]}


def _invariant(body: Func, v: Value) -> int | None:
    """v's argument index when v is an argument the body returns unchanged."""
    for k, (a, r) in enumerate(zip(body.args, body.rets)):
        if a is v and r is a:
            return k
    return None


def _candidate(body: Func) -> tuple[Op, Op, int, int] | None:
    """(gather, dot, list arg, weight arg) of the first hoistable product."""
    gathers = {op.result: op for op in body.ops if op.name == "gather" and
               op.attrs.get("axis") == 0 and op.operands[1].type.rank == 0 and
               op.operands[0].type.rank == 3}
    for op in body.ops:
        if op.name != "dot" or op.operands[0] not in gathers or op.attrs.get("result_perm"):
            continue
        if any(op.attrs.get(k) != v for k, v in _STEP_DOT.items()):
            continue
        g = gathers[op.operands[0]]
        lk, wk = _invariant(body, g.operands[0]), _invariant(body, op.operands[1])
        if lk is not None and wk is not None:
            return g, op, lk, wk
    return None


def _hoist(loop: Op, namer: Namer) -> tuple[list[Op], Op] | None:
    """(ops to run before the loop, the new loop), or None."""
    cond, body = loop_funcs(loop)
    found = _candidate(body)
    if found is None:
        return None
    g, d, lk, wk = found
    lst, w = loop.operands[lk], loop.operands[wk]
    dt = d.result.dtype
    projected = Value(namer(), TensorType(dt, lst.shape[:2] + w.shape[1:]))
    before = Op("dot", [lst, w], [projected], {**_STEP_DOT, "lhs_free": [0, 1],
                                                "lhs_contract": [2]})
    inner = Namer.for_func(body)
    arg = Value(inner("arg"), TensorType(dt, g.operands[0].shape[:1] + d.result.shape))
    row = Value(inner(), d.result.type)
    # the step's own gather goes when the dot was its one reader (the row's
    # gather checks the same index against the same length)
    readers = sum(v is g.result for op in body.ops for v in op.operands) + \
        sum(v is g.result for v in body.rets)
    ops = []
    for op in body.ops:  # the dot becomes the row's gather; its users read the row
        if op is g and readers == 1:
            continue
        if op is d:
            ops.append(Op("gather", [arg, g.operands[1]], [row], {"axis": 0}))
        else:
            ops.append(dataclasses.replace(
                op, operands=[row if v is d.result else v for v in op.operands]))
    rets = [row if v is d.result else v for v in body.rets] + [arg]
    new_body = dataclasses.replace(body, args=body.args + [arg], ops=ops, rets=rets)
    cond_arg = Value(Namer.for_func(cond)("arg"), arg.type)
    new_cond = dataclasses.replace(cond, args=cond.args + [cond_arg])
    result = Value(namer(), projected.type)
    new_loop = Op("while", loop.operands + [projected], loop.results + [result],
                  dict(loop.attrs), funcs=[new_cond, new_body])
    return [before], new_loop


def hoist_loop_gemms(func: Func) -> Func:
    """func with every loop's hoistable input projection computed before it
    (repeated while a loop has one)."""
    namer = Namer.for_func(func)
    ops: list[Op] = []
    changed = False
    for op in func.ops:
        while op.name == "while":
            hoisted = _hoist(op, namer)
            if hoisted is None:
                break
            ops += hoisted[0]
            op = hoisted[1]
            changed = True
        ops.append(op)
    return dataclasses.replace(func, ops=ops) if changed else func
