"""Reductions: Sum/Mean/Max/Min/Prod/All/Any (constant axes, keep_dims,
negative axes; empty reductions give TF's identity values), ArgMax/ArgMin,
Softmax/LogSoftmax.  Each lowers to the `reduce`/`argreduce` library ops
(codegen/cpu/reduce.py) plus elementwise ops that fuse around them."""
from __future__ import annotations

from .. import dtypes
from ..dtypes import BOOL, INTS, NUMERIC, FLOATS
from ..errors import ShapeError
from ..shapes.symbolic import dim_mul
from .hostvals import const_ints, fold_reduce, make_host
from .rule import OpRule


def _axes(b, node, x, ax) -> list[int]:
    r = x.type.rank
    axes = const_ints(b, ax, node, "reduction indices")
    out = []
    for a in axes:
        if not -max(r, 1) <= a < max(r, 1):
            raise ShapeError(f"Invalid reduction dimension ({a} for input with {r} "
                             f"dimension(s) (node '{node.name}', op {node.op})")
        out.append(a % r if r else 0)
    return sorted(set(out)) if r else []


def reduce_value(b, x, axes, kind, keep):
    shape = tuple("1" if d in axes else s for d, s in enumerate(x.shape)) if keep else \
        tuple(s for d, s in enumerate(x.shape) if d not in axes)
    return b.emit("reduce", [x], x.dtype, shape, kind=kind, dimensions=list(axes))


def _reduction(kind, mean=False):
    def lower(b, node, xs):
        x, ax = xs
        axes = _axes(b, node, x, ax)
        keep = bool(node.attrs.get("keep_dims", False))
        if not axes:
            return [x]
        folded = fold_reduce(b, x, axes, kind, keep)
        if folded is not None and not mean:
            return [folded]
        # TF sums an int32 Mean in int64 (reduction_ops.h CASTING_SPECIALIZATION):
        # the mean of [2^31-1, 2^31-1, 5] is 1431655766, not a wrapped sum / 3.
        acc = dtypes.I64 if mean and x.dtype == dtypes.I32 else x.dtype
        out = reduce_value(b, b.convert(x, acc) if acc != x.dtype else x, axes, kind, keep)
        if mean:
            count = dim_mul(*[x.shape[d] for d in axes])
            c = make_host(b, [count], dtypes.I64, scalar=True)
            c = b.broadcast_to(b.convert(c, acc), out.shape)
            # Integer mean over zero elements is 0 in TF (no division error).
            out = b.elementwise("divide" if x.dtype.is_float else "div_no_nan", out, c)
            out = b.convert(out, x.dtype) if acc != x.dtype else out
        return [out]
    lower.__name__ = f"lower_{kind}{'_mean' if mean else ''}"
    return lower


def _argreduce(kind):
    def lower(b, node, xs):
        x, ax = xs
        (a,) = const_ints(b, ax, node, "dimension")
        r = x.type.rank
        if not -r <= a < r:
            raise ShapeError(f"Expected dimension in the range [{-r}, {r}), but got {a} "
                             f"(node '{node.name}')")
        a %= r
        dt = dtypes.from_tf(node.attrs.get("output_type", 9))
        shape = tuple(s for d, s in enumerate(x.shape) if d != a)
        return [b.emit("argreduce", [x], dt, shape, kind=kind, dimension=a)]
    return lower


def _softmax(log):
    def lower(b, node, xs):
        (x,) = xs
        r = x.type.rank
        if r < 1:
            raise ShapeError(f"logits must have >= 1 dimension (node '{node.name}')")
        last = [r - 1]
        m = b.broadcast_to(reduce_value(b, x, last, "max_ignore_nan", True), x.shape)
        z = b.elementwise("subtract", x, m)
        f32 = x.dtype == dtypes.F32
        # f32 (and half, computed in f32): oneDNN's exp is owed in accuracy
        # only, so the FMA exp (disc_exp_fast, runtime/cpu/prelude/disc_math.h)
        # instead of Eigen's.
        e = b.elementwise("exponential", z, **({"fast": True} if f32 else {}))
        if not log and f32:
            # TF's f32 Softmax is oneDNN's, whose exp maps NaN to +inf: a row
            # with NaN/inf gives NaN there and 0 elsewhere (Eigen's f64
            # Softmax and LogSoftmax give a NaN row, as the plain formula).
            inf = b.scalar_like(float("inf"), e)
            e = b.elementwise("select", b.elementwise("is_nan", z), inf, e, dtype=e.dtype)
        s = reduce_value(b, e, last, "sum", True)
        if log:
            return [b.elementwise("subtract", z,
                                  b.broadcast_to(b.elementwise("log", s), x.shape))]
        # times the row sum's reciprocal (once per row), as oneDNN and Eigen's functor
        inv = b.broadcast_to(b.elementwise("reciprocal", s), x.shape)
        return [b.elementwise("multiply", e, inv)]
    return lower


