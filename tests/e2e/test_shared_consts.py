"""A small Const read by two clusters (Grappler shares equal Consts between
layers, e.g. tf.tensordot's gather indices) is copied into each cluster, so
both see its value for host shape arithmetic: no 'shape is not computable'
fallback, one compile per cluster over many shapes, equal to TF."""
import numpy as np
import tensorflow as tf

from graph_inspection import total


def test_const_shared_by_two_clusters_is_a_constant_in_both(disc):
    @tf.function(input_signature=[tf.TensorSpec([None, None, 8], tf.float32)])
    def f(x):
        free = tf.constant([0, 1])  # gather indices used on both sides of Cumprod
        a = tf.reshape(tf.tanh(x) * 2.0,
                       tf.stack([tf.reduce_prod(tf.gather(tf.shape(x), free)), 8]))
        y = tf.sigmoid(tf.math.cumprod(a, axis=1)) + 1.0  # Cumprod stays in TF
        return tf.reshape(y * 3.0, tf.stack([tf.reduce_prod(tf.gather(tf.shape(y), free)) // 4,
                                             4]))

    ex = disc.explain(f)
    assert len(ex.clusters) == 2, ex
    rng = np.random.default_rng(41)
    for shape in [(2, 3, 8), (1, 1, 8), (4, 7, 8), (3, 2, 8), (0, 5, 8)]:
        x = rng.standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(f(x).numpy(), f.python_function(tf.constant(x)).numpy(),
                                   rtol=1e-5, atol=1e-6)
    stats = disc.stats()
    assert total(stats, "fallbacks") == 0, stats
    assert total(stats, "compiles") == 2, stats  # one per cluster
