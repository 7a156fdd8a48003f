"""fast_math="bf16" (README "Fast math"): marks float32 dots and forward
convolutions (windows of kind "conv") with precision "bf16", so that
codegen/gemm.py and codegen/conv.py ask the runtime for its bf16 kernels.
Run after the pipeline on a function and its general version (speculate.py);
with the option off the function comes back unchanged, so the generated C++,
and with it the disk-cache key, differs exactly when the option does."""
from __future__ import annotations

import dataclasses

from ..dtypes import F32
from ..ir.core import Func, Op

MODES = ("", "bf16")


def _changes(op: Op) -> bool:
    """Whether fast math changes op (registry.FAST_MATH_OPS lower to these)."""
    if op.name not in ("dot", "window") or op.result.dtype != F32:
        return False
    return op.name == "dot" or op.attrs.get("kind") == "conv"


def _mark(op: Op, mode: str) -> Op:
    if not _changes(op):
        return op
    return dataclasses.replace(op, attrs={**op.attrs, "precision": mode})


def apply_fast_math(func: Func, mode: str) -> Func:
    """func with every f32 dot and conv marked for `mode` ("" = off: func itself)."""
    if mode not in MODES:
        raise ValueError(f"unknown fast_math mode {mode!r}")
    if not mode:
        return func
    general = apply_fast_math(func.general, mode) if func.general is not None else None
    return dataclasses.replace(func, ops=[_mark(op, mode) for op in func.ops], general=general)
