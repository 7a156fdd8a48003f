"""Structural checks run after every pass: SSA order, op arity, dtype and
shape rules of elementwise ops, broadcast dims, fusion regions, and the
attributes passes leave for codegen (contract.py)."""
from __future__ import annotations

from ..errors import CompileError
from ..shapes.symbolic import parse_dim, symbols_of
from .contract import ContractError, check_contract
from .core import Func, Op, Value
from .opset import COMPARE_DIRECTIONS, spec


class VerifyError(CompileError):
    pass


def _fail(op: Op, msg: str) -> None:
    raise VerifyError(f"IR verify: {op.name} -> {[r.name for r in op.results]}: {msg}")


def _check_op(op: Op, defined: set[Value], in_region: bool | str, syms: set[str]) -> None:
    s = spec(op.name)
    for v in op.operands:
        if v not in defined:
            _fail(op, f"operand %{v.name} used before definition")
    if s.arity >= 0 and len(op.operands) != s.arity:
        _fail(op, f"expects {s.arity} operands, got {len(op.operands)}")
    if s.kind == "assert":
        if op.results or in_region:
            _fail(op, "asserts have no results and live at top level")
        for d in op.attrs.get("lhs", []) + op.attrs.get("rhs", []):
            if not symbols_of(d) <= syms:
                _fail(op, f"dim {d} uses symbols no argument defines")
        return
    if s.kind == "control":
        from .control import check_control
        problem = None if in_region else check_control(op)
        if in_region or problem:
            _fail(op, problem or "control flow lives at top level")
        for f in op.funcs:
            verify(f)
        return
    if s.kind == "fusion":
        if in_region or op.region is None:
            _fail(op, "fusion needs a region and cannot nest")
        inner = set(defined)
        for o in op.region.ops:
            # stitch regions (passes/stitch.py) also hold row reductions
            _check_op(o, inner, "stitch" if op.name == "stitch" else True, syms)
            inner.update(o.results)
        if len(op.region.outputs) != len(op.results):
            _fail(op, "yield count != result count")
        for out, res in zip(op.region.outputs, op.results):
            if out not in inner or out.type != res.type:
                _fail(op, f"yielded %{out.name} does not match result %{res.name}")
        return
    if len(op.results) != 1:
        _fail(op, "expects one result")
    res = op.result
    if s.kind == "library":
        if in_region and not (op.name == "reduce" and in_region == "stitch"):
            _fail(op, "library ops live at top level")
        from .dot import verify_dot
        problem = verify_dot(op) if op.name == "dot" else None
        if problem:
            _fail(op, problem)
        return
    if s.kind == "constant":
        n = 1
        for d in res.shape:
            if not d.isdigit():
                _fail(op, "constant shape must be static")
            n *= int(d)
        if len(op.attrs.get("value", [])) != n:
            _fail(op, "constant value count does not match its shape")
        return
    if s.kind in ("index", "host") or op.name in ("reduce", "argreduce", "cumsum", "topk"):
        if s.kind != "index" and in_region:
            _fail(op, f"{s.kind} ops live at top level")
        if s.result == "same" and any(v.dtype != res.dtype for v in op.operands[:1]):
            _fail(op, "operand dtype must equal the result dtype")
        return
    if s.kind == "broadcast":
        (x,) = op.operands
        bd = op.attrs.get("broadcast_dimensions")
        if bd is None or len(bd) != x.type.rank:
            _fail(op, "broadcast_dimensions must list one dim per operand dim")
        if any(not 0 <= d < res.type.rank for d in bd) or sorted(bd) != list(bd):
            _fail(op, f"bad broadcast_dimensions {bd}")
        if x.dtype != res.dtype:
            _fail(op, "broadcast changes dtype")
        return
    # elementwise
    for v in op.operands:
        if v.shape != res.shape:
            _fail(op, f"operand %{v.name} shape {v.type} != result {res.type}")
    if op.name == "compare" and op.attrs.get("direction") not in COMPARE_DIRECTIONS:
        _fail(op, "compare needs a direction")
    if op.name == "select":
        if not op.operands[0].dtype.is_bool or op.operands[1].dtype != res.dtype \
                or op.operands[2].dtype != res.dtype:
            _fail(op, "select dtypes")
    elif s.result == "bool":
        if not res.dtype.is_bool:
            _fail(op, "result must be bool")
    elif s.result == "same":
        if any(v.dtype != res.dtype for v in op.operands):
            _fail(op, "operand dtypes must equal the result dtype")


def verify(func: Func) -> Func:
    """Raise VerifyError on a malformed function; return it unchanged."""
    defined: set[Value] = set(func.args)
    names: set[str] = {a.name for a in func.args}
    for op in func.walk():
        for r in op.results:
            if r.name in names:
                raise VerifyError(f"IR verify: value %{r.name} defined twice")
            names.add(r.name)
    syms = set().union(*(symbols_of(d) for a in func.args for d in a.shape))
    # a loop's results may have dims only the run knows (ir/control.py)
    syms |= {d for op in func.ops if spec(op.name).kind == "control"
             for r in op.results for d in r.shape if parse_dim(d)[0] == "sym"}
    for op in func.walk():
        for r in op.results:
            for d in r.shape:
                if not symbols_of(d) <= syms:
                    raise VerifyError(f"IR verify: %{r.name} dim {d} uses undefined symbols")
    for op in func.ops:
        _check_op(op, defined, False, syms)
        defined.update(op.results)
    for v in func.rets:
        if v not in defined:
            raise VerifyError(f"IR verify: returned %{v.name} is undefined")
    try:
        check_contract(func)
    except ContractError as e:
        raise VerifyError(f"IR verify: {e}") from None
    return func
