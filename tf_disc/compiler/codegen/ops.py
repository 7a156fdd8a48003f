"""The op table: IR op -> C++ expression (one tiny function per op), and a
measured per-element cost (eighths of a cycle) used for the parallel_for grain.

Each function gets the operand expressions, the Op and the C++ result type.
Ops that can fail use the kernel-local `err` (see runtime/cpu/disc_prelude.h).
"""
from __future__ import annotations

from typing import Callable

from ..ir.core import Op

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


def _power(a: list, t: str) -> str:
    """x**2 and x**3 (tanh-GELU's cube) as products: vectorizable, within an ulp of pow."""
    if a[1] == _float_lit(2.0, t):
        return f"{t}({a[0]} * {a[0]})"
    if a[1] == _float_lit(3.0, t):
        return f"{t}({a[0]} * {a[0]} * {a[0]})"
    return f"{t}(std::pow({a[0]}, {a[1]}))"


EXPR: dict[str, Emit] = {
    "abs": _call("disc_abs"),
    "negate": lambda a, op, t: f"{t}(-{a[0]})",
    # fast: Softmax's FMA exp (float only; Eigen's exp stays for tf.exp and f64)
    "exponential": lambda a, op, t: (
        f"{'disc_exp_fast' if op.attrs.get('fast') and t == 'float' else 'disc_exp'}({a[0]})"),
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
        f"disc_convert<{t}, {op.operands[0].dtype.ctype}>({a[0]})"),
}

# Per-element cost in UNITS_PER_CYCLE-ths of a cycle, measured on one
# thread (AVX-512, 2.6 GHz, data in L2; slope of (x+0.5)*1.5 with the op
# added, base kernel subtracted).  Cheap arithmetic is one 16-lane
# instruction, 1/16 cycle: 0 here; the kernel adds the memory traffic.
UNITS_PER_CYCLE = 8
_COST = {
    # vectorized prelude math (Eigen's algorithms), cycles: tanh 0.1,
    # logistic 0.3, erf 0.2, exp 0.3-0.6, log 0.5, elu/selu 0.5, log1p 0.85,
    # erfc 1.0 (gelu's erf form; 1.55 before the one-branch FMA erfc took
    # its loop from 1.27 to 0.82 ns per element)
    "tanh": 1, "logistic": 2, "erf": 2, "exponential": 4, "log": 4, "elu": 4,
    "selu": 4, "log_plus_one": 7, "erfc": 8,
    # expm1 2.1, softplus 2.4 (2.5x and 2.8x log1p: exp, log and a division
    # each; vectorized since disc_frexp's special case is one compare, 44
    # and 90 before)
    "exponential_minus_one": 17, "softplus": 19,
    # scalar libm: sin 17, cos 29, tan 28, floor_mod 32, pow 8, atan2 84
    "sine": 136, "cosine": 232, "tan": 224, "floor_mod_float": 256, "power": 64,
    "atan2": 672,
    # integer division with TF's checks: a scalar loop, 22 cycles
    "div_int": 176, "floor_div_int": 176, "floor_mod_int": 176, "power_int": 176,
    # divide/sqrt: 0.05-0.15 cycles next to the memory traffic
    "divide": 1, "sqrt": 1, "rsqrt": 1, "reciprocal": 1, "div_no_nan": 1,
    "floor_div_float": 1,
}


def cost(name: str, expr: str = "") -> int:
    """Measured cost of one element of op `name` (1/UNITS_PER_CYCLE cycles);
    given its C++ `expr`, a power lowered to products (_power) is cheap."""
    if name == "power" and expr and "std::pow" not in expr:
        return 0
    return _COST.get(name, 0)


def emit(op: Op, args: list[str], ctype: str) -> str:
    try:
        fn = EXPR[op.name]
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
    return _float_lit(float(value), dtype.ctype)
