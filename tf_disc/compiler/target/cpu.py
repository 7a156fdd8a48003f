"""The CPU targets: C++ through the system compiler, kernels run on TF's
intra-op pool through the runtime's C ABI (runtime/disc_abi.h).

CpuTarget is the product target: generated code for the ISA tier the op
library chose (build/isa.py).  ReferenceCpuTarget builds the same code for
the baseline ISA with the compiler's vectorizers off: a scalar reference the
tests run against TF and against CpuTarget's vectorized kernels."""
from __future__ import annotations

import platform

from ..build import isa
from ..codegen.cpu import ops as op_table
from ..codegen.cpu.prelude import PRELUDE_HEADER
from ..codegen.cpu.source import generate_library
from ..ir.core import Func
from ..options import CompileOptions
from ..passes.pipeline import standard_passes
from .base import Pass, Target


def cheap_to_recompute(op_name: str) -> bool:
    """An elementwise op that costs no more than a divide per element on
    this target (codegen/cpu/ops.py's measured table): recomputing it per
    broadcast element beats a kernel and a temp (passes/sink_broadcasts.py,
    passes/rematerialize.py)."""
    return op_table.cost(op_name) <= 1


class CpuTarget(Target):
    name = "cpu"

    def passes(self) -> list[tuple[str, Pass]]:
        return standard_passes(cheap_to_recompute)

    def generate(self, func: Func, units: int) -> tuple[str, list[str]]:
        return generate_library(func, units)

    def generate_program(self, program, units: int = 1) -> tuple[str, list[str]]:
        from ..codegen.cpu.program import generate_program
        return generate_program(program, units)

    def precompiled_header(self) -> str | None:
        return PRELUDE_HEADER

    def build_flags(self, request: dict, options: CompileOptions) -> tuple[str, ...]:
        """The request's ISA tier (the op library's choice), else the
        option's, else this machine's; then the caller's extra flags."""
        tier = isa.parse_tier(request.get("target_isa") or options.target_isa or isa.host_tier())
        return isa.tier_flags(options.cxx, tier, options.timeout_s) + tuple(options.extra_cflags)


# No auto-vectorization (loop or straight-line): every kernel runs one
# element at a time, as written.
_SCALAR = ("-fno-tree-vectorize", "-fno-tree-slp-vectorize")


class ReferenceCpuTarget(CpuTarget):
    name = "cpu_reference"

    def build_flags(self, request: dict, options: CompileOptions) -> tuple[str, ...]:
        baseline = ("-march=x86-64", "-mtune=generic") if _is_x86() else ()
        return baseline + _SCALAR + tuple(options.extra_cflags)


def _is_x86() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64")
