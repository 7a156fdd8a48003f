"""TF2: a tf.function is clustered, compiled once per rank signature, and
agrees with stock TensorFlow on every shape."""
import numpy as np
import pytest
import tensorflow as tf

from graph_inspection import cluster_stats, tf2_executed_ops, total
from shapes import random_f32, shapes_2d

SPEC_2D = tf.TensorSpec([None, None], tf.float32)


def _chain(x, y):
    a = x * 0.5 + y
    b = tf.maximum(a, 0.0) * tf.sigmoid(x) - tf.exp(-a * a)
    return tf.where(b > 0.1, b, tf.tanh(y)) / (1.0 + tf.abs(x))


def test_cluster_present_matches_tf_and_compiles_once(disc):
    f = tf.function(_chain, input_signature=[SPEC_2D, SPEC_2D])
    shapes = shapes_2d(22)
    x0, y0 = random_f32(shapes[-1], 1), random_f32(shapes[-1], 2)
    assert "DiscLaunch" in tf2_executed_ops(lambda: f(x0, y0))
    for i, shape in enumerate(shapes):
        x, y = random_f32(shape, 10 + i), random_f32(shape, 100 + i)
        np.testing.assert_allclose(f(x, y).numpy(), _chain(x, y).numpy(), rtol=1e-5, atol=1e-5)
    stats = disc.stats()
    assert total(stats, "compiles") == 1, stats
    assert total(stats, "fallbacks") == 0, stats
    assert total(stats, "cache_hits") >= len(shapes), stats


def test_broadcasting_over_dynamic_dims(disc):
    """One executable handles every size-1 broadcast pattern of a rank pair."""
    @tf.function(input_signature=[SPEC_2D, tf.TensorSpec([None], tf.float32)])
    def f(x, b):
        return tf.nn.relu(tf.nn.bias_add(x, b) * x - b)

    cases = [((4, 5), (5,)), ((4, 1), (5,)), ((4, 5), (1,)), ((1, 1), (9,)), ((0, 5), (5,)),
             ((3, 0), (1,)), ((3, 1), (1,))]
    for i, (xs, bs) in enumerate(cases):
        x, b = random_f32(xs, i), random_f32(bs, 50 + i)
        if xs[-1] != bs[0]:
            # BiasAdd itself needs matching channels: stock TF refuses, so must we.
            with pytest.raises(tf.errors.InvalidArgumentError):
                f(x, b)
            continue
        np.testing.assert_allclose(f(x, b).numpy(), f.python_function(x, b).numpy(),
                                   rtol=1e-5, atol=1e-6)
    assert total(disc.stats(), "compiles") == 1


def test_one_compile_per_rank_signature(disc):
    @tf.function(input_signature=[tf.TensorSpec(None, tf.float32)])
    def f(x):
        return tf.exp(x) * 2.0 - x

    rng = np.random.default_rng(0)
    for rank in (1, 2, 3):
        for _ in range(3):
            x = rng.standard_normal(tuple(int(d) for d in rng.integers(0, 5, rank))).astype(np.float32)
            np.testing.assert_allclose(f(x).numpy(), f.python_function(x).numpy(), rtol=1e-5)
    stats = disc.stats()
    assert total(stats, "compiles") == 3, stats
    assert all(len(c["keys"]) == 3 for c in cluster_stats(stats)), stats


def test_mixed_dtypes_and_logic(disc):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.int32), tf.TensorSpec([None], tf.int32)])
    def f(a, b):
        both = tf.logical_and(a > 0, b > 0)
        s = tf.cast(a, tf.float32) * 0.25 + tf.cast(b, tf.float32)
        return tf.where(both, tf.cast(a * b + 3, tf.float32), s), tf.math.floordiv(a, 3) + tf.math.floormod(b, 4)

    for n in (0, 1, 5, 1000):
        a = np.random.default_rng(n).integers(-50, 50, n).astype(np.int32)
        b = np.random.default_rng(n + 1).integers(-50, 50, n).astype(np.int32)
        got, want = f(a, b), f.python_function(a, b)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)
    assert total(disc.stats(), "compiles") == 1


def test_incompatible_shapes_raise_invalid_argument(disc):
    f = tf.function(lambda x, y: (x + y) * y, input_signature=[SPEC_2D, SPEC_2D])
    f(random_f32((2, 3), 0), random_f32((2, 3), 1))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Incompatible shapes.*2,3.*4,3|\[2,3\] vs. \[4,3\]"):
        f(random_f32((2, 3), 0), random_f32((4, 3), 1))
    # The process is fine afterwards and the executable still serves.
    np.testing.assert_allclose(f(np.ones((1, 3), np.float32), np.ones((1, 3), np.float32)).numpy(),
                               np.full((1, 3), 2.0, np.float32))
    assert total(disc.stats(), "compiles") == 1
