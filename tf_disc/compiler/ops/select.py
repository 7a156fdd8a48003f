"""Select (v1 rules) and SelectV2 (3-way broadcasting)."""
from __future__ import annotations

from ..dtypes import ALL
from ..errors import template_text
from .rule import OpRule, broadcast_shape


def _dtype(dts: list, attrs: dict) -> list:
    return [dts[1]]


def lower_select(b, node, xs):
    """v1: cond is a scalar, a vector over dim 0 of then/else, or the same
    shape as then/else; then and else must have identical shapes."""
    cond, x, y = xs
    shape = b.assert_same_shape(
        x, y, node.name, node.op,
        "'then' and 'else' must have the same size.  but received: {0} vs. {1}")
    x, y = b.reshape_to(x, shape), b.reshape_to(y, shape)
    if cond.type.rank == 0:
        cond = b.broadcast_to(cond, shape)
    elif cond.type.rank == 1 and len(shape) > 1:
        b.assert_dim_eq(x, 0, cond, 0, node.name, node.op,
                        "Number of batches of 'then' must match size of 'cond', "
                        "but saw: {0} vs. {1}")
        cond = b.reshape_to(cond, (shape[0],))
        cond = b.emit("broadcast_in_dim", [cond], cond.dtype, shape,
                      broadcast_dimensions=[0])
    else:
        cshape = b.assert_same_shape(
            cond, x, node.name, node.op,
            "Inputs to operation " + template_text(node.name)
            + " of type Select must have the same size and shape.  "
            "Input 0: {0} != input 1: {1}")
        cond, x, y = (b.reshape_to(v, cshape) for v in (cond, x, y))
    return [b.elementwise("select", cond, x, y, dtype=x.dtype)]


def lower_select_v2(b, node, xs):
    cond, x, y = b.broadcast_all(list(xs), node.name, node.op)
    return [b.elementwise("select", cond, x, y, dtype=x.dtype)]


def _select_shape(env, shapes, attrs):
    return [shapes[1]]


RULES = [
    OpRule("Select", lower_select, {"T": ALL}, dtype_rule=_dtype, shape_rule=_select_shape),
    OpRule("SelectV2", lower_select_v2, {"T": ALL}, dtype_rule=_dtype,
           shape_rule=broadcast_shape),
]
