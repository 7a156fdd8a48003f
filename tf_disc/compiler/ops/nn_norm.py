"""FusedBatchNorm / V2 / V3 in inference mode (is_training=False): a
per-channel scale and shift (ops/nn_conv.batch_norm_inference) that fuses
with the producer's consumers; the statistics outputs are TF's: the given
mean and variance, and V3's empty reserve_space_3.  An empty x gives TF's
NaN batch statistics and zero reserve spaces (its kernel's early return),
picked at run time when the element count is symbolic."""
from __future__ import annotations

from ..dtypes import F32, I64
from ..errors import Unsupported
from ..shapes.symbolic import dim_mul, is_static
from .hostvals import make_host
from .nn_conv import batch_norm_inference
from .rule import OpRule


def _lower(num_outputs: int):
    def lower(b, node, xs):
        x, scale, offset, mean, var = xs
        if x.type.rank != 4:
            raise Unsupported(f"{node.op} node '{node.name}': input must be 4-D")
        if float(node.attrs.get("exponential_avg_factor", 1.0)) != 1.0:
            raise Unsupported(f"{node.op} node '{node.name}': exponential_avg_factor")
        y = batch_norm_inference(b, node, x, scale, offset, mean, var,
                                 float(node.attrs.get("epsilon", 1e-4)))
        outs = [y] + _statistics(b, x, mean, var)
        if num_outputs == 6:
            outs.append(b.constant([], F32, (0,)))
        return outs
    return lower


def _statistics(b, x, mean, var) -> list:
    """[batch_mean, batch_var, reserve_1, reserve_2]: the given mean and
    variance, or NaN, NaN, 0, 0 when x has no elements."""
    numel = dim_mul(*x.shape)
    if is_static(numel) and int(numel) > 0:
        return [mean, var, mean, var]
    empty = b.elementwise("compare", make_host(b, [numel], I64, scalar=True),
                          b.constant(0, I64), direction="EQ")

    def pick(value, v):
        return b.elementwise("select", b.broadcast_to(empty, v.shape), b.scalar_like(value, v),
                             v, dtype=v.dtype)
    return [pick(float("nan"), mean), pick(float("nan"), var), pick(0.0, mean), pick(0.0, var)]


def _dtypes(n: int):
    return lambda dts, attrs: [dts[0]] + [dts[1]] * (n - 1)


def _shapes(n: int):
    return lambda env, shapes, attrs: [shapes[0]] + [shapes[3]] * 4 + [("0",)] * (n - 5)


def _rule(name: str, n: int, type_attrs: dict) -> OpRule:
    return OpRule(name, _lower(n), type_attrs, dtype_rule=_dtypes(n), shape_rule=_shapes(n),
                  attr_values={"is_training": (False,), "data_format": ("NHWC",)},
                  num_outputs=n)


RULES = [
    _rule("FusedBatchNorm", 5, {"T": (F32,)}),
    _rule("FusedBatchNormV2", 5, {"T": (F32,), "U": (F32,)}),
    _rule("FusedBatchNormV3", 6, {"T": (F32,), "U": (F32,)}),
]
