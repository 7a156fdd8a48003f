"""BiasAddGrad: the bias gradient of BiasAdd, a Sum of the incoming gradient
over every dim but the channel dim (the last for NHWC, dim 1 for NCHW).  In
a training graph it sits between the dense/conv gradients, so running it in
TF split the backward pass into separate clusters."""
from __future__ import annotations

from ..dtypes import NUMERIC
from ..errors import Unsupported
from .reduce import reduce_value
from .rule import OpRule


def lower_bias_add_grad(b, node, xs):
    (g,) = xs
    rank = g.type.rank
    if rank < 2:  # TF's own error ("Input tensor must be at least 2D")
        raise Unsupported(f"node '{node.name}' ({node.op}): input must be at least 2-D")
    channel = 1 if node.attrs.get("data_format", "NHWC") == "NCHW" else rank - 1
    return [reduce_value(b, g, [d for d in range(rank) if d != channel], "sum", False)]


def _shape(env, shapes, attrs):
    return [("?",)]


RULES = [
    OpRule("BiasAddGrad", lower_bias_add_grad, {"T": NUMERIC}, shape_rule=_shape,
           attr_values={"data_format": ("NHWC", "NCHW")}, fusion="reduction"),
]
