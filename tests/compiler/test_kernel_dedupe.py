"""Kernels repeated layer after layer are compiled once (codegen/cpu/source.py
dedupe_kernels): the copies become aliases, and the library still computes
what TF computes."""
import re

import numpy as np
import tensorflow as tf

from blade_disc_tf.compiler.codegen.kernel_code import KernelCode
from blade_disc_tf.compiler.codegen.cpu.source import NamedKernel, dedupe_kernels
from blade_disc_tf.compiler.options import CompileOptions
from blade_disc_tf.compiler.service import compile_request

from .harness import Executable

F = tf.float32
M = tf.TensorSpec([None, None], F)
V = tf.TensorSpec([None], F)


def layernorm(x, g, b):
    m, v = tf.nn.moments(x, [-1], keepdims=True)
    return (x - m) * tf.math.rsqrt(v + 1e-5) * g + b


def stacked(x, w, g, b):         # one layer three times
    for _ in range(3):
        x = layernorm(tf.nn.gelu(tf.matmul(x, w) + b) + x, g, b)
    return x


def _request(concrete):
    inputs = [{"dtype": t.dtype.as_datatype_enum, "rank": t.shape.rank, "value": None}
              for t in concrete.inputs]
    return {"function": "f", "key": "k", "inputs": inputs}, \
        concrete.function_def.SerializeToString()


def test_repeated_layers_compile_once_and_match_tf(tmp_path):
    from blade_disc_tf.compiler.service import compile_to_source

    concrete = tf.function(stacked).get_concrete_function(M, M, V, V)
    src = compile_to_source(*_request(concrete))
    defs = [ln for ln in src.splitlines() if ln.startswith("void disc_") and ln.endswith("{")]
    aliases = [ln for ln in src.splitlines() if ln.startswith("constexpr DiscParallelFn")]
    # layer 3's row kernel aliases an earlier layer's in both speculated
    # versions (in the general one all three are equal: no layer writes
    # broadcasts for the next, passes/rematerialize.py), and more
    assert src.count("constexpr DiscParallelFn disc_stitch_2 = disc_stitch_") == 2
    assert len(aliases) >= 4 and len(defs) + len(aliases) >= 14, (defs, aliases)
    reply = compile_request(*_request(concrete), CompileOptions(cache_dir=str(tmp_path)))
    assert reply["ok"], reply
    exe = Executable(reply["path"])
    rng = np.random.default_rng(4)
    for shapes in [[(3, 16), (16, 16), (16,), (16,)], [(5, 1), (1, 1), (1,), (1,)],
                   [(2, 4), (4, 4), (1,), (4,)]]:
        xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        (got,) = exe(xs, [np.float32])
        want = stacked(*[tf.constant(x) for x in xs]).numpy()
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)


def _code(value: str, msg: str = "x", chunk: int = 0) -> KernelCode:
    return KernelCode(("  float* o0;",),
                      (f"  const float v0 = {value}; // {msg}", f'  const char* m = "{msg}";'),
                      chunk)


def test_dedupe_only_renamings():
    a = NamedKernel("disc_kernel_0", _code("1.0f", chunk=8))
    same = NamedKernel("disc_kernel_1", _code("1.0f", chunk=8))
    other_text = NamedKernel("disc_kernel_2", _code("1.0f", msg="y", chunk=8))
    other_value = NamedKernel("disc_kernel_3", _code("2.0f", chunk=8))
    emitted, aliases = dedupe_kernels([a, same, other_text, other_value])
    assert emitted == [a, other_text, other_value]
    assert aliases == ["using disc_kernel_1_args = disc_kernel_0_args;",
                       "constexpr DiscParallelFn disc_kernel_1 = disc_kernel_0;",
                       "constexpr DiscParallelFn disc_kernel_1_chunks = disc_kernel_0_chunks;"]


def test_distinct_kernels_stay():
    def two(x):
        return tf.exp(x) * 2.0, tf.tanh(tf.reduce_sum(x, axis=1))
    concrete = tf.function(two).get_concrete_function(M)
    from blade_disc_tf.compiler.service import compile_to_source
    assert "constexpr DiscParallelFn" not in compile_to_source(*_request(concrete))


def test_versions_share_kernels_across_namespaces():
    a = NamedKernel("disc_kernel_0", _code("1.0f"))
    b = NamedKernel("disc_kernel_4", _code("1.0f"))
    seen: dict = {}
    assert dedupe_kernels([a], seen, "disc_speculated") == ([a], [])
    sources, aliases = dedupe_kernels([b], seen, "disc_general")
    assert sources == [] and aliases == [
        "using disc_kernel_4_args = disc_speculated::disc_kernel_0_args;",
        "constexpr DiscParallelFn disc_kernel_4 = disc_speculated::disc_kernel_0;"]


def norm_and_tanh(x, w, g, b, a):   # speculated; the tanh kernel is the same in both versions
    return layernorm(tf.matmul(x, w) + b, g, b), tf.tanh(a) * 2.0 + a


def test_general_version_reuses_speculated_kernels(tmp_path):
    from blade_disc_tf.compiler.service import compile_to_source

    concrete = tf.function(norm_and_tanh).get_concrete_function(M, M, V, V, M)
    src = compile_to_source(*_request(concrete))
    assert "namespace disc_general {" in src
    assert re.search(r"constexpr DiscParallelFn disc_kernel_\d+ = disc_speculated::disc_kernel_\d+;",
                     src), "the tanh kernel is not shared"
    reply = compile_request(*_request(concrete), CompileOptions(cache_dir=str(tmp_path)))
    assert reply["ok"], reply
    exe = Executable(reply["path"])
    rng = np.random.default_rng(5)
    # speculated version (no broadcast), then the general one (b broadcasts)
    for shapes in [[(3, 8), (8, 8), (8,), (8,), (2, 5)], [(3, 8), (8, 8), (1,), (8,), (4, 3)]]:
        xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        got = exe(xs, [np.float32, np.float32])
        want = norm_and_tanh(*[tf.constant(x) for x in xs])
        for g_, w_ in zip(got, want):
            np.testing.assert_allclose(g_, w_.numpy(), rtol=2e-4, atol=2e-4)
