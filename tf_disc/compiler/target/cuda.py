"""The CUDA target: device kernels in CUDA C++ built by nvcc for one GPU
architecture, host code by the system C++ compiler, run through the
runtime's device entries (rt->launch, rt->gemm: runtime/disc_abi.h).

Its pass list is the shared one without the CPU's GEMM grouping (merge_gemm
feeds rt->gemm_multi's shared-A tiling, a CPU cache optimization) and with
narrow_dots (a half MatMul as a 16-bit GEMM: cuBLASLt's read 16-bit operands
and accumulate in float32); a GEMM epilogue kernel stays one
(codegen/cuda/gemm_bias.py decides which run inside the GEMM).  Its allow-list (supports) is v1's: elementwise ops,
broadcasts, views/concat/pad/iota, row reductions and their stitch kernels
(softmax, LayerNorm), reductions over one run of dims (columns, all),
dots and shape ops, on fp32/fp64/fp16/bf16/int64/bool device buffers; anything else raises Unsupported and the cluster stays in TF."""
from __future__ import annotations

import functools

from ..build.cuda import build_cuda_library, nvcc_identity, parse_arch
from ..codegen.cuda import generate_library
from ..codegen.cuda.reduce import reduced_run
from ..codegen.cuda.ops import (COMPUTED_DTYPES, DEVICE_DTYPES, GEMM_DTYPES, REDUCE_DTYPES,
                                REDUCE_OPS, elementwise_supported)
from ..errors import Unsupported
from ..ir.core import Func, Op, Value
from ..ir.opset import spec
from ..options import CompileOptions
from ..passes.narrow_dots import narrow_dots
from ..passes.pipeline import standard_passes
from .base import Pass, Target

DEFAULT_ARCH = "sm_80"
# Index ops a CUDA loop kernel runs (gather and list_set report errors from
# the kernel, which a device cannot without a sync).
_INDEX_OPS = ("view", "reshape", "tile", "pad", "concatenate", "iota")
_HOST_OPS = ("constant", "dims_tensor", "reshape")
_CPU_ONLY_PASSES = ("merge_gemm",)


def cheap_to_recompute(op_name: str) -> bool:
    """Every elementwise op: a GPU kernel is bound by memory traffic, so
    recomputing a broadcast value per element beats storing it."""
    return True


class CudaTarget(Target):
    name = "cuda"

    def __init__(self, arch: str = DEFAULT_ARCH, nvcc: str = "nvcc") -> None:
        parse_arch(arch)
        self.arch, self.nvcc = arch, nvcc

    def passes(self) -> list[tuple[str, Pass]]:
        out = []
        for n, p in standard_passes(cheap_to_recompute):
            if n not in _CPU_ONLY_PASSES:
                out.append((n, p))
            if n == "canonicalize":   # before cse and dce, which drop the dead converts
                out.append(("narrow_dots", narrow_dots))
        return out

    def generate(self, func: Func, units: int) -> tuple[str, list[str]]:
        lib = generate_library(func)
        return lib.text(), lib.units()

    def build_flags(self, request: dict, options: CompileOptions) -> tuple[str, ...]:
        return tuple(options.extra_cflags)

    def unit_names(self, count: int) -> list[str]:
        return ["args.h", "kernels.cu", "host.cc"]

    def library_builder(self, options: CompileOptions):
        return functools.partial(_build, nvcc=self.nvcc, arch=self.arch, cxx=options.cxx,
                                 extra=tuple(options.extra_cflags))

    def cache_identity(self) -> str:
        return f"target={self.name};arch={self.arch};nvcc={nvcc_identity(self.nvcc)}"

    def check_supported(self, func: Func) -> None:
        for version in (func, func.general):
            if version is None:
                continue
            # host arrays a kernel cannot read; scalars are passed by value
            host = {op.result for op in version.ops if op.name in ("constant", "dims_tensor")}
            host_values = {v for v in host if v.type.rank > 0}
            inlined = host - host_values
            for op in version.ops:
                why = _unsupported(op, host_values, inlined)
                if why:
                    raise Unsupported(f"target {self.name} cannot run {why}")

    def supports(self, op: Op) -> bool:
        return not _unsupported(op, set(), set())


def _build(sources, out_so, workdir, run, *, nvcc, arch, cxx, extra) -> None:
    build_cuda_library(sources, out_so, workdir, nvcc, arch, cxx, extra, run)


def _unsupported(op: Op, host_values: set[Value], inlined: set[Value]) -> str:
    """Why a top-level op cannot run on CUDA ("" when it can); inlined:
    scalar host values (literals or by-value arguments in kernels)."""
    kind = spec(op.name).kind
    if kind == "assert" or op.name in _HOST_OPS:
        return ""
    if op.name == "dot":
        types = {v.dtype for v in (*op.operands, op.result)}
        if len(types) != 1 or not types <= set(GEMM_DTYPES):
            return f"a dot of {'/'.join(sorted(t.name for t in types))}"
        return _host_read(op, host_values)
    if op.name == "reduce":
        return _reduce_unsupported(op, host_values)
    if op.name not in ("fusion", "stitch"):
        return f"IR op {op.name}"
    for v in (*op.operands, *op.results):
        if v.dtype not in DEVICE_DTYPES and v not in inlined:
            return f"a kernel reading or writing a {v.dtype.name} buffer"
    why = _host_read(op, host_values)
    for inner in op.region.ops:
        why = why or _inner_unsupported(inner, op.name)
    return why


def _reduce_unsupported(op: Op, host_values: set[Value]) -> str:
    """A top-level reduce runs as codegen/cuda/reduce.py's two kernels when
    its dims are one contiguous run and its kind and type are supported."""
    x = op.operands[0]
    if op.attrs["kind"] not in REDUCE_OPS or x.dtype not in REDUCE_DTYPES:
        return f"a {op.attrs['kind']} reduction of {x.dtype.name}"
    if reduced_run(op) is None:
        return f"a reduction over dims {sorted(op.attrs['dimensions'])} (not one run)"
    return _host_read(op, host_values)


def _host_read(op: Op, host_values: set[Value]) -> str:
    """A kernel or GEMM cannot read host arrays (constants, shape tensors;
    scalar constants are inlined)."""
    for v in op.operands:
        if v in host_values:
            return f"IR op {op.name} reading host tensor %{v.name}"
    return ""


def _inner_unsupported(inner: Op, where: str) -> str:
    if any(r.dtype not in COMPUTED_DTYPES for r in inner.results):
        return f"a {inner.results[0].dtype.name} value in a kernel"
    kind = spec(inner.name).kind
    if inner.name == "broadcast_in_dim":
        return ""
    if inner.name == "reduce" and where == "stitch":
        if inner.attrs["kind"] not in REDUCE_OPS or inner.operands[0].dtype not in REDUCE_DTYPES:
            return f"a {inner.attrs['kind']} reduction of {inner.operands[0].dtype.name}"
        return ""
    if kind == "index" and where == "fusion":
        return "" if inner.name in _INDEX_OPS else f"index op {inner.name}"
    if kind == "elementwise" and elementwise_supported(inner):
        return ""
    return f"IR op {inner.name} in a {where} kernel"
