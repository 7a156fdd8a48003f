"""While / StatelessWhile (TF2 functional loops) -> the IR `while` op
(ir/control.py) holding its cond and body lowered as nested functions.

cond and body come from the request's function library (frontend/
functions.py) and are lowered like a cluster: every dim of a loop variable
is a fresh symbol of the nested function, so one body serves every
iteration whatever the sizes.  After lowering, what the body proved
decides the loop's result shapes: a dim the body keeps is the operand's,
another one a symbol the run defines.  A TensorList reserved with unknown
element dims (ops/tensor_list.py PendingList) takes them from the loop
variable whose dims the body proved equal (Keras: the state's batch)."""
from __future__ import annotations

import dataclasses

from ..errors import Unsupported
from ..ir.core import Op, TensorType, Value
from ..shapes.symbolic import is_static, parse_dim
from .rule import OpRule
from .tensor_list import UNKNOWN, PendingList, materialize

# TF dtypes a loop variable cannot have in a compiled loop.
_DT_RESOURCE = 20
# Lowerings of a body whose kept dims are not settled yet (each round drops
# at least one dim).
MAX_BODY_ROUNDS = 4


def _reachable(g):
    """g without the nodes no return value depends on (NoOps, the control
    edges of Keras' loop bodies)."""
    by_name = {n.name: n for n in g.nodes}
    live, stack = set(), [src for src, _ in g.rets]
    while stack:
        name = stack.pop()
        if name in live or name not in by_name:
            continue
        live.add(name)
        stack += [src for src, _ in by_name[name].inputs]
    return dataclasses.replace(g, nodes=[n for n in g.nodes if n.name in live])


def nested_function(b, node, name: str):
    """The library function `name` a control flow node calls, without the
    nodes its returns do not need."""
    g = b.library.get(name)
    if g is None:
        raise Unsupported(f"node '{node.name}' ({node.op}): function {name} is not in the "
                          "cluster's library")
    return _reachable(g)


def _pending_dims(lst: PendingList, k: int, xs: list, body, env, outer_env
                  ) -> tuple[str, ...]:
    """The element dims of pending list k: each unknown one as the body
    proved it (static, or from the other loop variables' dims; a broadcast
    of them too), in the caller's dims; UNKNOWN when not found."""
    known: dict[str, str] = {}  # body arg symbol -> caller's dim
    for m, (a, x) in enumerate(zip(body.args, xs)):
        if m != k and not isinstance(x, PendingList):
            for ad, xd in zip(a.shape, x.shape):
                known.setdefault(ad, xd)

    def outer(d: str, depth: int = 0) -> str | None:
        for e in env.equal_dims(d):
            if is_static(e):
                return e
            if e in known:
                return known[e]
            p = parse_dim(e)
            if p[0] == "bcast" and depth < 4:
                parts = [outer(q, depth + 1) for q in p[1]]
                if all(q is not None for q in parts):
                    out = parts[0]
                    for q in parts[1:]:
                        out = outer_env.broadcast_dim(out, q)
                    return out
        return None

    dims = list(lst.elem if lst.elem is not None else (UNKNOWN,) * (body.args[k].type.rank - 1))
    for j, d in enumerate(dims):
        if d == UNKNOWN:
            dims[j] = outer(body.args[k].shape[1 + j]) or UNKNOWN
    return tuple(dims)


def _result_type(b, x: Value, arg: Value, ret: Value, env) -> TensorType:
    """The operand's dims where the body keeps them, else fresh symbols."""
    shape = tuple(d if env.known_equal(ad, rd) or ret is arg else b.env.fresh()
                  for d, ad, rd in zip(x.shape, arg.shape, ret.shape))
    return TensorType(x.dtype, shape)


def arg_templates(b, xs: list, keep: list[list[bool]]) -> list[list]:
    """The body's argument dims: where kept, the operand's (static, or a key
    shared by operand dims known equal), else a key of its own."""
    out = []
    for k, (x, kk) in enumerate(zip(xs, keep)):
        dims = []
        for j, (d, kept) in enumerate(zip(x.shape, kk)):
            if kept and d != UNKNOWN:
                c = b.env.canon(d)
                dims.append(int(c) if is_static(c) else ("dim", c))
            else:
                dims.append(("own", k, j))
        out.append(dims)
    return out


def _lower_body(b, node, xs: list, specs: list[dict], host_lists: dict):
    """(body, its ShapeEnv, the argument dims used): the body lowered with
    the operands' dims (static ones, and equal ones shared) wherever it
    keeps them, so that loop bodies see what straight-line code would;
    a dim the body changes is dropped and the body lowered again.
    host_lists: what the last lowering found (frontend/lower.py)."""
    from ..frontend.lower import lower_with_env
    g = nested_function(b, node, node.attrs.get("body"))
    keep = [[True] * x.type.rank for x in xs]
    for _ in range(MAX_BODY_ROUNDS):
        dims = arg_templates(b, xs, keep)
        host_lists.clear()
        body, env = lower_with_env(g, specs, b.library, dims, host_lists)
        changed = False
        for k, (a, r) in enumerate(zip(body.args, body.rets)):
            if len(r.shape) != len(a.shape):
                return body, env, dims  # reported by the caller
            for j, (ad, rd) in enumerate(zip(a.shape, r.shape)):
                if keep[k][j] and r is not a and not env.known_equal(ad, rd):
                    keep[k][j] = False
                    changed = True
        if not changed:
            return body, env, dims
    dims = arg_templates(b, xs, [[False] * x.type.rank for x in xs])
    host_lists.clear()
    body, env = lower_with_env(g, specs, b.library, dims, host_lists)
    return body, env, dims


