"""The prelude (runtime/cpu/prelude/disc_prelude.h) plus small extern "C" loops over it,
compiled as kernels are (same flags: the loops vectorize), for the accuracy
tests of its math functions."""
from __future__ import annotations

import ctypes
import os
import subprocess
from typing import Callable

import numpy as np

from blade_disc_tf.compiler.build import isa
from blade_disc_tf.compiler.build.command import compile_command
from blade_disc_tf.compiler.codegen.cpu.prelude import PRELUDE_INCLUDE


def compile_loops(folder: str, name: str, loops: str) -> ctypes.CDLL:
    """The prelude's include + loops (C++ source) built as folder/name.so and
    loaded."""
    src, lib = os.path.join(folder, f"{name}.cc"), os.path.join(folder, f"{name}.so")
    with open(src, "w") as f:
        f.write(PRELUDE_INCLUDE + "\n" + loops)
    cxx = os.environ.get("CXX", "c++")  # for this CPU's tier, as kernels are
    subprocess.run(compile_command(cxx, src, lib, isa.tier_flags(cxx, isa.host_tier())),
                   check=True)
    return ctypes.CDLL(lib)


def map_loops(**loops: str) -> str:
    """C++ source of one loop `void name(const float* x, float* y, int64_t n)`
    per name=function, y[i] = function(x[i]), for compile_loops."""
    return "".join(
        '\nextern "C" __attribute__((visibility("default")))\n'
        f"void {name}(const float* x, float* y, int64_t n) {{\n"
        f"  for (int64_t i = 0; i < n; ++i) y[i] = {fn}(x[i]);\n}}\n"
        for name, fn in loops.items())


def float_map(fn) -> Callable[[np.ndarray], np.ndarray]:
    """numpy float32 array -> array, through a loop `void f(const float*,
    float*, int64_t n)`."""
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]

    def run(x: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(x, np.float32)
        y = np.empty_like(x)
        fn(x.ctypes.data, y.ctypes.data, x.size)
        return y
    return run
