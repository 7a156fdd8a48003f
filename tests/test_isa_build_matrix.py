"""The build matrix: the op library's per-tier kernel sources and a sample of
generated kernels (elementwise, a stitched row reduction, a GEMM epilogue, a
convolution) compile under every x86-64 server -march our users' machines
resolve to, with the flags our builds add (a fixed -mtune, -mno-avx512fp16).
Compile only, on any machine: this is what catches a break like TF 2.21's
Eigen AVX512-FP16 header on a CPU family CI does not run on."""
from __future__ import annotations

import concurrent.futures
import functools
import os
import subprocess
import sys

import pytest
import tensorflow as tf

from blade_disc_tf.compiler.build import isa
from blade_disc_tf.compiler.build.command import BASE_FLAGS, include_dir
from blade_disc_tf.compiler.service import compile_to_units

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from tf_disc import build_ops  # noqa: E402

MARCHES = ["x86-64-v2", "x86-64-v3", "x86-64-v4", "skylake-avx512", "icelake-server",
           "sapphirerapids", "graniterapids", "znver3", "znver4", "znver5"]


@functools.lru_cache(maxsize=None)
def _gxx_knows(flag: str) -> bool:
    return subprocess.run(["g++", flag, "-E", "-x", "c++", "/dev/null"],
                          capture_output=True).returncode == 0


def _march_flags(march: str) -> list:
    """-march=X as our builds would add it: a fixed tune, no AVX512-FP16."""
    flags = ["-march=" + march, "-mtune=generic"]
    return flags + (["-mno-avx512fp16"] if _gxx_knows("-mno-avx512fp16") else [])


def _marches() -> list:
    known = [m for m in MARCHES if _gxx_knows("-march=" + m)]
    # g++ 12.2 lacks znver4 (12.3), graniterapids (13) and znver5 (14).
    assert set(MARCHES) - set(known) <= {"znver4", "graniterapids", "znver5"}, known
    return known


def _compile_all(commands: list) -> list:
    """(command, stderr) of every command that failed, run two at a time."""
    def run(cmd):
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        return None if proc.returncode == 0 else (" ".join(cmd[-8:]), proc.stderr[-2000:])

    with concurrent.futures.ThreadPoolExecutor(max(1, os.cpu_count() or 1)) as pool:
        return [r for r in pool.map(run, commands) if r is not None]


def test_kernel_sources_compile_for_every_march():
    cfg = build_ops._config()  # noqa: SLF001 - the build's own sources and flags
    cflags, _ = build_ops._flags(cfg)  # noqa: SLF001
    here = os.path.join(ROOT, "tf_disc")
    commands = [["g++", "-fsyntax-only", *cflags, *cfg["kernel_cflags"], *_march_flags(march),
                 os.path.join(here, src)]
                for march in _marches() for src in cfg["kernel_sources"]]
    assert _compile_all(commands) == []


def _sample_sources() -> dict:
    """{name: generated C++} for a few kernel kinds, as the compiler emits them."""
    samples = {
        "elementwise": (lambda x, y: tf.tanh(x * 0.5) + y,
                        [tf.TensorSpec([None, None]), tf.TensorSpec([None])]),
        "row_reduction": (lambda x: tf.nn.softmax(x) * tf.reduce_mean(x, -1, keepdims=True),
                          [tf.TensorSpec([None, None])]),
        "gemm_epilogue": (lambda a, b, c: tf.nn.relu(tf.matmul(a, b) + c),
                          [tf.TensorSpec([None, None]), tf.TensorSpec([None, None]),
                           tf.TensorSpec([None])]),
        "conv": (lambda x, w: tf.nn.relu(tf.nn.conv2d(x, w, 1, "SAME")),
                 [tf.TensorSpec([None, None, None, None]), tf.TensorSpec([3, 3, None, None])]),
    }
    out = {}
    for name, (fn, specs) in samples.items():
        concrete = tf.function(fn).get_concrete_function(*specs)
        fdef = concrete.function_def
        request = {"function": fdef.signature.name, "key": name,
                   "inputs": [{"dtype": t.dtype.as_datatype_enum, "rank": t.shape.rank,
                               "value": None} for t in concrete.inputs]}
        library, _ = compile_to_units(request, fdef.SerializeToString(), None, "", 1)
        out[name] = library
    return out


def test_generated_kernels_compile_for_every_march(tmp_path):
    flags = [f for f in BASE_FLAGS if f != "-shared"]
    commands = []
    for name, source in _sample_sources().items():
        src = tmp_path / f"{name}.cc"
        src.write_text(source)
        for march in _marches():
            commands.append(["c++", *flags, *_march_flags(march), "-I", include_dir(), "-c",
                             str(src), "-o", str(tmp_path / f"{name}.{march}.o")])
    assert _compile_all(commands) == []


def test_tier_flags_are_in_the_matrix():
    """Every tier our builds use is among the -march values compiled above."""
    cfg = build_ops._config()  # noqa: SLF001
    levels = {f.split("=", 1)[1] for flags in cfg["kernel_tiers"].values() for f in flags
              if f.startswith("-march=")}
    levels |= {f.split("=", 1)[1] for t in isa.TIERS for f in isa.tier_flags("c++", t)
               if f.startswith("-march=")}
    assert levels <= set(MARCHES), levels
    flags = cfg["extra_cflags"] + cfg["kernel_cflags"] + sum(cfg["kernel_tiers"].values(), [])
    assert not any("native" in f for f in flags), flags
