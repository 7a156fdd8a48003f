"""Every prelude math function (runtime/cpu/prelude/disc_math.h) an elementwise op
lowers to compiles, in a plain loop with the kernels' flags, to packed
(SIMD) arithmetic.  A select
GCC cannot vectorize anywhere inside one (expm1 and softplus had a mask of
masks from disc_frexp's `a == 0 || be == 255`) makes the whole loop scalar:
10-20x slower, and silently so.  Compile only, for the AVX2 and the AVX-512
tier whatever the host (x86-64-v3 has no packed double <-> int64
conversion: a helper using one left the double loops scalar there)."""
import os
import platform
import re
import subprocess

import pytest

from blade_disc_tf.compiler.build import isa
from blade_disc_tf.compiler.build.command import compile_command
from blade_disc_tf.compiler.codegen.cpu.prelude import PRELUDE_INCLUDE

FUNCS = ["disc_exp", "disc_log", "disc_log1p", "disc_expm1", "disc_tanh", "disc_logistic",
         "disc_erf", "disc_erfc", "disc_elu", "disc_selu", "disc_softplus", "disc_exp_fast"]
TYPES = {"f": "float", "d": "double"}


def _cases():
    return [(f, s) for f in FUNCS for s in TYPES if not (f == "disc_exp_fast" and s == "d")]


@pytest.fixture(scope="module", params=["avx2", "avx512"])
def asm(request, tmp_path_factory) -> str:
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("checks x86 packed instructions")
    loops = "".join(
        f'extern "C" void loop_{f}_{s}(const {TYPES[s]}* __restrict__ x, {TYPES[s]}* __restrict__ y, '
        f'int64_t n) {{\n  for (int64_t i = 0; i < n; ++i) y[i] = {f}(x[i]);\n}}\n'
        for f, s in _cases())
    d = tmp_path_factory.mktemp("prelude_vec")
    src, out = os.path.join(d, "vec.cc"), os.path.join(d, "vec.s")
    with open(src, "w") as fh:
        fh.write(PRELUDE_INCLUDE + "\n" + loops)
    cxx = os.environ.get("CXX", "c++")
    cmd = [a for a in compile_command(cxx, src, out, isa.tier_flags(cxx, request.param))
           if a != "-shared"]
    subprocess.run(cmd + ["-S"], check=True)
    with open(out) as fh:
        return fh.read()


def _body(asm: str, name: str) -> str:
    start = asm.index(f"\n{name}:")
    return asm[start:asm.index(".cfi_endproc", start)]


@pytest.mark.parametrize("func,suffix", _cases())
def test_loop_is_vectorized(asm, func, suffix):
    body = _body(asm, f"loop_{func}_{suffix}")
    packed = re.findall(rf"\bv?(?:mul|add|fmadd\w*|div)p{'s' if suffix == 'f' else 'd'}\b", body)
    assert len(packed) >= 4, f"{func}({TYPES[suffix]}) loop has no packed arithmetic"
