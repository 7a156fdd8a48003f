"""The expression table shared by every target: IR op -> C++ expression (one
tiny function per op).  Each function gets the operand expressions, the Op
and the C++ result type.  Math that needs more than one expression is a
call to a disc_* helper that each target's prelude defines with its own
math library (runtime/cpu/prelude/disc_math.h, runtime/cuda/prelude/); a
target replaces single entries (codegen/cuda/ops.py), never the table.
Ops that can fail use the kernel-local `err`.
"""
from __future__ import annotations

from typing import Callable

from ..ir.core import Op
from .c_types import c_type

Emit = Callable[[list, Op, str], str]

_CMP = {"EQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">", "GE": ">="}


def _call(fn: str) -> Emit:
    return lambda a, op, t: f"{fn}({', '.join(a)})"


def _std(fn: str) -> Emit:
    return lambda a, op, t: f"{t}(std::{fn}({', '.join(a)}))"


def _infix(sym: str) -> Emit:
    return lambda a, op, t: f"{t}({a[0]} {sym} {a[1]})"


def _float_lit(x: float, t: str) -> str:
    return f"{t}({float(x).hex()})" if x == x and abs(x) != float("inf") else \
        f"{t}({'NAN' if x != x else ('INFINITY' if x > 0 else '-INFINITY')})"


def uses_fast_exp(op: Op, t: str) -> bool:
    """Softmax's FMA exp (attr fast, passes/stitch.py): float only; Eigen's
    exp stays for tf.exp and f64."""
    return op.name == "exponential" and bool(op.attrs.get("fast")) and t == "float"


def _exp_function(op: Op, t: str) -> str:
    """fast may name a variant for arguments known never positive
    (codegen/cpu/stitch.py): disc_exp_fast_<variant>."""
    if not uses_fast_exp(op, t):
        return "disc_exp"
    fast = op.attrs["fast"]
    return f"disc_exp_fast_{fast}" if isinstance(fast, str) else "disc_exp_fast"


def _product_power(a: list, t: str) -> int:
    """2 or 3 when the exponent is that literal (x**2, tanh-GELU's cube),
    computed as a product: vectorizable, within an ulp of pow; else 0."""
    return next((n for n in (2, 3) if a[1] == _float_lit(float(n), t)), 0)


def _power(a: list, t: str) -> str:
    n = _product_power(a, t)
    if n:
        return f"{t}({' * '.join([a[0]] * n)})"
    return f"{t}(std::pow({a[0]}, {a[1]}))"


EXPR: dict[str, Emit] = {
    "abs": _call("disc_abs"),
    "negate": lambda a, op, t: f"{t}(-{a[0]})",
    "exponential": lambda a, op, t: f"{_exp_function(op, t)}({a[0]})",
    "exponential_minus_one": _call("disc_expm1"),
    "log": _call("disc_log"),
    "log_plus_one": _call("disc_log1p"),
    "sqrt": _std("sqrt"),
    "rsqrt": lambda a, op, t: f"{t}({t}(1) / std::sqrt({a[0]}))",
    "square": lambda a, op, t: f"{t}({a[0]} * {a[0]})",
    "reciprocal": lambda a, op, t: f"{t}({t}(1) / {a[0]})",
    "sine": _std("sin"),
    "cosine": _std("cos"),
    "tan": _std("tan"),
    "tanh": _call("disc_tanh"),
    "logistic": _call("disc_logistic"),
    "relu": _call("disc_relu"),
    "relu6": _call("disc_relu6"),
    "elu": _call("disc_elu"),
    "selu": _call("disc_selu"),
    "leaky_relu": lambda a, op, t: (
        f"({a[0]} > {t}(0) ? {a[0]} : {t}({a[0]} * {_float_lit(op.attrs['alpha'], t)}))"),
    "softplus": _call("disc_softplus"),
    # Eigen's rational erf/erfc for both types (double erf is NaN at +-inf).
    "erf": _call("disc_erf"),
    "erfc": _call("disc_erfc"),
    "floor": _std("floor"),
    "ceil": _std("ceil"),
    "round_nearest_even": _std("nearbyint"),
    "sign": _call("disc_sign"),
    "not": lambda a, op, t: f"(!{a[0]})",
    "copy": lambda a, op, t: a[0],
    "is_nan": lambda a, op, t: f"({a[0]} != {a[0]})",
    "is_inf": lambda a, op, t: f"bool(std::isinf({a[0]}))",
    "is_finite": lambda a, op, t: f"bool(std::isfinite({a[0]}))",
    "add": _infix("+"),
    "subtract": _infix("-"),
    "multiply": _infix("*"),
    "divide": _infix("/"),
    "div_no_nan": lambda a, op, t: f"({a[1]} == {t}(0) ? {t}(0) : {t}({a[0]} / {a[1]}))",
    "floor_div_float": lambda a, op, t: f"{t}(std::floor({a[0]} / {a[1]}))",
    "floor_mod_float": _call("disc_floor_mod_float"),
    "maximum": _call("disc_max"),
    "minimum": _call("disc_min"),
    "power": lambda a, op, t: _power(a, t),
    "squared_difference": lambda a, op, t: (
        f"{t}(({a[0]} - {a[1]}) * ({a[0]} - {a[1]}))"),
    "atan2": _std("atan2"),
    "and": lambda a, op, t: f"({a[0]} && {a[1]})",
    "or": lambda a, op, t: f"({a[0]} || {a[1]})",
    "div_int": lambda a, op, t: f"disc_div_int<{t}>({a[0]}, {a[1]}, err)",
    "floor_div_int": lambda a, op, t: f"disc_floor_div_int<{t}>({a[0]}, {a[1]}, err)",
    "floor_mod_int": lambda a, op, t: f"disc_floor_mod_int<{t}>({a[0]}, {a[1]}, err)",
    "power_int": lambda a, op, t: f"disc_power_int<{t}>({a[0]}, {a[1]}, err)",
    "compare": lambda a, op, t: f"({a[0]} {_CMP[op.attrs['direction']]} {a[1]})",
    "select": lambda a, op, t: f"({a[0]} ? {a[1]} : {a[2]})",
    "convert": lambda a, op, t: (
        f"disc_convert<{t}, {c_type(op.operands[0].dtype)}>({a[0]})"),
}


def emit(op: Op, args: list[str], ctype: str, table: dict[str, Emit] | None = None) -> str:
    """The C++ expression of op on operand expressions args (table: a
    target's variant of EXPR)."""
    try:
        fn = (EXPR if table is None else table)[op.name]
    except KeyError:
        raise NotImplementedError(f"no C++ lowering for IR op {op.name}") from None
    return fn(args, op, ctype)


def literal(value, dtype) -> str:
    """A C++ literal of one element."""
    if dtype.is_bool:
        return "true" if value else "false"
    if dtype.is_int:
        v = int(value)
        if dtype.name == "i64":
            return "(-9223372036854775807LL - 1)" if v == -2**63 else f"int64_t({v}LL)"
        return "(-2147483647 - 1)" if v == -2**31 else f"int32_t({v})"
    return _float_lit(float(value), c_type(dtype))
