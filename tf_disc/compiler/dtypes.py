"""The one table of element types: TF DataType enum <-> IR name <-> numpy
dtype (each target maps them to its own types, e.g. codegen/c_types.py).
QINT8 is storage only: just QuantizeV2/Dequantize accept it, converting at
once.  F16/BF16 are storage types too: ops compute them in float32
(ops/half.py), so generated code only loads, stores and converts them."""
from __future__ import annotations

import dataclasses
import functools
import importlib

import numpy as np


@functools.lru_cache(maxsize=None)
def _numpy_type(spec: str) -> type:
    """numpy's or another module's scalar type named "module.attr"."""
    module, _, attr = spec.rpartition(".")
    return getattr(importlib.import_module(module), attr)


@dataclasses.dataclass(frozen=True)
class DType:
    name: str        # IR spelling (MLIR style)
    tf_enum: int     # tensorflow DataType value
    tf_name: str     # DT_* name without prefix, for messages
    # numpy scalar type as "module.attr", imported on first use: ml_dtypes
    # (bfloat16) takes about half a second to import, and the compile
    # worker starts without it unless a model has bf16 values.
    np_type: str

    @property
    def np(self) -> type:
        """The numpy scalar type."""
        return _numpy_type(self.np_type)

    @property
    def is_float(self) -> bool:
        return self.name.startswith("f") or self.name == "bf16"

    @property
    def is_int(self) -> bool:
        return self.name in ("i32", "i64")

    @property
    def is_bool(self) -> bool:
        return self.name == "i1"

    @property
    def itemsize(self) -> int:
        return np.dtype(self.np).itemsize


F32 = DType("f32", 1, "float", "numpy.float32")
F64 = DType("f64", 2, "double", "numpy.float64")
I32 = DType("i32", 3, "int32", "numpy.int32")
I64 = DType("i64", 9, "int64", "numpy.int64")
BOOL = DType("i1", 10, "bool", "numpy.bool_")
QINT8 = DType("qi8", 11, "qint8", "numpy.int8")
F16 = DType("f16", 19, "half", "numpy.float16")
BF16 = DType("bf16", 14, "bfloat16", "ml_dtypes.bfloat16")
HALF = (F16, BF16)

ALL = (F32, F64, I32, I64, BOOL)
FLOATS = (F32, F64)
INTS = (I32, I64)
NUMERIC = FLOATS + INTS
BY_NAME = {d.name: d for d in ALL + (QINT8,) + HALF}
BY_ENUM = {d.tf_enum: d for d in ALL + (QINT8,) + HALF}


def from_tf(enum: int) -> DType:
    """DType for a TF DataType enum; raises Unsupported for others."""
    from .errors import Unsupported
    try:
        return BY_ENUM[int(enum)]
    except KeyError:
        raise Unsupported(f"unsupported dtype enum {enum}") from None


def from_name(name: str) -> DType:
    return BY_NAME[name]
