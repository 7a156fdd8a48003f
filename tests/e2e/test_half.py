"""float16/bfloat16 tf.functions through the optimizer: clustered, one
compile for many shapes, no fallback, results within a half-type ulp."""
import ml_dtypes
import numpy as np
import pytest
import tensorflow as tf

from graph_inspection import total


@pytest.mark.parametrize("dtype,npdt,eps", [(tf.float16, np.float16, 2.0 ** -10),
                                            (tf.bfloat16, ml_dtypes.bfloat16, 2.0 ** -7)])
def test_half_function_one_compile(disc, dtype, npdt, eps):
    @tf.function(input_signature=[tf.TensorSpec([None, None], dtype)] * 2)
    def f(x, b):
        h = tf.nn.relu(x * 2.0 + b)
        return tf.nn.softmax(h) + tf.cast(tf.reduce_sum(h, 1, keepdims=True), dtype) * 0.01

    rng = np.random.default_rng(0)
    for shape in [(3, 5), (1, 1), (17, 33), (0, 4), (8, 2)]:
        x = rng.standard_normal(shape).astype(npdt)
        b = rng.standard_normal(shape).astype(npdt)
        got = f(x, b).numpy().astype(np.float32)
        want = f.python_function(tf.constant(x), tf.constant(b)).numpy().astype(np.float32)
        np.testing.assert_allclose(got, want, rtol=4 * eps,
                                   atol=eps * float(np.max(np.abs(want), initial=1.0)))
    stats = disc.stats()
    assert total(stats, "compiles") == 1, stats
    assert total(stats, "fallbacks") == 0, stats
