"""float16 and bfloat16 for every rule that takes float32.

TF's CPU kernels compute Eigen::half/bfloat16 in float32 and round each op's
result (reductions and GEMMs accumulate in float32), so each TF op on half
operands lowers as: convert the half operands to float32, run the op's own
float32 lowering, round the results back to the half type.  Between two
fused ops the round trip stays, which keeps TF's per-op rounding."""
from __future__ import annotations

import dataclasses

import math

from ..dtypes import F16, F32, HALF
from .rule import OpRule

_HALF_ENUMS = {d.tf_enum for d in HALF}
# Const: a constant of the half type itself (ops/misc.py); Range: host
# arithmetic on its scalars.
EXCLUDED = frozenset({"Const", "Range"})


def _f32_attrs(rule: OpRule, attrs: dict) -> dict:
    """The node's attrs with half type attrs read as float32."""
    out = dict(attrs)
    for a in rule.type_attrs:
        v = out.get(a)
        if isinstance(v, list):
            out[a] = [F32.tf_enum if t in _HALF_ENUMS else t for t in v]
        elif v in _HALF_ENUMS:
            out[a] = F32.tf_enum
    return out


def _softplus_threshold(b, x, out, dtype):
    """TF's Softplus returns x itself above -log(eps)-2 of *its* type
    (softplus_op.h), a much lower cut for half types than for float32."""
    eps = 2.0 ** -10 if dtype == F16 else 2.0 ** -7
    big = b.elementwise("compare", x, b.scalar_like(-(math.log(eps) + 2.0), x), direction="GT")
    return b.elementwise("select", big, x, out, dtype=out.dtype)


# TF kernels whose formulas depend on the half type itself.
_TYPE_FIXUPS = {"Softplus": _softplus_threshold}


def _via_f32(rule: OpRule):
    def lower(b, node, xs):
        f32_attrs = _f32_attrs(rule, node.attrs)
        if f32_attrs == node.attrs and not any(x.dtype in HALF for x in xs):
            return rule.lower(b, node, xs)
        want = rule.dtype_rule([x.dtype for x in xs], node.attrs)
        xs32 = [b.convert(x, F32) if x.dtype in HALF else x for x in xs]
        outs = rule.lower(b, dataclasses.replace(node, attrs=f32_attrs), xs32)
        if rule.name in _TYPE_FIXUPS and xs[0].dtype in HALF:
            outs = [_TYPE_FIXUPS[rule.name](b, xs32[0], outs[0], xs[0].dtype)]
        return [b.convert(o, w) if w in HALF and o.dtype != w else o
                for o, w in zip(outs, list(want) + [None] * (len(outs) - len(want)))]
    lower.__name__ = f"{rule.lower.__name__}_via_f32"
    return lower


def widen(rule: OpRule) -> OpRule:
    """rule, also accepting F16/BF16 wherever it accepts float32."""
    if rule.name in EXCLUDED or not any(F32 in ts for ts in rule.type_attrs.values()):
        return rule
    type_attrs = {a: tuple(ts) + HALF if F32 in ts else ts for a, ts in rule.type_attrs.items()}
    return dataclasses.replace(rule, type_attrs=type_attrs, lower=_via_f32(rule))
