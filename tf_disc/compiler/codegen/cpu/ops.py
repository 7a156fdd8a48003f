"""The CPU's use of the shared expression table (codegen/expressions.py): a
measured per-element cost (eighths of a cycle) used for the parallel_for grain."""
from __future__ import annotations

from ...ir.core import Op
from ..expressions import EXPR, _product_power, emit, literal, uses_fast_exp  # noqa: F401

# Per-element cost in UNITS_PER_CYCLE-ths of a cycle, measured on one
# thread (AVX-512, 2.6 GHz, data in L2; slope of (x+0.5)*1.5 with the op
# added, base kernel subtracted).  Cheap arithmetic is one 16-lane
# instruction, 1/16 cycle: 0 here; the kernel adds the memory traffic.
UNITS_PER_CYCLE = 8
_COST = {
    # vectorized prelude math (Eigen's algorithms)
    "tanh": 1, "logistic": 2, "erf": 2, "exponential": 4, "log": 4, "elu": 4,
    "selu": 4, "log_plus_one": 7, "erfc": 8,
    # exp, log and a division each
    "exponential_minus_one": 17, "softplus": 19,
    # scalar libm calls
    "sine": 136, "cosine": 232, "tan": 224, "floor_mod_float": 256, "power": 64,
    "atan2": 672,
    # integer division with TF's checks: a scalar loop
    "div_int": 176, "floor_div_int": 176, "floor_mod_int": 176, "power_int": 176,
    # divide/sqrt: small next to the memory traffic
    "divide": 1, "sqrt": 1, "rsqrt": 1, "reciprocal": 1, "div_no_nan": 1,
    "floor_div_float": 1,
}


def cost(name: str) -> int:
    """Measured cost of one element of op `name` (1/UNITS_PER_CYCLE cycles)."""
    return _COST.get(name, 0)


def emitted_cost(op: Op, args: list[str], ctype: str) -> int:
    """cost() of op as emit() writes it for these operands: a power
    computed as a product (_power) is cheap."""
    if op.name == "power" and _product_power(args, ctype):
        return 0
    return cost(op.name)


