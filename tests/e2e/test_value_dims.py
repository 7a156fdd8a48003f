"""Small int data inputs (x[:, :n], tf.reshape(x, s), slice/fill/tile sizes
from function arguments) are read by the executable at run time as dims,
not cache-key values: one compile for every value, outputs equal TF's, and
bad values are TF's InvalidArgumentError naming the op."""
import numpy as np
import pytest
import tensorflow as tf

from graph_inspection import total

X = tf.TensorSpec([None, None], tf.float32)
I32 = tf.int32


def _run(disc, fn, calls):
    for args in calls:
        args = [tf.constant(a) for a in args]
        want = fn.python_function(*args).numpy()
        got = fn(*args).numpy()
        assert got.shape == want.shape, (args, got.shape, want.shape)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    stats = disc.stats()
    assert total(stats, "fallbacks") == 0, stats
    assert total(stats, "compiles") == 1, stats


def _x(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_prefix_slice_by_scalar_argument(disc):
    @tf.function(input_signature=[X, tf.TensorSpec([], I32)])
    def f(x, n):
        return tf.tanh(x[:, :n]) * 2.0 + tf.reduce_sum(x[:, n:]) + 1.0

    x = _x((3, 7))
    _run(disc, f, [(x, np.int32(n)) for n in (1, 2, 3, 5, 7, 9, 0, -1, -3, -10, 4)])


def test_shrink_and_strided_bounds_by_arguments(disc):
    @tf.function(input_signature=[X, tf.TensorSpec([], I32), tf.TensorSpec([], I32)])
    def f(x, i, j):
        return tf.reduce_sum(x[i:j:2], 0) + x[:, i] + tf.reduce_sum(x[j - 1:i:-1, 0]) + 1.0

    x = _x((6, 6), 1)
    calls = [(x, np.int32(i), np.int32(j)) for i, j in
             ((0, 5), (1, 6), (2, 3), (-4, -1), (3, 100), (-6, 4), (5, 6), (0, 1), (4, 5))]
    _run(disc, f, calls)


def test_reshape_to_shape_argument(disc):
    @tf.function(input_signature=[X, tf.TensorSpec([3], I32)])
    def g(x, s):
        return tf.tanh(tf.reshape(x * 3.0, s)) + 1.0

    calls = []
    for shape, s in (((4, 6), [2, 2, 6]), ((4, 6), [4, 3, -1]), ((4, 6), [-1, 1, 6]),
                     ((2, 5), [1, 10, 1]), ((2, 5), [5, -1, 2]), ((3, 8), [2, -1, 4]),
                     ((0, 4), [0, -1, 2]), ((0, 4), [3, 0, 5]), ((1, 1), [1, -1, 1]),
                     ((6, 7), [7, 3, 2])):
        calls.append((_x(shape, len(calls)), np.array(s, np.int32)))
    _run(disc, g, calls)


def test_slice_fill_tile_range_by_arguments(disc):
    @tf.function(input_signature=[X, tf.TensorSpec([2], I32), tf.TensorSpec([2], I32),
                                  tf.TensorSpec([], I32)])
    def h(x, begin, size, k):
        s = tf.slice(x, begin, size)
        f = tf.fill(tf.stack([k, 2]), 0.5)
        t = tf.tile(x[:1, :1], tf.stack([k, 3]))
        r = tf.cast(tf.range(k, 2 * k + 3, 2), tf.float32)
        b = tf.broadcast_to(x[:1, :2], tf.stack([k, 2]))
        return (tf.reduce_sum(s) + tf.reduce_sum(f) + tf.reduce_sum(t) + tf.reduce_sum(r)
                + tf.reduce_sum(b))

    x = _x((5, 6), 2)
    calls = [(x, np.array(bg, np.int32), np.array(sz, np.int32), np.int32(k)) for bg, sz in
             (([0, 0], [5, 6]), ([1, 2], [2, -1]), ([4, 5], [1, 1]), ([2, 0], [-1, -1]),
              ([0, 3], [0, 2]), ([3, 1], [2, 4]), ([1, 1], [3, 3]), ([0, 5], [5, 1]))
             for k in (0, 3)]
    _run(disc, h, calls)


@pytest.mark.parametrize("bad,words", [([5, -1, -1], "Only one input size may be -1"),
                                       ([2, -2, 6], "must be non-negative"),
                                       ([2, 2, 7], "Input to reshape is a tensor with 24")])
def test_bad_reshape_value_is_tf_error(disc, bad, words):
    @tf.function(input_signature=[X, tf.TensorSpec([3], I32)])
    def g(x, s):
        return tf.tanh(tf.reshape(x * 3.0, s)) + 1.0

    x = _x((4, 6))
    g(x, np.array([2, 2, 6], np.int32))
    with pytest.raises(tf.errors.InvalidArgumentError, match=words) as e:
        g(x, np.array(bad, np.int32)).numpy()
    assert "Reshape" in str(e.value)
    with pytest.raises(tf.errors.InvalidArgumentError):
        g.python_function(tf.constant(x), tf.constant(bad, tf.int32))
    stats = disc.stats()
    assert total(stats, "compiles") == 1 and total(stats, "fallbacks") == 0, stats


def test_bad_index_and_sizes_are_tf_errors(disc):
    @tf.function(input_signature=[X, tf.TensorSpec([], I32), tf.TensorSpec([2], I32)])
    def f(x, i, size):
        return tf.tanh(x[:, i]) * 2.0 + tf.reduce_sum(tf.slice(x, [0, 0], size)) + \
            tf.reduce_sum(tf.fill(tf.stack([i, 1]), 1.0))

    x = _x((3, 4))
    f(x, np.int32(1), np.array([2, 2], np.int32))
    for i, size, op in ((4, [1, 1], "StridedSlice"), (-5, [1, 1], "StridedSlice"),
                        (1, [4, 1], "Slice"), (1, [1, -2], "Slice")):
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            f(x, np.int32(i), np.array(size, np.int32)).numpy()
        assert f"op {op}" in str(e.value), str(e.value)
        with pytest.raises(tf.errors.InvalidArgumentError):
            f.python_function(tf.constant(x), tf.constant(i), tf.constant(size, tf.int32))
    stats = disc.stats()
    assert total(stats, "compiles") == 1 and total(stats, "fallbacks") == 0, stats


def test_shape_vector_of_unknown_length_stays_a_key_value(disc):
    """Without a proven length the rank of Reshape's result is unknown until
    run time: the optimizer keeps such a shape a cache-key value."""
    @tf.function(input_signature=[X, tf.TensorSpec([None], I32)])
    def g(x, s):
        return tf.tanh(tf.reshape(x * 3.0, s)) + 1.0

    x = _x((4, 6))
    for s in ([24], [2, 12], [2, 12], [2, 3, 4]):
        s = np.array(s, np.int32)
        np.testing.assert_allclose(g(x, s).numpy(),
                                   g.python_function(tf.constant(x), tf.constant(s)).numpy(),
                                   rtol=1e-6)
    stats = disc.stats()
    assert total(stats, "fallbacks") == 0, stats
    assert total(stats, "compiles") == 3, stats


def test_one_hot_depth_from_argument_arithmetic(disc):
    @tf.function(input_signature=[tf.TensorSpec([None], I32), tf.TensorSpec([], I32)])
    def f(i, n):
        return tf.one_hot(i, n + 1) * 2.0 + 1.0

    _run(disc, f, [(np.array([0, 2, 1, 5], np.int32), np.int32(n)) for n in (0, 1, 3, 5, 8, 2)])
    with pytest.raises(tf.errors.InvalidArgumentError, match="depth"):
        f(np.array([0], np.int32), np.int32(-3)).numpy()


def test_concat_axis_from_an_argument_is_a_key_value(disc):
    """ConcatV2's axis (its last input) from outside the cluster: a value
    the compiler needs, in the key (one compile per axis), not a failure."""
    @tf.function(input_signature=[X, X, tf.TensorSpec([], I32)])
    def f(x, y, axis):
        return tf.tanh(tf.concat([x * 2.0, y + 1.0], axis)) - 0.5

    calls = [(_x((2, 3)), _x((2, 3), 1), np.int32(a)) for a in (0, 1, -1, 0, -2)]
    for args in calls:
        args = [tf.constant(a) for a in args]
        np.testing.assert_allclose(f(*args).numpy(), f.python_function(*args).numpy(),
                                   rtol=1e-6, atol=1e-6)
    stats = disc.stats()
    assert total(stats, "fallbacks") == 0, stats
    # four keys (axes 0, 1, -1, -2); -1 and -2 generate 1's and 0's code,
    # found in the disk cache
    assert total(stats, "compiles") == 2, stats
    assert total(stats, "disk_cache_hits") == 2, stats
