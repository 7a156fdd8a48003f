"""The C++ element type of each IR dtype in generated CPU code (bfloat16 as
the prelude's disc_bf16: GCC 12 has no bf16 arithmetic)."""
from __future__ import annotations

from .. import dtypes
from ..dtypes import DType

_C_TYPES = {
    dtypes.F32: "float",
    dtypes.F64: "double",
    dtypes.I32: "int32_t",
    dtypes.I64: "int64_t",
    dtypes.BOOL: "bool",
    dtypes.QINT8: "int8_t",
    dtypes.F16: "_Float16",
    dtypes.BF16: "disc_bf16",
}


def c_type(dtype: DType) -> str:
    try:
        return _C_TYPES[dtype]
    except KeyError:
        raise NotImplementedError(f"no C++ element type for {dtype.name}") from None
