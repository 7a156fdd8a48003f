"""The CUDA view of the shared expression table (codegen/expressions.py):
the same entries, whose disc_* helpers runtime/cuda/prelude/disc_cuda_prelude.cuh
defines on CUDA's math library; exp has no fast variants (expf is the
fast one).  An op on 16-bit floats is computed in float and rounded back
(TF's Eigen kernels do the same), so the table only ever sees float, double
and integer operands.  Plus the element types and reductions device kernels
support."""
from __future__ import annotations

from ... import dtypes
from ...dtypes import DType
from ...ir.core import Op
from ..c_types import c_type
from ..expressions import EXPR, emit, literal

# 16-bit floats: runtime/cuda/prelude/disc_cuda_types.h's names (CUDA's
# __half and __nv_bfloat16 in device code, their storage on the host).
_TYPES = {dtypes.F16: "disc_cuda_f16", dtypes.BF16: "disc_cuda_bf16"}


def cuda_type(dtype: DType) -> str:
    """The C++ element type of dtype in generated CUDA code (both units)."""
    return _TYPES.get(dtype) or c_type(dtype)


def compute_type(dtype: DType) -> str:
    """The type values of dtype are computed (and reduced) in."""
    return "float" if dtype in dtypes.HALF else c_type(dtype)


CUDA_EXPR = {**EXPR, "exponential": lambda a, op, t: f"disc_exp({a[0]})",
             "convert": lambda a, op, t: (
                 f"disc_convert<{t}, {compute_type(op.operands[0].dtype)}>({a[0]})")}

# Ops that set a kernel error code on CPU (integer division by zero, ...):
# a device kernel cannot report one without a sync, and TF's GPU kernels
# leave those cases undefined, so clusters with them stay in TF.
_HOST_ERRORS = ("div_int", "floor_div_int", "floor_mod_int", "power_int")

# Element types device buffers may have (int32 tensors live in host memory
# on GPUs, disc_abi.h).
DEVICE_DTYPES = (dtypes.F32, dtypes.F64, dtypes.I64, dtypes.BOOL, dtypes.F16, dtypes.BF16)
# Types of values computed inside a kernel (an iota or a compare may be int32).
COMPUTED_DTYPES = DEVICE_DTYPES + (dtypes.I32,)

# Row reduction kinds and the prelude's combine functor of each.
REDUCE_OPS = {"sum": "disc_sum", "prod": "disc_prod", "max": "disc_maxop",
              "min": "disc_minop", "max_ignore_nan": "disc_max_ignore_nan"}
REDUCE_DTYPES = (dtypes.F32, dtypes.F64, dtypes.I64, dtypes.F16, dtypes.BF16)
# Element types of rt->gemm on CUDA (cuBLASLt).
GEMM_DTYPES = (dtypes.F32, dtypes.F16, dtypes.BF16)


def elementwise_supported(op: Op) -> bool:
    return op.name in CUDA_EXPR and op.name not in _HOST_ERRORS


def emit_cuda(op: Op, args: list[str], ctype: str) -> str:
    """The CUDA expression of op (result type ctype) on operand expressions
    args; 16-bit operands are read as float, a 16-bit result rounded from
    the float one."""
    args = [f"float({a})" if x.dtype in dtypes.HALF else a for a, x in zip(args, op.operands)]
    if op.result.dtype in dtypes.HALF:
        return f"{ctype}({emit(op, args, 'float', CUDA_EXPR)})"
    return emit(op, args, ctype, CUDA_EXPR)


def cuda_literal(value, dtype: DType) -> str:
    """A literal of one element of dtype."""
    if dtype in dtypes.HALF:
        return f"{cuda_type(dtype)}({literal(value, dtypes.F32)})"
    return literal(value, dtype)


def reduce_init(kind: str, t: str) -> str:
    """The identity of a reduction kind in type t (CUDA's limits macros)."""
    if kind in ("max", "max_ignore_nan", "min"):
        sign = "-" if kind != "min" else ""
        if t in ("float", "double"):
            return f"{t}({sign}INFINITY)"
        return "int64_t(-9223372036854775807LL - 1)" if kind != "min" else \
            "int64_t(9223372036854775807LL)"
    return f"{t}({1 if kind == 'prod' else 0})"
