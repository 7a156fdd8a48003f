"""TF functions for the CUDA code generator's tests (test_cuda_codegen.py,
test_cuda_host.py): the kernel kinds a BERT runs, compiled with the cuda
target into CudaLibrary sources, and the nvcc these tests need."""
from __future__ import annotations

import functools
import os
import shutil
import sys

import tensorflow as tf

from blade_disc_tf.compiler import service
from blade_disc_tf.compiler.options import CompileOptions
from blade_disc_tf.compiler.target.cuda import CudaTarget

F32 = tf.float32
NVCC = shutil.which("nvcc") or next(
    (p for p in ("/usr/local/cuda/bin/nvcc",) if os.path.exists(p)), None)


def spec(*shape, dtype=F32):
    return tf.TensorSpec(list(shape), dtype)


def half(*shape):
    return spec(*shape, dtype=tf.float16)


def bf16(*shape):
    return spec(*shape, dtype=tf.bfloat16)


def request(fn, *specs, arch: str = "sm_90"):
    concrete = tf.function(fn).get_concrete_function(*specs)
    inputs = [{"dtype": t.dtype.as_datatype_enum, "rank": t.shape.rank, "value": None}
              for t in concrete.inputs]
    return ({"function": concrete.function_def.signature.name, "key": "2", "inputs": inputs,
             "target": "cuda", "cuda_arch": arch},
            concrete.function_def.SerializeToString())


def bias_chain(x, b):
    return tf.tanh(x + b) * 2.0 + 1.0


def broadcast_chain(x, y, z):
    return tf.maximum(x * y - z, 0.0) / (1.0 + tf.abs(y))


def bias_gelu_erf(x, w, b):
    return tf.nn.gelu(tf.matmul(x, w) + b, approximate=False)


def bias_gelu_tanh(x, w, b):
    return tf.nn.gelu(tf.matmul(x, w) + b, approximate=True)


def half_chain(x, y, z):
    return tf.tanh(x * y - z) / (y + 2.0) * 0.5


def half_product(x, y):
    return x * y + x


def bias_relu(x, w, b):
    return tf.nn.relu(tf.matmul(x, w) + b)


def softmax(x):
    return tf.nn.softmax(x)


def layer_norm(x, g, b):
    mean = tf.reduce_mean(x, axis=-1, keepdims=True)
    var = tf.reduce_mean(tf.math.squared_difference(x, mean), axis=-1, keepdims=True)
    return (x - mean) * tf.math.rsqrt(var + 1e-12) * g + b


def row_reductions(x):
    return tf.reduce_sum(x * x, axis=-1), tf.reduce_max(x, axis=-1)


def column_sum(x):
    return tf.reduce_sum(x, axis=0), tf.reduce_max(x, axis=[0, 1])


def views(x, y):
    return tf.concat([tf.transpose(x), y], axis=0)[1:, :] * 2.0


def _models():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if root not in sys.path:
        sys.path.insert(0, root)
    from benchmarks.models import transformer
    return transformer


HIDDEN, FFN, HEADS = 768, 3072, 12
_WEIGHTS = [("wq", (HIDDEN, HIDDEN)), ("bq", (HIDDEN,)), ("wk", (HIDDEN, HIDDEN)),
            ("bk", (HIDDEN,)), ("wv", (HIDDEN, HIDDEN)), ("bv", (HIDDEN,)),
            ("wo", (HIDDEN, HIDDEN)), ("bo", (HIDDEN,)), ("ln1_g", (HIDDEN,)),
            ("ln1_b", (HIDDEN,)), ("w1", (HIDDEN, FFN)), ("b1", (FFN,)), ("w2", (FFN, HIDDEN)),
            ("b2", (HIDDEN,)), ("ln2_g", (HIDDEN,)), ("ln2_b", (HIDDEN,))]


