"""IR -> text.  The format is line based and parses back (parser.py):

  func @name(%arg0: f32[s0,s1]) {
    %v0 = exponential(%arg0) : f32[s0,s1]
    assert_eq(%arg0, %v0) {"node": "x"}
    %v1 = fusion(%arg0) {"kernel": 0} : f32[s0,s1] {
      %v2 = negate(%arg0) : f32[s0,s1]
      yield(%v2)
    }
    return(%v1)
  }
Attributes are JSON objects with sorted keys.  Dims interned by
shapes/symbolic.py (names "e" + 16 hex digits) are defined before the
function, parts first, so that another process can parse and expand them:

  dim e0123456789abcdef = bcast(s0,add(s1,1))
"""
from __future__ import annotations

import json

from ..shapes.symbolic import interned_definitions
from .core import Func, Op


def _attrs(attrs: dict) -> str:
    return " " + json.dumps(attrs, sort_keys=True, separators=(",", ": ")) if attrs else ""


def _op_lines(op: Op, indent: str) -> list[str]:
    lhs = ", ".join("%" + r.name for r in op.results)
    head = f"{lhs} = " if lhs else ""
    args = ", ".join("%" + v.name for v in op.operands)
    line = f"{indent}{head}{op.name}({args}){_attrs(op.attrs)}"
    if op.results:
        line += " : " + ", ".join(str(r.type) for r in op.results)
    if op.funcs:  # nested functions, isolated: "( func ... func ... )"
        lines = [line + " ("]
        for f in op.funcs:
            lines += _func_lines(f, indent + "  ")
        return lines + [indent + ")"]
    if op.region is None:
        return [line]
    lines = [line + " {"]
    for inner in op.region.ops:
        lines += _op_lines(inner, indent + "  ")
    outs = ", ".join("%" + v.name for v in op.region.outputs)
    lines.append(f"{indent}  yield({outs})")
    lines.append(indent + "}")
    return lines


def _func_lines(func: Func, indent: str) -> list[str]:
    args = ", ".join(f"%{a.name}: {a.type}" for a in func.args)
    lines = [f"{indent}func @{func.name}({args}){_attrs(func.attrs)} {{"]
    for op in func.ops:
        lines += _op_lines(op, indent + "  ")
    lines.append(indent + "  return(" + ", ".join("%" + v.name for v in func.rets) + ")")
    lines.append(indent + "}")
    return lines


def print_func(func: Func) -> str:
    body = "\n".join(_func_lines(func, "")) + "\n"
    defs = "".join(f"dim {name} = {text}\n" for name, text in interned_definitions(body))
    return defs + body
