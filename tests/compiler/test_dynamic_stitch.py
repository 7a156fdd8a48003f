"""DynamicStitch with compile-time indices (ops/dynamic_stitch.py) against
TF through the ctypes harness: duplicates (later wins), empty indices,
scalar and 2-D indices, shape-valued results, and tf.reduce_mean's gradient."""
import numpy as np
import pytest
import tensorflow as tf

from .opwalk import run_against_tf as run

F = tf.float32
rng = np.random.default_rng(7)


def r(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def stitch_rows(a, b):
    """Row tensors: [2, k] and [3, k] at indices with a duplicate (row 2)."""
    return (tf.dynamic_stitch([[0, 2], [1, 2, 3]], [a, b]),
            tf.dynamic_stitch([[3, 1], [0, 2, 1]], [a * 2.0, b]),
            tf.dynamic_stitch([[0, 1], tf.zeros([0], tf.int32)], [a, b[:0]]))


@pytest.mark.parametrize("k", [1, 3, 4, 0, 7])
def test_rows_with_duplicates(compiler, k):
    spec = [tf.TensorSpec([2, None], F), tf.TensorSpec([3, None], F)]
    run(compiler, stitch_rows, spec, [r(2, k), r(3, k)])


def stitch_scalars_and_matrix(x, y, z):
    """Scalar indices with scalar data, 2-D indices with [2, 2, k] data."""
    return (tf.dynamic_stitch([1, 0, 1], [x[0, 0], x[0, 1], x[1, 0]]),
            tf.dynamic_stitch([[[0, 3], [1, 2]], [4]], [y, z]))


@pytest.mark.parametrize("k", [1, 2, 5, 0])
def test_scalar_and_matrix_indices(compiler, k):
    spec = [tf.TensorSpec([None, None], F), tf.TensorSpec([2, 2, None], F),
            tf.TensorSpec([1, None], F)]
    run(compiler, stitch_scalars_and_matrix, spec, [r(2, 3), r(2, 2, k), r(1, k)])


def stitch_empty(x):
    return tf.dynamic_stitch([tf.zeros([0], tf.int32)], [x[:0]]) + 1.0


@pytest.mark.parametrize("k", [3, 0])
def test_empty_indices(compiler, k):
    run(compiler, stitch_empty, [tf.TensorSpec([None, None], F)], [r(2, k)])


def kept_dims_shape(x):
    """math_ops.reduced_shape: the shape tf.reduce_mean's gradient reshapes to."""
    s = tf.shape(x)
    rank = tf.size(s)
    axes = (tf.constant([1, -1]) + rank) % rank
    kept = tf.dynamic_stitch([tf.range(rank), axes], [s, tf.fill(tf.shape(axes), 1)])
    return kept, tf.reshape(tf.reduce_sum(x, [1, 3]), kept) * 2.0


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (1, 1, 1, 1), (3, 0, 2, 4), (0, 2, 3, 1),
                                   (4, 7, 1, 3)])
def test_shape_valued_stitch_feeds_a_reshape(compiler, shape):
    run(compiler, kept_dims_shape, [tf.TensorSpec([None] * 4, F)], [r(*shape)])


def mean_grad(x, w):
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_mean(tf.reduce_mean(tf.tanh(x) * w, axis=[1, 2]) ** 2)
    return tape.gradient(loss, x)


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (1, 5, 2, 3), (3, 1, 1, 2), (2, 4, 3, 1)])
def test_reduce_mean_gradient(compiler, shape):
    run(compiler, mean_grad, [tf.TensorSpec([None] * 4, F), tf.TensorSpec([None], F)],
        [r(*shape), r(shape[-1])])