def bert_layer(x, bias, *weights):
    """One post-LN encoder layer of benchmarks/models/transformer.py on
    x [B, S, 768] and the attention bias [B, 1, 1, S]."""
    t = _models()
    config = t.Config(hidden=HIDDEN, heads=HEADS, ffn=FFN, layers=1)
    w = {f"0/{n}": v for (n, _), v in zip(_WEIGHTS, weights)}
    batch, seq = tf.shape(x)[0], tf.shape(x)[1]
    x2d = tf.reshape(x, [batch * seq, HIDDEN])
    x2d = t.layer_norm(x2d + t.attention(x2d, w, 0, bias, batch, seq, config),
                       w["0/ln1_g"], w["0/ln1_b"])
    h = t.dense(t.gelu(t.dense(x2d, w["0/w1"], w["0/b1"])), w["0/w2"], w["0/b2"])
    return tf.reshape(t.layer_norm(x2d + h, w["0/ln2_g"], w["0/ln2_b"]), [batch, seq, HIDDEN])


CASES = {
    "bias_chain": (bias_chain, spec(None, None), spec(None)),
    "broadcast_chain": (broadcast_chain, spec(None, 1, None), spec(None, None, 1), spec()),
    "bias_gelu_erf": (bias_gelu_erf, spec(None, 768), spec(768, 3072), spec(3072)),
    "bias_gelu_tanh": (bias_gelu_tanh, spec(None, 768), spec(768, 3072), spec(3072)),
    "softmax": (softmax, spec(None, None)),
    "layer_norm": (layer_norm, spec(None, 768), spec(768), spec(768)),
    "row_reductions": (row_reductions, spec(None, None)),
    "views": (views, spec(None, None), spec(None, None)),
    "column_reductions": (column_sum, spec(None, None, None)),
    "half_softmax": (softmax, half(None, None)),
    "bf16_layer_norm": (layer_norm, bf16(None, 768), bf16(768), bf16(768)),
    "half_chain": (half_chain, half(None, 1, None), half(None, None, 1), half()),
    "half_column_sum": (column_sum, half(None, None, None)),
    "bert_layer": (bert_layer, spec(None, None, HIDDEN), spec(None, 1, 1, None),
                   *(spec(*s) for _, s in _WEIGHTS)),
    "half_bert_layer": (bert_layer, half(None, None, HIDDEN), half(None, 1, 1, None),
                        *(half(*s) for _, s in _WEIGHTS)),
}


@functools.lru_cache(maxsize=None)
def sources(name: str) -> tuple[str, str, str]:
    """(args.h, kernels.cu, host.cc) of case `name` for the cuda target."""
    fn, *specs = CASES[name]
    req, fdef = request(fn, *specs)
    _, units = service.compile_to_units(req, fdef, target=CudaTarget("sm_90"))
    return tuple(units)


def options(tmp_path) -> CompileOptions:
    return CompileOptions(cache_dir=str(tmp_path / "cache"), nvcc=NVCC or "nvcc")


def same_shape(x, y):
    return tf.tanh(x) * y + 1.0


def strided_sum(x):
    return tf.reduce_sum(x * 2.0, axis=[0, 2])


CASES_HOST_ONLY = {
    "same_shape": (same_shape, spec(None, None), spec(None, None)),
    "strided_sum": (strided_sum, spec(None, None, None)),
    "bias_relu": (bias_relu, spec(None, 768), spec(768, 3072), spec(3072)),
    "half_bias_relu": (bias_relu, half(None, 768), half(768, 3072), half(3072)),
    "half_bias_gelu_tanh": (bias_gelu_tanh, half(None, 768), half(768, 3072), half(3072)),
    "half_bias_gelu_erf": (bias_gelu_erf, half(None, 768), half(768, 3072), half(3072)),
    "bf16_bias_gelu_tanh": (bias_gelu_tanh, bf16(None, 768), bf16(768, 3072), bf16(3072)),
    "half_product": (half_product, half(None, None), half(None, None)),
}

