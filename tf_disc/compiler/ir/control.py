"""Functional control flow in the IR: the `while`, `if` and `case` ops.

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

  %r0 = if(%p, %x0) {"node": "c"} : f32[s4,s1] (
    func @then(%arg0: f32[s0,s1]) { ... return(%y) }
    func @else(%arg0: f32[s0,s1]) { ... return(%z) }
  )
  %r0 = case(%i, %x0) {"node": "k"} : f32[s4,s1] ( func @b0 ... func @b1 ... )

A conditional's first operand selects the branch (`if`: a bool scalar, the
first function when true; `case`: an int32 scalar, the last function when
out of range, TF's default branch), the others are the branches'
arguments; every branch is an isolated function over them returning one
value per result, of the result's dtype and rank.  A result dim is one
every branch agrees on, else a symbol the run defines (the taken branch's).
"""
from __future__ import annotations

from .core import Func, Op

COND, BODY = 0, 1
CONDITIONALS = ("if", "case")


def loop_funcs(op: Op) -> tuple[Func, Func]:
    return op.funcs[COND], op.funcs[BODY]


def check_control(op: Op) -> str | None:
    """None when op is a well-formed control flow op, else what is wrong."""
    return check_conditional(op) if op.name in CONDITIONALS else check_while(op)


def check_conditional(op: Op) -> str | None:
    """None when op is a well-formed `if` or `case`, else what is wrong."""
    if op.name == "if" and len(op.funcs) != 2:
        return "if needs a then and an else function"
    if not op.funcs:
        return "case needs at least one branch function"
    if not op.operands:
        return f"{op.name} needs a {'predicate' if op.name == 'if' else 'branch index'}"
    sel, args = op.operands[0], op.operands[1:]
    if op.name == "if" and (not sel.dtype.is_bool or sel.type.rank != 0):
        return f"predicate %{sel.name}: {sel.type} is no bool scalar"
    if op.name == "case" and (sel.dtype.name != "i32" or sel.type.rank != 0):
        return f"branch index %{sel.name}: {sel.type} is no int32 scalar"
    for f in op.funcs:
        if len(f.args) != len(args):
            return f"@{f.name} takes {len(f.args)} arguments, the {op.name} passes {len(args)}"
        for a, v in zip(f.args, args):
            if a.dtype != v.dtype or a.type.rank != v.type.rank:
                return f"@{f.name} argument %{a.name}: {a.type} for operand %{v.name}: {v.type}"
        if len(f.rets) != len(op.results):
            return f"@{f.name} returns {len(f.rets)} values for {len(op.results)} results"
        for r, res in zip(f.rets, op.results):
            if r.dtype != res.dtype or r.type.rank != res.type.rank:
                return f"@{f.name} returns %{r.name}: {r.type} for result %{res.name}: {res.type}"
    return None


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
