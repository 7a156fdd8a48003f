"""InvertPermutation of a compile-time permutation (ops/permutation.py)
against TF: the value itself, Transpose's gradient, int32/int64, and a
run-time permutation refused (it then runs in TF)."""
import numpy as np
import pytest
import tensorflow as tf

from .opwalk import run_against_tf as run

rng = np.random.default_rng(9)


@pytest.mark.parametrize("perm", [[0], [1, 0], [2, 0, 3, 1], [0, 2, 1, 3], []])
@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_values(compiler, perm, dtype):
    def fn(x):
        inv = tf.math.invert_permutation(tf.constant(perm, dtype))
        return inv, x + tf.cast(tf.reduce_sum(inv), tf.float32)
    run(compiler, fn, [tf.TensorSpec([None], tf.float32)], [np.ones(3, np.float32)])


@pytest.mark.parametrize("perm", [[0, 2, 1, 3], [3, 1, 0, 2], [1, 2, 3, 0]])
def test_transpose_gradient(compiler, perm):
    def fn(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(tf.tanh(tf.transpose(x * 2.0, perm)) * tf.constant([0.5, 1.0, -2.0, 3.0, 0.25]))
        return tape.gradient(loss, x)
    shape = [2, 3, 4, 5]
    x = rng.standard_normal([shape[perm.index(i)] for i in range(4)]).astype(np.float32)
    run(compiler, fn, [tf.TensorSpec([None] * 4, tf.float32)], [x])


def test_run_time_permutation_is_refused(compiler):
    concrete = tf.function(lambda p: tf.math.invert_permutation(p * 1)).get_concrete_function(
        tf.TensorSpec([None], tf.int32))
    reply = compiler.compile(concrete)
    assert not reply["ok"] and "not known at compile time" in reply["error"], reply
