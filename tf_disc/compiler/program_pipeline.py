"""The pipeline for a function with loops: verify it whole (nested cond and
body included), hoist the loops' input projections (passes/hoist_loop_gemm.py),
split it into a Program (passes/program.py) and run the
target's pass pipeline on every segment, so that loop bodies get the same
fusion as straight-line code."""
from __future__ import annotations

import os
import re

from .ir.core import Func
from .ir.printer import print_func
from .ir.verifier import verify
from .passes.fast_math import apply_fast_math
from .passes.hoist_loop_gemm import hoist_loop_gemms
from .passes.pipeline import run_pipeline
from .passes.program import Program, map_segments, split_program
from .target import Target


def lower_program(func: Func, dump_dir: str | None, fast_math: str, target: Target) -> Program:
    """func (IR with `while` ops) -> its Program after the pipeline; dumps
    the whole function and each segment's passes (dump_dir/<segment>/)."""
    func = verify(hoist_loop_gemms(verify(func)))
    if dump_dir:
        with open(os.path.join(dump_dir, "ir_control_flow.mlir"), "w") as f:
            f.write(print_func(func))

    def compile_segment(f: Func) -> Func:
        sub = os.path.join(dump_dir, re.sub(r"[^\w.\-]", "_", f.name)[-100:]) \
            if dump_dir else None
        out = apply_fast_math(run_pipeline(f, target.passes(), sub, speculated=False),
                              fast_math)
        target.check_supported(out)
        return out

    return map_segments(split_program(func), compile_segment)
