"""GraphModel + rank signature -> IR, one registry lowering per TF node.

Every input dim gets its own symbol, except dims the optimizer proved
statically (recorded per arg, checked by the entry at run time); the attr checks here are the same as
the support table's, so a cluster the optimizer formed always lowers, and a
hand-written one that breaks a rule gets a reason naming the node and op.
"""
from __future__ import annotations

from .. import dtypes
from ..errors import CompileError, Unsupported
from ..ir.builder import Builder
from ..ops.hostvals import bind_host
from ..ir.core import Func, Namer, TensorType, Value
from ..registry import lookup
from ..ops.tensor_list import materialize
from ..shapes.symbolic import ShapeEnv, dim_val, is_static
from .graph import ARG, GraphModel, Node

# Longest int vector input whose elements become run-time dims
# (grappler/cluster_rewrite.cc kMaxValueElements).
MAX_VALUE_ELEMENTS = 8
DT_VARIANT = 21  # tensorflow::DT_VARIANT (ops/tensor_list.py)


def _check_attrs(node: Node, rule) -> None:
    for attr, allowed in rule.type_attrs.items():
        val = node.attrs.get(attr)
        vals = val if isinstance(val, list) else [val]
        for v in vals:
            if v == DT_VARIANT:  # a TensorList: checked by the ops that make and read it
                continue
            if v is None or v not in {d.tf_enum for d in allowed}:
                raise Unsupported(f"node '{node.name}' ({node.op}): {attr}={v} is not a "
                                  "supported dtype")
    for attr, allowed in rule.attr_values.items():
        if attr in node.attrs and node.attrs[attr] not in allowed:
            raise Unsupported(f"node '{node.name}' ({node.op}): {attr}="
                              f"{node.attrs[attr]!r} is not supported")


def _check_rules(rule, node: Node, b: Builder, xs: list[Value], outs: list[Value]) -> None:
    """The lowering must agree with the op's declared dtype/rank rules."""
    want_dt = rule.dtype_rule([x.dtype for x in xs], node.attrs)
    want_shape = rule.shape_rule(b.env, [x.shape for x in xs], node.attrs)
    for o, dt, shp in zip(outs, want_dt, want_shape):
        if o.dtype != dt or (shp is not None and o.type.rank != len(shp)):
            raise CompileError(f"lowering of {node.op} node '{node.name}' produced "
                               f"{o.type}, rules say {dt.name} rank {len(shp)}")


def _arg_dims(env: ShapeEnv, rank: int, static: list[int] | None) -> tuple[str, ...]:
    """Proven dims as constants (when recorded for this rank), else symbols."""
    if static is None or len(static) != rank:
        static = [-1] * rank
    return tuple(str(d) if d >= 0 else env.fresh() for d in static)


def _value_dims(i: int, arg: Value) -> list[str] | None:
    """An int scalar or short static-length vector input without a key
    value: its elements as dims the entry reads from the data (one
    executable for every value; the ops using them check them as TF)."""
    if arg.dtype not in (dtypes.I32, dtypes.I64) or arg.type.rank > 1:
        return None
    n = 1 if arg.type.rank == 0 else arg.shape[0]
    if not is_static(str(n)) or int(n) > MAX_VALUE_ELEMENTS:
        return None
    return [dim_val(i, k, arg.dtype.tf_enum) for k in range(int(n))]


def lower_graph(g: GraphModel, inputs: list[dict], library: dict | None = None) -> Func:
    """inputs: request "inputs" entries ({"dtype", "rank", "value"});
    library: the functions nested control flow calls, by name
    (frontend/functions.py)."""
    return lower_with_env(g, inputs, library)[0]


def lower_with_env(g: GraphModel, inputs: list[dict], library: dict | None = None,
                   arg_dims: list[list] | None = None,
                   host_lists: dict[int, tuple] | None = None) -> tuple[Func, ShapeEnv]:
    """lower_graph, and the ShapeEnv that holds what it proved about dims.
    arg_dims (a loop's cond and body, ops/control_flow.py): per argument,
    per dim an int (static) or a key; dims with one key share one symbol.
    host_lists (a loop body): in, an input spec's "host_list" (element dims
    as arg_dims items) declares that argument a host list where every key
    names an argument's dim; out, result index -> ("all", dims) for a host
    list result, ("push", dims) for its argument with such an element
    pushed (ops/tensor_list.py)."""
    if len(inputs) != len(g.arg_names):
        raise CompileError(f"signature has {len(inputs)} inputs, function "
                           f"{len(g.arg_names)} args")
    env, namer = ShapeEnv(), Namer()
    b = Builder(env, namer)
    b.library = dict(library or {})
    args: list[Value] = []
    env_vals: dict[tuple[str, int], Value] = {}
    const_args: list = []
    shared: dict = {}  # arg_dims key -> its symbol
    for i, spec in enumerate(inputs):
        dt = dtypes.from_tf(spec["dtype"])
        rank = int(spec["rank"])
        static = g.static_dims[i] if i < len(g.static_dims) else None
        if arg_dims is not None:
            shape = tuple(str(d) if isinstance(d, int) else shared.setdefault(d, env.fresh())
                          for d in arg_dims[i])
        else:
            shape = _arg_dims(env, rank, static)
        arg = Value(f"arg{i}", TensorType(dt, shape))
        namer.taken.add(arg.name)
        args.append(arg)
        env_vals[(f"{ARG}:{i}", 0)] = arg
        value = spec.get("value")
        const_args.append(value)
        if value is not None and rank == 0:
            env_vals[(f"{ARG}:{i}", 0)] = b.constant(value[0] if isinstance(value, list)
                                                      else value, dt)
        elif value is not None and rank == 1:
            env_vals[(f"{ARG}:{i}", 0)] = b.constant(value, dt, (len(value),))
        elif value is None and _value_dims(i, arg) is not None:
            bind_host(b, arg, _value_dims(i, arg))
    for i, spec in enumerate(inputs):
        items = spec.get("host_list")
        if items is not None and all(isinstance(d, int) or d in shared for d in items):
            b.host_lists[args[i]] = [str(d) if isinstance(d, int) else shared[d] for d in items]
    for node in g.nodes:
        rule = lookup(node.op) if node.op else None
        try:
            _check_attrs(node, rule)
            xs = [env_vals[src] for src in node.inputs]
            outs = rule.lower(b, node, xs)
            _check_rules(rule, node, b, xs, outs)
        except KeyError as e:
            raise CompileError(f"node '{node.name}' ({node.op}): missing input {e}") from None
        except Unsupported:
            raise
        except CompileError as e:
            msg = str(e)
            if node.name not in msg:
                msg = f"{msg} (node '{node.name}', op {node.op})"
            raise type(e)(msg) from None
        for k, v in enumerate(outs):
            env_vals[(node.name, k)] = v
    try:
        rets = [env_vals[r] for r in g.rets]
    except KeyError as e:
        raise CompileError(f"return value {e} is not produced") from None
    rets = [materialize(b, v) for v in rets]
    if host_lists is not None:
        for i, v in enumerate(rets):
            if v in b.host_lists:
                host_lists[i] = ("all", b.host_lists[v])
            elif v in b.host_pushes and i < len(args) and b.host_pushes[v][0] is args[i]:
                host_lists[i] = ("push", b.host_pushes[v][1])
    for v in dict.fromkeys(rets):
        b.ops.extend(b.result_checks.get(v, []))
    attrs = {"ret_names": g.ret_names}
    if any(v is not None for v in const_args):
        attrs["const_args"] = const_args
    return Func(g.name, args, b.ops, rets, attrs), env
