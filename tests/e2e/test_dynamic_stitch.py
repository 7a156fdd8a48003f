"""DynamicStitch / ParallelDynamicStitch whose indices come from outside the
cluster (DynamicPartition, as in its gradient and a sharded embedding
lookup) run compiled: one executable for every size and index pattern, TF's
values (gaps zero, later index wins) and TF's out-of-range error."""
import numpy as np
import pytest
import tensorflow as tf

from graph_inspection import total

F = tf.float32


def test_partition_gradient_compiles_once(disc):
    disc.enable(min_cluster_size=1)

    def step(x, parts):
        with tf.GradientTape() as tape:
            tape.watch(x)
            a, b, c = tf.dynamic_partition(tf.tanh(x), parts, 3)
            loss = tf.reduce_sum(a * 2.0) + tf.reduce_sum(b * b) + tf.reduce_sum(c)
        return tape.gradient(loss, x)
    fn = tf.function(step, input_signature=[tf.TensorSpec([None, None], F),
                                            tf.TensorSpec([None], tf.int32)])
    rng = np.random.default_rng(3)
    for n, k in [(5, 3), (1, 4), (9, 1), (0, 2), (6, 7)]:
        x = tf.constant(rng.standard_normal((n, k)), F)
        parts = tf.constant(rng.integers(0, 3, n), tf.int32)
        np.testing.assert_allclose(fn(x, parts).numpy(), step(x, parts).numpy(),
                                   rtol=1e-5, atol=1e-6)
    ex = disc.explain(fn, x, parts)
    assert "ParallelDynamicStitch" not in str(ex), ex
    st = disc.stats()
    assert total(st, "fallbacks") == 0, st
    assert all(c["compiles"] == 1 for c in st["clusters"].values()), st


@pytest.mark.parametrize("dtype", [tf.float32, tf.int64])
def test_stitch_of_run_time_indices(disc, dtype):
    disc.enable(min_cluster_size=1)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.int32)] * 2 +
                 [tf.TensorSpec([None, 3], dtype)] * 2)
    def fn(i, j, x, y):
        return tf.dynamic_stitch([i, j], [x * 2, y]) + 1
    rng = np.random.default_rng(4)
    pats = [([0, 2], [1]), ([3, 3], [0, 5]), ([], [2, 0]), ([7], [])]
    for i, j in pats:
        x = (rng.standard_normal((len(i), 3)) * 9).astype(dtype.as_numpy_dtype)
        y = (rng.standard_normal((len(j), 3)) * 9).astype(dtype.as_numpy_dtype)
        args = [tf.constant(i, tf.int32), tf.constant(j, tf.int32), x, y]
        np.testing.assert_array_equal(fn(*args).numpy(), fn.python_function(*args).numpy())
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1\] is out of range"):
        fn(tf.constant([0, -2]), tf.constant([], tf.int32), np.ones((2, 3), dtype.as_numpy_dtype),
           np.ones((0, 3), dtype.as_numpy_dtype))
    st = disc.stats()
    assert total(st, "fallbacks") == 0, st
    assert total(st, "compiles") == 1, st
