"""Assembles a CUDA library from one function after the pass pipeline: three
sources kept apart because two compilers build them.

  args.h      the kernels' by-value argument structs with static_asserts on
              their layout (device_code.py), included by both units;
  kernels.cu  device code only (nvcc -> fatbin, build/cuda.py);
  host.cc     disc_entry and the exports of disc_abi.h (g++): the ABI
              version, DISC_DEVICE_CUDA and the kernel table whose indices
              rt->launch takes.

A speculated function (passes/speculate.py) has both versions' kernels in
the one module (the general version's named disc_general_*) and both host
entries, disc_entry choosing one per call as on the CPU.  Kernels equal but
for their names (every layer of a BERT, most of the general version) are
emitted once; the others alias that one's struct and table entries."""
from __future__ import annotations

import dataclasses

from ...ir.core import Func, Op
from ..abi import abi_guard
from ..cstr import c_comment, c_string
from ..gemm import GEMM_HEADER, needs_helper
from ..host_entry import ENTRY_HEAD, speculation_guard
from .host import Kernel, kernel_id, render_host
from .loop import build_loop_kernel
from .reduce import build_reduce_kernel
from .rows import build_row_kernel

DEVICE_PRELUDE = '#include "cuda/prelude/disc_cuda_prelude.cuh"'
HOST_INCLUDES = ('#include "host/disc_host.h"', '#include "cuda/prelude/disc_cuda_launch.h"')
ARGS_HEADER = "args.h"
TYPES_INCLUDE = '#include "cuda/prelude/disc_cuda_types.h"'
_EXPORT = 'extern "C" __attribute__((visibility("default")))'


@dataclasses.dataclass(frozen=True)
class CudaLibrary:
    args_h: str
    kernels_cu: str
    host_cc: str
    kernel_names: tuple[str, ...]   # the table rt->launch indexes

    def units(self) -> list[str]:
        """The sources in the order build/cuda.py takes them."""
        return [self.args_h, self.kernels_cu, self.host_cc]

    def text(self) -> str:
        """The whole library as one text: its disk-cache key."""
        return "\n".join(self.units())


# (C++ namespace, kernel name prefix) of a speculated function's versions.
_VERSIONS = (("disc_speculated", ""), ("disc_general", "general_"))


def _kernels(func: Func, prefix: str) -> dict[Op, Kernel]:
    consts = {op.result: op for op in func.ops if op.name == "constant"}
    scalars = {op.result for op in func.ops
               if op.name == "dims_tensor" and op.result.type.rank == 0}
    kernels: dict[Op, Kernel] = {op: build_loop_kernel(op, consts, scalars, prefix)
                                 for op in func.ops if op.name == "fusion"}
    kernels.update({op: build_row_kernel(op, consts, scalars, i, prefix) for i, op in
                    enumerate(o for o in func.ops if o.name == "stitch")})
    kernels.update({op: build_reduce_kernel(op, i, prefix) for i, op in
                    enumerate(o for o in func.ops if o.name == "reduce")})
    return kernels


def _entries(func: Func) -> tuple[list[Op], list[str]]:
    """(every version's kernels, the host code: each version's constants and
    entry, and disc_entry choosing one)."""
    if func.general is None:
        kernels = _kernels(func, "")
        consts, entry = render_host(func, kernels)
        return list(kernels.values()), ["namespace {", consts, "}  // namespace", "", entry]
    all_kernels, host = [], []
    for (ns, prefix), version in zip(_VERSIONS, (func, func.general)):
        kernels = _kernels(version, prefix)
        all_kernels += kernels.values()
        consts, entry = render_host(version, kernels, "entry")
        host += [f"namespace {ns} {{", consts, entry, f"}}  // namespace {ns}", ""]
    return all_kernels, host + [
        ENTRY_HEAD, f"  if ({speculation_guard(func)})",
        f"    return {_VERSIONS[0][0]}::entry(rt, inputs, num_inputs);",
        f"  return {_VERSIONS[1][0]}::entry(rt, inputs, num_inputs);", "}", ""]


def generate_library(func: Func) -> CudaLibrary:
    kernels, host = _entries(func)
    first: dict[str, str] = {}
    emitted, aliases, enum_aliases = [], [], []
    for k in kernels:
        shape = k.code.shape()
        if shape not in first:
            first[shape] = k.name
            emitted.append(k)
            continue
        was = first[shape]
        aliases.append(f"using {k.name}_args = {was}_args;")
        enum_aliases += [f"  {kernel_id(k.name, s)} = {kernel_id(was, s)},"
                         for s in k.code.suffixes()]
    names = tuple(f"{k.name}{s}" for k in emitted for s in k.code.suffixes())
    ids = [f"  {kernel_id(k.name, s)}," for k in emitted for s in k.code.suffixes()]
    guard = "DISC_GENERATED_ARGS_H_"
    args_h = "\n".join([f"// Kernel arguments of {c_comment(func.name)} (blade_disc_tf.compiler)",
                        f"#ifndef {guard}", f"#define {guard}", "#include <cstddef>",
                        "#include <cstdint>", TYPES_INCLUDE, "",
                        *(k.code.struct(k.name) for k in emitted), *aliases, "",
                        f"#endif  // {guard}", ""])
    kernels_cu = "\n".join([f"// Device code of {c_comment(func.name)}", DEVICE_PRELUDE,
                            f'#include "{ARGS_HEADER}"',
                            *(k.code.definitions(k.name) for k in emitted)])
    table = ", ".join(c_string(n) for n in names) or "nullptr"
    dots = any(needs_helper(f.ops) for f in (func, func.general) if f is not None)
    host_cc = "\n".join([
        f"// Host code of {c_comment(func.name)} (blade_disc_tf.compiler)",
        *HOST_INCLUDES, *([GEMM_HEADER] if dots else []),
        f'#include "{ARGS_HEADER}"', abi_guard(), "#include <cmath>", "#include <cstdlib>", "",
        "namespace {", "enum : int32_t {", *ids, *enum_aliases, "};",
        f"const char* const kKernelNames[{max(len(names), 1)}] = {{{table}}};",
        "}  // namespace", "",
        f"{_EXPORT} int32_t disc_abi_version(void) {{ return DISC_ABI_VERSION; }}",
        f"{_EXPORT} int32_t disc_device(void) {{ return DISC_DEVICE_CUDA; }}",
        f"{_EXPORT} int32_t disc_cuda_kernel_count(void) {{ return {len(names)}; }}",
        f"{_EXPORT} const char* disc_cuda_kernel_name(int32_t i) {{",
        f"  return i >= 0 && i < {len(names)} ? kKernelNames[i] : nullptr;", "}", "",
        *host])
    return CudaLibrary(args_h, kernels_cu, host_cc, names)
