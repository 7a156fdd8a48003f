"""TopKV2 compiled: TF's values and indices (descending, ties by lower index)
for every shape and k, k given at run time or computed from the shape, one
compile for all of them, the op inside the DiscLaunch, and TF's errors."""
import numpy as np
import pytest
import tensorflow as tf

from graph_inspection import total


def _check(disc, fn, cases, op="TopKV2"):
    for args in cases:
        want = fn.python_function(*[tf.constant(a) for a in args])
        got = fn(*args)
        for w, g in zip(tf.nest.flatten(want), tf.nest.flatten(got)):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
    stats = disc.stats()
    assert total(stats, "fallbacks") == 0, stats
    assert all(c["compiles"] == 1 for c in stats["clusters"].values()), stats
    left = {n["op"] for n in disc.explain(fn.get_concrete_function()).not_clustered}
    assert op not in left, left


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float64])
def test_values_and_indices_with_ties_and_run_time_k(disc, dtype):
    @tf.function(input_signature=[tf.TensorSpec([None, None, None], dtype),
                                  tf.TensorSpec([], tf.int32)])
    def f(x, k):
        v, i = tf.math.top_k(x * 2, k)
        return v + 1, i * 3

    rng = np.random.default_rng(4)
    cases = []
    for shape, k in [((2, 3, 7), 3), ((1, 1, 5), 5), ((4, 2, 40), 1), ((3, 5, 9), 0),
                     ((0, 2, 6), 2), ((2, 3, 100), 17), ((2, 0, 4), 4)]:
        x = rng.integers(-3, 4, shape).astype(dtype)  # many ties
        cases.append((x, np.int32(k)))
    _check(disc, f, cases)


def test_k_from_the_shape(disc):
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)])
    def f(x):
        v, i = tf.math.top_k(tf.tanh(x), tf.shape(x)[1] // 2 + 1)
        return v * 2.0, i

    rng = np.random.default_rng(8)
    _check(disc, f, [(rng.standard_normal(s).astype(np.float32),) for s in
                     [(3, 4), (1, 9), (5, 1), (2, 33), (0, 3)]])


def test_bad_k_is_tfs_error(disc):
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32),
                                  tf.TensorSpec([], tf.int32)])
    def f(x, k):
        return tf.math.top_k(x * 2.0, k)[0] + 1.0

    with pytest.raises(tf.errors.InvalidArgumentError, match="at least k columns. Had 3, needed 5"):
        f(np.zeros((2, 3), np.float32), np.int32(5))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Need k >= 0, got -1"):
        f(np.zeros((2, 3), np.float32), np.int32(-1))