def _host_list_templates(b, dims: list[str]) -> list:
    """A host list's element dims as arg_dims items (frontend/lower.py)."""
    return [int(d) if is_static(d) else ("dim", b.env.canon(d)) for d in dims]


def _caller_dims(body_dims: list[str], body, env, templates: list[list]) -> list[str] | None:
    """Dims of the body in the caller's terms: static ones, and those equal
    to an argument dim the body keeps (the same in every iteration); None
    when one is neither."""
    out = []
    for d in body_dims:
        if is_static(d):
            out.append(d)
            continue
        found = next((t[1] for a, dims in zip(body.args, templates)
                      for ad, t in zip(a.shape, dims)
                      if isinstance(t, tuple) and t[0] == "dim" and env.known_equal(d, ad)), None)
        if found is None:
            return None
        out.append(found)
    return out


def _mark_host_lists(b, xs: list, results: list, facts: dict, body, env, templates) -> None:
    """Loop results that are host lists (Builder.host_lists): a host list
    operand the body keeps one (only pops or passes it on), or an empty or
    host list operand the body pushes the same shape-valued element onto
    in every iteration (while_v2's shape accumulators)."""
    for k, (kind, body_dims) in facts.items():
        operand = b.host_lists.get(xs[k]) if not isinstance(xs[k], PendingList) else None
        if kind == "all" and operand is not None:
            b.host_lists[results[k]] = operand
        elif kind == "push":
            dims = _caller_dims(body_dims, body, env, templates)
            empty = (xs[k].n if isinstance(xs[k], PendingList) else xs[k].shape[0]) == "0"
            if dims is not None and (empty or operand == dims):
                b.host_lists[results[k]] = dims


def lower_while(b, node, xs):
    from ..frontend.lower import lower_with_env
    for i, t in enumerate(node.attrs.get("T") or []):
        if t == _DT_RESOURCE:
            raise Unsupported(f"node '{node.name}' ({node.op}): loop variable {i} is a "
                              "resource")
    specs = [{"dtype": x.dtype.tf_enum, "rank": x.type.rank} for x in xs]
    for spec, x in zip(specs, xs):
        if not isinstance(x, PendingList) and x in b.host_lists:
            spec["host_list"] = _host_list_templates(b, b.host_lists[x])
    facts: dict = {}
    body, env, dims = _lower_body(b, node, xs, specs, facts)
    cond, _ = lower_with_env(nested_function(b, node, node.attrs.get("cond")), specs,
                             b.library, dims)
    if len(cond.rets) != 1 or not cond.rets[0].dtype.is_bool or cond.rets[0].type.rank:
        raise Unsupported(f"node '{node.name}' ({node.op}): cond must return a bool scalar")
    if len(body.rets) != len(xs):
        raise Unsupported(f"node '{node.name}' ({node.op}): body returns {len(body.rets)} "
                          f"values for {len(xs)} loop variables")
    for k, (x, r) in enumerate(zip(xs, body.rets)):
        if r.dtype != x.dtype or r.type.rank != x.type.rank:
            raise Unsupported(f"node '{node.name}' ({node.op}): loop variable {k} is "
                              f"{x.dtype.name} rank {x.type.rank} but the body returns {r.type}")
    operands = [materialize(b, x, _pending_dims(x, k, xs, body, env, b.env))
                if isinstance(x, PendingList) else x for k, x in enumerate(xs)]
    results = [Value(b.namer(), _result_type(b, x, a, r, env))
               for x, a, r in zip(operands, body.args, body.rets)]
    op = Op("while", operands, results, {"node": node.name}, funcs=[cond, body])
    b.ops.append(op)
    _mark_host_lists(b, xs, results, facts, body, env, dims)
    for k, (x, r) in enumerate(zip(xs, results)):
        if isinstance(x, PendingList) and (x.elem is None or UNKNOWN in x.elem):
            # TF knows this list's element shape only once a row is set: a
            # loop that sets none leaves a list TensorListStack refuses.
            shape = "<unknown>" if x.elem is None else "[" + ",".join(x.elem) + "]"
            b.unset_lists[r] = (op, [k, shape])
    return results


def _same_dtypes(dts, attrs):
    return list(dts)


def _unranked(env, shapes, attrs):
    return [None] * len(shapes)


RULES = [OpRule(name, lower_while, {}, dtype_rule=_same_dtypes, shape_rule=_unranked,
                fusion="control") for name in ("While", "StatelessWhile")]
