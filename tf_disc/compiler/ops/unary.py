"""Elementwise unary TF ops: each maps to one IR op of the same dtype."""
from __future__ import annotations

from ..dtypes import ALL, BOOL, FLOATS, NUMERIC
from .rule import OpRule, bool_dtype, same_dtype


def _direct(ir_op: str, **attr_map):
    """Lowering to one IR op; attr_map: IR attr -> (TF attr, default)."""
    def lower(b, node, xs):
        attrs = {k: node.attrs.get(tf, d) for k, (tf, d) in attr_map.items()}
        return [b.elementwise(ir_op, xs[0], **attrs)]
    lower.__name__ = f"lower_{ir_op}"
    return lower


def _unary(tf_name: str, ir_op: str, types=FLOATS, dtype_rule=same_dtype, **attr_map):
    return OpRule(tf_name, _direct(ir_op, **attr_map), {"T": types} if types else {},
                  dtype_rule=dtype_rule)


RULES = [
    _unary("Abs", "abs", NUMERIC),
    _unary("Neg", "negate", NUMERIC),
    _unary("Exp", "exponential"),
    _unary("Expm1", "exponential_minus_one"),
    _unary("Log", "log"),
    _unary("Log1p", "log_plus_one"),
    _unary("Sqrt", "sqrt"),
    _unary("Rsqrt", "rsqrt"),
    _unary("Square", "square", NUMERIC),
    _unary("Reciprocal", "reciprocal"),
    _unary("Inv", "reciprocal"),
    _unary("Sin", "sine"),
    _unary("Cos", "cosine"),
    _unary("Tan", "tan"),
    _unary("Tanh", "tanh"),
    _unary("Sigmoid", "logistic"),
    _unary("Relu", "relu", NUMERIC),
    _unary("Relu6", "relu6", NUMERIC),
    _unary("Elu", "elu"),
    _unary("Selu", "selu"),
    _unary("LeakyRelu", "leaky_relu", FLOATS, alpha=("alpha", 0.2)),
    _unary("Softplus", "softplus"),
    _unary("Erf", "erf"),
    _unary("Erfc", "erfc"),
    _unary("Floor", "floor"),
    _unary("Ceil", "ceil"),
    # Integer Round is left to TF: TF 2.21's CPU kernel returns zeros for it.
    _unary("Round", "round_nearest_even"),
    _unary("Rint", "round_nearest_even"),
    _unary("Sign", "sign", NUMERIC),
    _unary("IsNan", "is_nan", dtype_rule=bool_dtype),
    _unary("IsInf", "is_inf", dtype_rule=bool_dtype),
    _unary("IsFinite", "is_finite", dtype_rule=bool_dtype),
    _unary("LogicalNot", "not", None),
]
assert all(r.type_attrs.get("T", ALL) for r in RULES)
del BOOL
