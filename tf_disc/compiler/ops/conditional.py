"""If / StatelessIf / Case / StatelessCase (TF2 functional conditionals:
tf.cond, tf.switch_case) -> the IR `if` / `case` op (ir/control.py) holding
the branches lowered as nested functions.

Each branch is lowered like a loop body (ops/control_flow.py): its
arguments take the operands' dims (static ones, and equal ones shared), so
a branch sees what straight-line code would.  A result dim is the one
every branch returns (static, or an operand's dim), else a symbol the run
defines: the taken branch's dim.  Branches returning different dtypes or
ranks for one output are not compilable (TF allows it; the result would
have no rank)."""
from __future__ import annotations

from .. import dtypes
from ..errors import Unsupported
from ..ir.core import Func, Op, TensorType, Value
from ..shapes.symbolic import ShapeEnv, is_static
from .control_flow import arg_templates, nested_function
from .rule import OpRule
from .tensor_list import PendingList

_IF_OPS = ("If", "StatelessIf")
_CASE_OPS = ("Case", "StatelessCase")


def _branch_names(node) -> list[str]:
    if node.op in _IF_OPS:
        return [node.attrs.get("then_branch"), node.attrs.get("else_branch")]
    return list(node.attrs.get("branches") or [])


def _outer_dim(d: str, branch: Func, env: ShapeEnv, xs: list[Value]) -> str | None:
    """Branch result dim d in the caller's dims: static, or the operand's dim
    for an argument dim the branch proved equal; None when neither."""
    c = env.canon(d)
    if is_static(c):
        return c
    for a, x in zip(branch.args, xs):
        for ad, xd in zip(a.shape, x.shape):
            if env.canon(ad) == c:
                return xd
    return None


def _result_types(b, node, names: list[str], branches: list[tuple[Func, ShapeEnv]],
                  xs: list[Value]) -> list[TensorType]:
    """One type per output: the dtype and rank all branches agree on; per
    dim the caller's dim all branches return, else a fresh symbol."""
    n = len(branches[0][0].rets)
    for name, (f, _) in zip(names, branches):
        if len(f.rets) != n:
            raise Unsupported(f"node '{node.name}' ({node.op}): branch {names[0]} returns {n} "
                              f"values but branch {name} {len(f.rets)}")
    out = []
    for j in range(n):
        first = branches[0][0].rets[j]
        for name, (f, _) in zip(names, branches):
            r = f.rets[j]
            if r.dtype != first.dtype or r.type.rank != first.type.rank:
                raise Unsupported(f"node '{node.name}' ({node.op}): output {j} is {first.type} "
                                  f"in branch {names[0]} but {r.type} in branch {name}: "
                                  "branches must agree in dtype and rank")
        shape = []
        for m in range(first.type.rank):
            dims = [_outer_dim(f.rets[j].shape[m], f, env, xs) for f, env in branches]
            agreed = dims[0] is not None and all(
                d is not None and b.env.known_equal(d, dims[0]) for d in dims)
            shape.append(dims[0] if agreed else b.env.fresh())
        out.append(TensorType(first.dtype, tuple(shape)))
    return out


def lower_conditional(b, node, xs: list) -> list[Value]:
    from ..frontend.lower import lower_with_env
    kind = "if" if node.op in _IF_OPS else "case"
    selector, args = xs[0], xs[1:]
    if any(isinstance(x, PendingList) for x in xs):
        raise Unsupported(f"node '{node.name}' ({node.op}): a TensorList input")
    if selector.type.rank != 0:
        what = "predicate" if kind == "if" else "branch index"
        raise Unsupported(f"node '{node.name}' ({node.op}): the {what} is not a scalar")
    names = _branch_names(node)
    if not names:
        raise Unsupported(f"node '{node.name}' ({node.op}): no branch functions")
    specs = [{"dtype": x.dtype.tf_enum, "rank": x.type.rank} for x in args]
    dims = arg_templates(b, args, [[True] * x.type.rank for x in args])
    branches = [lower_with_env(nested_function(b, node, name), specs, b.library, dims)
                for name in names]
    results = [Value(b.namer(), t) for t in _result_types(b, node, names, branches, args)]
    b.ops.append(Op(kind, list(xs), results, {"node": node.name},
                    funcs=[f for f, _ in branches]))
    return results


def _out_dtypes(dts, attrs):
    return [dtypes.from_tf(t) for t in attrs.get("Tout") or []]


def _unranked(env, shapes, attrs):
    return [None] * len(attrs.get("Tout") or [])


RULES = [OpRule(name, lower_conditional, {"Tcond": (dtypes.BOOL,)} if name in _IF_OPS else {},
                dtype_rule=_out_dtypes, shape_rule=_unranked, fusion="control")
         for name in _IF_OPS + _CASE_OPS]
