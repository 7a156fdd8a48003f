"""The CUDA view of the shared expression table (codegen/expressions.py):
the same entries, whose disc_* helpers runtime/cuda/prelude/disc_cuda_prelude.cuh
defines on CUDA's math library; exp has no fast variants (expf is the
fast one).  Plus the element types and reductions device kernels support."""
from __future__ import annotations

from ... import dtypes
from ...dtypes import DType
from ...ir.core import Op
from ..c_types import c_type
from ..expressions import EXPR, emit

CUDA_EXPR = {**EXPR, "exponential": lambda a, op, t: f"disc_exp({a[0]})"}

# Ops that set a kernel error code on CPU (integer division by zero, ...):
# a device kernel cannot report one without a sync, and TF's GPU kernels
# leave those cases undefined, so clusters with them stay in TF.
_HOST_ERRORS = ("div_int", "floor_div_int", "floor_mod_int", "power_int")

# Element types device buffers may have (int32 tensors live in host memory
# on GPUs, disc_abi.h; 16-bit floats are not generated yet).
DEVICE_DTYPES = (dtypes.F32, dtypes.F64, dtypes.I64, dtypes.BOOL)
# Types of values computed inside a kernel (an iota or a compare may be int32).
COMPUTED_DTYPES = DEVICE_DTYPES + (dtypes.I32,)

# Row reduction kinds and the prelude's combine functor of each.
REDUCE_OPS = {"sum": "disc_sum", "prod": "disc_prod", "max": "disc_maxop",
              "min": "disc_minop", "max_ignore_nan": "disc_max_ignore_nan"}
REDUCE_DTYPES = (dtypes.F32, dtypes.F64, dtypes.I64)


def cuda_type(dtype: DType) -> str:
    """The CUDA C++ element type of dtype."""
    return c_type(dtype)


def elementwise_supported(op: Op) -> bool:
    return op.name in CUDA_EXPR and op.name not in _HOST_ERRORS


def emit_cuda(op: Op, args: list[str], ctype: str) -> str:
    """The CUDA expression of op on operand expressions args."""
    return emit(op, args, ctype, CUDA_EXPR)


def reduce_init(kind: str, t: str) -> str:
    """The identity of a reduction kind in type t (CUDA's limits macros)."""
    if kind in ("max", "max_ignore_nan", "min"):
        sign = "-" if kind != "min" else ""
        if t in ("float", "double"):
            return f"{t}({sign}INFINITY)"
        return "int64_t(-9223372036854775807LL - 1)" if kind != "min" else \
            "int64_t(9223372036854775807LL)"
    return f"{t}({1 if kind == 'prod' else 0})"
