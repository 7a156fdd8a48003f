"""FusedBatchNorm / V2 / V3 in inference mode (is_training=False): a
per-channel scale and shift (ops/nn_conv.batch_norm_inference) that fuses
with the producer's consumers; the statistics outputs are TF's: the given
mean and variance, and V3's empty reserve_space_3."""
from __future__ import annotations

from ..dtypes import F32
from ..errors import Unsupported
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
        outs = [y, mean, var, mean, var]
        if num_outputs == 6:
            outs.append(b.constant([], F32, (0,)))
        return outs
    return lower


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
