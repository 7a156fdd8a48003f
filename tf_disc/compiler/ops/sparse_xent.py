"""SparseSoftmaxCrossEntropyWithLogits (every Keras sparse categorical loss
and its gradient): loss = log(sum(exp(z))) - z[label] (a gather), backprop =
softmax - onehot(label), z = logits - max(logits), with TF's (xent_op.h) formulas.

TF checks every label against [0, classes) before computing; the
`label_check` library op (codegen/labels.py) does the same and returns the
labels, so the kernels that read them run after it."""
from __future__ import annotations

from .. import dtypes
from ..dtypes import FLOATS, INTS
from ..errors import ShapeError
from ..ir.core import Op
from ..shapes.symbolic import dim_ifzero, dim_min, dim_mul
from .hostvals import make_host
from .reduce import reduce_value
from .rule import OpRule


def lower_sparse_xent(b, node, xs):
    logits, labels = xs
    if logits.type.rank != 2 or labels.type.rank != 1:
        raise ShapeError(f"logits must be 2-D and labels 1-D, got logits shape "
                         f"{list(logits.shape)} and labels shape {list(labels.shape)} "
                         f"(node '{node.name}', op {node.op})")
    rows, classes = logits.shape
    if not b.env.known_equal(rows, labels.shape[0]):
        b.ops.append(Op("assert_dim_eq", [], [], {
            "node": node.name, "op": node.op,
            "msg": "logits and labels must have the same first dimension, got logits shape "
                   "{0} and labels shape {1}", "lhs": [rows], "rhs": [labels.shape[0]],
            "lhs_shape": list(logits.shape), "rhs_shape": list(labels.shape)}))
    # rows > 0 needs classes > 0: ifzero(rows, 1, min(classes, 1)) == 1
    some = dim_ifzero(rows, "1", dim_min(classes, "1"))
    if some != "1":
        b.ops.append(Op("assert_dim_eq", [], [], {
            "node": node.name, "op": node.op,
            "msg": "Must have at least one class, but got logits shape {0}",
            "lhs": [some], "rhs": ["1"], "lhs_shape": list(logits.shape), "rhs_shape": []}))
    checked = b.emit("label_check", [labels], labels.dtype, labels.shape, classes=classes,
                     node=node.name, op=node.op)
    mx = reduce_value(b, logits, [1], "max_ignore_nan", False)
    m = b.emit("broadcast_in_dim", [mx], mx.dtype, logits.shape, broadcast_dimensions=[0])
    z = b.elementwise("subtract", logits, m)
    e = b.elementwise("exponential", z)
    s = reduce_value(b, e, [1], "sum", False)
    s_b = b.emit("broadcast_in_dim", [s], s.dtype, logits.shape, broadcast_dimensions=[0])
    label = b.reshape_to(b.convert(checked, dtypes.I64), (rows,))  # rows == labels' (checked)
    # z[label] = logits[b * classes + label] - max: a gather, not another pass
    flat = b.emit("reshape", [logits], logits.dtype, (dim_mul(rows, classes),))
    row = b.emit("iota", [], dtypes.I64, (rows,), dimension=0)
    stride = b.broadcast_to(make_host(b, [classes], dtypes.I64, scalar=True), (rows,))
    at = b.elementwise("add", b.elementwise("multiply", row, stride), label)
    picked = b.elementwise("subtract", b.emit("gather", [flat, at], logits.dtype, (rows,), axis=0),
                           mx)
    loss = b.elementwise("subtract", b.elementwise("log", s), picked)
    col = b.emit("iota", [], dtypes.I64, logits.shape, dimension=1)
    lab = b.emit("broadcast_in_dim", [label], dtypes.I64, logits.shape, broadcast_dimensions=[0])
    hot = b.elementwise("compare", col, lab, direction="EQ")
    zero = b.scalar_like(0, logits)
    onehot = b.elementwise("select", hot, b.scalar_like(1, logits), zero, dtype=logits.dtype)
    backprop = b.elementwise("subtract", b.elementwise("divide", e, s_b), onehot)
    return [loss, backprop]


RULES = [
    OpRule("SparseSoftmaxCrossEntropyWithLogits", lower_sparse_xent,
           {"T": FLOATS, "Tlabels": INTS}, num_outputs=2,
           shape_rule=lambda env, shapes, attrs: [("?",), ("?", "?")], fusion="library"),
]
