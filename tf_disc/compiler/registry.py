"""The op registry: the one explicit table TF op name -> OpRule, joined from
the op-family modules.  It is also the clustering allow-list
(support_table(), the DiscSetSupportTable JSON of disc_bridge.h)."""
from __future__ import annotations

from .errors import Unsupported
from .ops import (binary, bucketize, gather_nd, grads, matmul, misc, nn_conv, nn_norm, quantize,
                  nn_conv_grad, reduce, select, shape_ops, unary)
from .ops import (band_part, bias_grad, broadcast_grad, dynamic_stitch, half, permutation, segment,
                  sparse_xent, split_reverse, strided_slice, topk, unsorted_segment)
from .ops import conditional, control_flow, tensor_list
from .ops.rule import OpRule

FAMILIES = (unary, binary, select, misc, matmul, shape_ops, reduce, grads, bucketize, gather_nd,
            quantize, nn_conv, nn_conv_grad, nn_norm, band_part, segment, broadcast_grad,
            dynamic_stitch, bias_grad, permutation, unsorted_segment, sparse_xent, split_reverse,
            strided_slice, topk, control_flow, conditional, tensor_list)


def _build() -> dict[str, OpRule]:
    table: dict[str, OpRule] = {}
    for fam in FAMILIES:
        for rule in fam.RULES:
            if rule.name in table:
                raise AssertionError(f"TF op {rule.name} registered twice")
            table[rule.name] = half.widen(rule)
    return table


REGISTRY: dict[str, OpRule] = _build()
# The TF ops whose lowering fast_math="bf16" may change (passes/fast_math.py):
# those that may lower to a `dot` (ops/matmul.py is the one family that
# emits it) and the forward convolutions (a `window` of kind "conv").
# Exported as each op's "fast_math" in support_table(): the rewrite marks
# clusters holding a float one (DiscLaunch's fast_math_changes attr), which
# DiscLaunch and the converter (python/_aot.py) key with the option.
FAST_MATH_OPS = frozenset([rule.name for rule in matmul.RULES] + ["Conv2D", "_FusedConv2D"])


def lookup(op: str) -> OpRule:
    try:
        return REGISTRY[op]
    except KeyError:
        raise Unsupported(f"unsupported TF op {op}") from None


def support_table() -> dict:
    """{"ops": {name: {"type_attrs", "attr_values", "const_inputs", "value_inputs",
    "fast_math"}}}."""
    ops = {}
    for name, rule in sorted(REGISTRY.items()):
        ops[name] = {
            "type_attrs": {a: [d.tf_enum for d in ts] for a, ts in rule.type_attrs.items()},
            "attr_values": {a: list(vs) for a, vs in rule.attr_values.items()},
            "const_inputs": list(rule.const_inputs),
            "value_inputs": list(rule.value_inputs),
            "fast_math": name in FAST_MATH_OPS,
        }
    return {"ops": ops}