def lower_softmax_xent(b, node, xs):
    """SoftmaxCrossEntropyWithLogits with TF's (xent_op.h) formulas:
    loss = sum(labels * (log(sum(exp(z))) - z)), backprop = softmax - labels,
    z = logits - max(logits), over the last of 2 (broadcast) dims."""
    if any(x.type.rank > 2 for x in xs):
        raise ShapeError(f"logits and labels must be either 2-dimensional, or broadcasted "
                         f"to be 2-dimensional (node '{node.name}')")
    logits, labels = b.broadcast_all(list(xs), node.name, node.op)
    if logits.type.rank != 2:
        raise ShapeError(f"logits and labels must be either 2-dimensional, or broadcasted "
                         f"to be 2-dimensional (node '{node.name}')")
    m = b.broadcast_to(reduce_value(b, logits, [1], "max_ignore_nan", True), logits.shape)
    z = b.elementwise("subtract", logits, m)
    e = b.elementwise("exponential", z)
    s = reduce_value(b, e, [1], "sum", True)
    s_b = b.broadcast_to(s, logits.shape)
    per = b.elementwise("multiply", labels,
                        b.elementwise("subtract", b.elementwise("log", s_b), z))
    loss = reduce_value(b, per, [1], "sum", False)
    backprop = b.elementwise("subtract", b.elementwise("divide", e, s_b), labels)
    return [loss, backprop]


def lower_cumsum(b, node, xs):
    x, ax = xs
    (a,) = const_ints(b, ax, node, "axis")
    r = x.type.rank
    if not -r <= a < r:
        raise ShapeError(f"axis {a} out of range for rank {r} (node '{node.name}')")
    return [b.emit("cumsum", [x], x.dtype, x.shape, axis=a % r,
                   exclusive=bool(node.attrs.get("exclusive", False)),
                   reverse=bool(node.attrs.get("reverse", False)))]


def _keep_shape(env, shapes, attrs):
    return [("?",) * len(shapes[0])]   # rank only; checked loosely below


def _red_shape(env, shapes, attrs):
    if attrs.get("keep_dims", False):
        return [("?",) * len(shapes[0])]
    # rank depends on the axes' values: the lowering's result is trusted
    return [None]


def _rule(name, lower, types):
    return OpRule(name, lower, {"T": types, "Tidx": INTS}, shape_rule=_red_shape,
                  fusion="reduction", const_inputs=(1,))


RULES = [
    _rule("Sum", _reduction("sum"), NUMERIC),
    _rule("Prod", _reduction("prod"), NUMERIC),
    _rule("Max", _reduction("max"), NUMERIC),
    _rule("Min", _reduction("min"), NUMERIC),
    _rule("Mean", _reduction("sum", mean=True), NUMERIC),
    OpRule("All", _reduction("and"), {"Tidx": INTS}, shape_rule=_red_shape,
           fusion="reduction", const_inputs=(1,)),
    OpRule("Any", _reduction("or"), {"Tidx": INTS}, shape_rule=_red_shape,
           fusion="reduction", const_inputs=(1,)),
    OpRule("ArgMax", _argreduce("max"), {"T": NUMERIC, "Tidx": INTS, "output_type": INTS},
           dtype_rule=lambda d, a: [dtypes.from_tf(a.get("output_type", 9))],
           shape_rule=lambda env, s, a: [("?",) * (len(s[0]) - 1)], fusion="reduction",
           const_inputs=(1,)),
    OpRule("ArgMin", _argreduce("min"), {"T": NUMERIC, "Tidx": INTS, "output_type": INTS},
           dtype_rule=lambda d, a: [dtypes.from_tf(a.get("output_type", 9))],
           shape_rule=lambda env, s, a: [("?",) * (len(s[0]) - 1)], fusion="reduction",
           const_inputs=(1,)),
    OpRule("Cumsum", lower_cumsum, {"T": NUMERIC, "Tidx": INTS}, fusion="reduction",
           const_inputs=(1,)),
    OpRule("SoftmaxCrossEntropyWithLogits", lower_softmax_xent, {"T": FLOATS},
           dtype_rule=lambda d, a: [d[0], d[0]], fusion="reduction", num_outputs=2,
           shape_rule=lambda env, s, a: [("?",), ("?", "?")]),
    OpRule("Softmax", _softmax(False), {"T": FLOATS}, fusion="reduction"),
    OpRule("LogSoftmax", _softmax(True), {"T": FLOATS}, fusion="reduction"),
]
del BOOL
