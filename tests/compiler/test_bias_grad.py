"""BiasAddGrad (ops/bias_grad.py) against TF through the ctypes harness:
NHWC and NCHW, ranks 2 to 5, empty dims, float and int dtypes."""
import numpy as np
import pytest
import tensorflow as tf

from .opwalk import run_against_tf as run

rng = np.random.default_rng(5)


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
@pytest.mark.parametrize("shape", [(3, 4), (2, 5, 7), (2, 3, 4, 5), (1, 2, 3, 4, 6), (0, 3, 4),
                                   (3, 0, 2, 2), (1, 1)])
def test_bias_add_grad(compiler, fmt, shape):
    if fmt == "NCHW" and len(shape) < 3:
        pytest.skip("TF's shape function needs rank 3 for NCHW")
    def fn(g):
        return tf.raw_ops.BiasAddGrad(out_backprop=g * 2.0, data_format=fmt)
    run(compiler, fn, [tf.TensorSpec([None] * len(shape), tf.float32)],
        [rng.standard_normal(shape).astype(np.float32)])


@pytest.mark.parametrize("dtype", [tf.float64, tf.int32, tf.int64])
def test_bias_add_grad_dtypes(compiler, dtype):
    def fn(g):
        return tf.raw_ops.BiasAddGrad(out_backprop=g + g)
    x = (rng.standard_normal((4, 3, 5)) * 20).astype(dtype.as_numpy_dtype)
    run(compiler, fn, [tf.TensorSpec([None, None, 5], dtype)], [x])


def test_dense_bias_gradient(compiler):
    """A Dense layer's gradients: BiasAddGrad next to the MatMul ones."""
    def fn(x, w, b):
        with tf.GradientTape() as tape:
            tape.watch([w, b])
            loss = tf.reduce_sum(tf.tanh(tf.nn.bias_add(x @ w, b)))
        return tape.gradient(loss, [w, b])
    run(compiler, fn, [tf.TensorSpec([None, 6]), tf.TensorSpec([6, 3]), tf.TensorSpec([3])],
        [rng.standard_normal((5, 6)).astype(np.float32),
         rng.standard_normal((6, 3)).astype(np.float32),
         rng.standard_normal(3).astype(np.float32)])
