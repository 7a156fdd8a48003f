"""The `while` op: functional control flow in the IR.

  %r0, %r1 = while(%i0, %x0) {"node": "w"} : i32[], f32[s0,s1] (
    func @cond(%arg0: i32[], %arg1: f32[s2,s3]) { ... return(%pred) }
    func @body(%arg0: i32[], %arg1: f32[s2,s3]) { ... return(%i1, %x1) }
  )

Operands are the loop variables' initial values, results their final ones
(the operands when cond is false at once).  cond and body are isolated
functions over the loop variables (their own symbols: every iteration may
see other sizes); cond returns one bool scalar, body one value per loop
variable of the same dtype and rank.  A result dim is the operand's when
the body keeps that dim, else a symbol the run defines (a tensor that grows
per iteration).
"""
from __future__ import annotations

from .core import Func, Op

COND, BODY = 0, 1


def loop_funcs(op: Op) -> tuple[Func, Func]:
    return op.funcs[COND], op.funcs[BODY]


def check_while(op: Op) -> str | None:
    """None when op is a well-formed `while`, else what is wrong."""
    if len(op.funcs) != 2:
        return "while needs a cond and a body function"
    cond, body = loop_funcs(op)
    n = len(op.operands)
    if len(op.results) != n:
        return f"{n} loop variables but {len(op.results)} results"
    for f in (cond, body):
        if len(f.args) != n:
            return f"@{f.name} takes {len(f.args)} arguments, the loop has {n} variables"
        for a, v in zip(f.args, op.operands):
            if a.dtype != v.dtype or a.type.rank != v.type.rank:
                return f"@{f.name} argument %{a.name}: {a.type} for operand %{v.name}: {v.type}"
    if len(cond.rets) != 1 or not cond.rets[0].dtype.is_bool or cond.rets[0].type.rank != 0:
        return f"@{cond.name} must return one bool scalar"
    if len(body.rets) != n:
        return f"@{body.name} returns {len(body.rets)} values for {n} loop variables"
    for r, v, res in zip(body.rets, op.operands, op.results):
        if r.dtype != v.dtype or r.type.rank != v.type.rank:
            return f"@{body.name} returns %{r.name}: {r.type} for loop variable %{v.name}"
        if res.dtype != v.dtype or res.type.rank != v.type.rank:
            return f"result %{res.name}: {res.type} for loop variable %{v.name}: {v.type}"
    return None
