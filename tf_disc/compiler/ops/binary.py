"""Binary TF ops with TF (numpy-style) broadcasting over dynamic dims."""
from __future__ import annotations

from ..dtypes import ALL, FLOATS, INTS, NUMERIC
from .hostvals import fold_binary
from .rule import OpRule, bool_dtype, broadcast_shape


def _binary(ir_float: str, ir_int: str | None = None, **attrs):
    """Broadcast both operands, then one IR op (int variant if given)."""
    def lower(b, node, xs):
        host = fold_binary(b, ir_int or ir_float, xs)  # shape arithmetic (hostvals.py)
        if host is not None:
            return [host]
        x, y = b.broadcast_all(list(xs), node.name, node.op)
        name = ir_int if (ir_int and not x.dtype.is_float) else ir_float
        if name == "compare":
            return [b.elementwise(name, x, y, **attrs)]
        return [b.elementwise(name, x, y, **attrs)]
    lower.__name__ = f"lower_{ir_float}"
    return lower


def _rule(tf_name: str, lower, types=NUMERIC, **kw):
    return OpRule(tf_name, lower, {"T": types} if types else {},
                  shape_rule=broadcast_shape, **kw)


def _cmp(tf_name: str, direction: str, types=NUMERIC, **kw):
    return _rule(tf_name, _binary("compare", direction=direction), types,
                 dtype_rule=bool_dtype, **kw)


RULES = [
    _rule("Add", _binary("add")),
    _rule("AddV2", _binary("add")),
    _rule("Sub", _binary("subtract")),
    _rule("Mul", _binary("multiply")),
    _rule("Div", _binary("divide", "div_int")),
    _rule("RealDiv", _binary("divide"), FLOATS),
    _rule("DivNoNan", _binary("div_no_nan"), FLOATS),
    _rule("FloorDiv", _binary("floor_div_float", "floor_div_int")),
    _rule("FloorMod", _binary("floor_mod_float", "floor_mod_int")),
    _rule("TruncateDiv", _binary("div_int"), INTS),
    _rule("Maximum", _binary("maximum")),
    _rule("Minimum", _binary("minimum")),
    _rule("Pow", _binary("power", "power_int")),
    _rule("SquaredDifference", _binary("squared_difference")),
    _rule("Atan2", _binary("atan2"), FLOATS),
    _cmp("Equal", "EQ", ALL, attr_values={"incomplete_shape_error": (True,)}),
    _cmp("NotEqual", "NE", ALL, attr_values={"incomplete_shape_error": (True,)}),
    _cmp("Less", "LT"),
    _cmp("LessEqual", "LE"),
    _cmp("Greater", "GT"),
    _cmp("GreaterEqual", "GE"),
    _rule("LogicalAnd", _binary("and"), None),
    _rule("LogicalOr", _binary("or"), None),
]
