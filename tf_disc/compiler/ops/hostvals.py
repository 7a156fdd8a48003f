"""Shape-valued tensors: small int tensors (rank <= 1) whose elements are
known at compile time as dim strings (tf.shape(x) -> ["s0", "s1"]).  Shape
ops compute on them symbolically; a Reshape/Fill/BroadcastTo whose shape is
one gets symbolic output dims, and when such a tensor is needed as data the
host writes it (IR op dims_tensor) before kernels run."""
from __future__ import annotations

from ..dtypes import I32
from ..errors import Unsupported
from ..shapes.symbolic import is_static


def bind_host(b, v, dims: list) -> None:
    """Declare v (a function input) shape-valued: its elements are dims."""
    b.shape_values[v] = [str(d) for d in dims]


def host_dims(b, v):
    """Elements of v as dim strings, or None when v is not shape-valued."""
    if v.type.rank > 1 or not v.dtype.is_int:
        return None
    t = b.shape_values
    if v in t:
        return list(t[v])
    op = producer(b, v)
    if op is not None and op.name == "constant":
        return [str(int(x)) for x in op.attrs["value"]]
    if op is not None and op.name == "negate":  # x[-n:] with n from tf.shape
        from ..shapes.symbolic import dim_sub
        d = host_dims(b, op.operands[0])
        return None if d is None else [dim_sub("0", x) for x in d]
    return None


def producer(b, v):
    """The op emitted so far that defines v (None for a function input)."""
    for op in reversed(b.ops):
        if v in op.results:
            return op
    return None


def make_host(b, dims: list, dtype, scalar: bool = False):
    """A value holding dims (a constant when all are static)."""
    dims = [str(d) for d in dims]
    if all(is_static(d) for d in dims):
        v = b.constant([int(d) for d in dims] if not scalar else int(dims[0]), dtype)
    else:
        v = b.emit("dims_tensor", [], dtype, () if scalar else (str(len(dims)),),
                   dims=dims)
    b.shape_values[v] = dims
    return v


def const_ints(b, v, node, what: str) -> list[int]:
    d = host_dims(b, v)
    if d is None and v.dtype.is_int:
        d = [str(int(x)) for x in const_array(b, v, node, what)]
    if d is None or not all(is_static(x) for x in d):
        raise Unsupported(f"node '{node.name}' ({node.op}): {what} must be a constant")
    return [int(x) for x in d]


def const_array(b, v, node, what: str):
    """Any constant (float too) as a flat list."""
    op = producer(b, v)
    if op is not None and op.name == "constant":
        return list(op.attrs["value"])
    raise Unsupported(f"node '{node.name}' ({node.op}): {what} must be a constant")


def _host_order_safe(dtype, kind: str, dims: list) -> bool:
    """Max/min of int32 values folds on the host only over operands whose
    int64 value is TF's (symbolic.int32_order_safe); otherwise the op runs as
    an int32 kernel on the materialized (wrapped) operands, as in TF."""
    from ..shapes.symbolic import int32_order_safe
    return dtype != I32 or kind not in ("maximum", "minimum", "max", "min") or \
        all(int32_order_safe(d) for d in dims)


def fold_binary(b, ir_op: str, xs):
    """Int arithmetic on shape-valued tensors stays symbolic (s0 * 64, ...);
    None when not applicable (then the op lowers to a kernel as usual)."""
    from ..shapes.symbolic import (dim_add, dim_floordiv, dim_max, dim_min, dim_mul, dim_sub,
                                   has_value_dims)
    x, y = xs
    if not x.dtype.is_int or x.dtype != y.dtype:
        return None
    hx, hy = host_dims(b, x), host_dims(b, y)
    if hx is None or hy is None:
        return None
    if all(is_static(d) for d in hx + hy):
        return None  # constants: canonicalize folds what it can
    fns = {"add": dim_add, "subtract": dim_sub, "multiply": dim_mul, "maximum": dim_max,
           "minimum": dim_min}
    # Division is host arithmetic only over sizes: a data value (val(...))
    # may be negative (Div truncates) or a zero divisor (TF's error).
    if ir_op in ("div_int", "floor_div_int", "floor_mod_int") and \
            not any(is_static(d) and int(d) <= 0 for d in hy) and \
            not any(is_static(d) and int(d) < 0 for d in hx) and \
            not any(has_value_dims(d) for d in hx + hy):
        fns["floor_div_int"] = fns["div_int"] = dim_floordiv
        # x % y = x - (x // y) * y: seq % 3 in slice bounds
        fns["floor_mod_int"] = lambda u, v: dim_sub(u, dim_mul(dim_floordiv(u, v), v))
    fn = fns.get(ir_op)
    if fn is None or not _host_order_safe(x.dtype, ir_op, hx + hy):
        return None
    n = max(len(hx), len(hy))
    if len(hx) != len(hy) and min(len(hx), len(hy)) != 1:
        return None
    hx = hx * n if len(hx) == 1 else hx
    hy = hy * n if len(hy) == 1 else hy
    out_scalar = x.type.rank == 0 and y.type.rank == 0
    return make_host(b, [fn(u, v) for u, v in zip(hx, hy)], x.dtype, scalar=out_scalar)


def fold_gather(b, params, indices, axis: int):
    """Elements of a shape-valued vector picked by constant in-range indices
    (tf.tensordot's Shape -> GatherV2 -> Prod), or None (a gather kernel
    then runs, with TF's range check)."""
    hp, hi = host_dims(b, params), host_dims(b, indices)
    if hp is None or hi is None or params.type.rank != 1 or axis != 0:
        return None
    if not all(is_static(i) and 0 <= int(i) < len(hp) for i in hi):
        return None
    return make_host(b, [hp[int(i)] for i in hi], params.dtype, scalar=indices.type.rank == 0)


def fold_reduce(b, x, axes: list[int], kind: str, keep: bool):
    """Sum/Prod/Max/Min of a whole shape-valued vector as one symbolic dim,
    or None."""
    from ..shapes.symbolic import dim_add, dim_max, dim_min, dim_mul
    hx = host_dims(b, x)
    if hx is None or x.type.rank != 1 or axes != [0]:
        return None
    if kind in ("sum", "prod"):
        value = (dim_add if kind == "sum" else dim_mul)(*hx)
    elif kind in ("max", "min") and hx and _host_order_safe(x.dtype, kind, hx):
        fn = dim_max if kind == "max" else dim_min
        value = hx[0]
        for d in hx[1:]:
            value = fn(value, d)
    else:
        return None
    return make_host(b, [value], x.dtype, scalar=not keep)
