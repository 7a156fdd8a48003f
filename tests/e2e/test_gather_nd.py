"""GatherNd with a statically known index depth (indices' last dim): the
optimizer records the depth, one executable serves every params/indices
size, and out-of-range indices raise TF's InvalidArgumentError."""
import numpy as np
import pytest
import tensorflow as tf

from graph_inspection import total


@pytest.mark.parametrize("depth,dtype", [(1, tf.float32), (2, tf.int64), (3, tf.float64),
                                         (2, tf.bool)])
def test_gather_nd_many_shapes_one_compile(disc, depth, dtype):
    @tf.function(input_signature=[tf.TensorSpec([None] * 4, dtype),
                                  tf.TensorSpec([None, None, depth], tf.int32)])
    def f(params, indices):
        g = tf.gather_nd(params, indices)
        return tf.concat([g, g], 0)

    rng = np.random.default_rng(depth)
    for i in range(8):
        pshape = tuple(int(rng.integers(1, 6)) for _ in range(4))
        ishape = (int(rng.integers(0, 4)), int(rng.integers(1, 5)))
        params = (rng.standard_normal(pshape) * 10).astype(dtype.as_numpy_dtype)
        idx = np.stack([rng.integers(0, pshape[j], ishape) for j in range(depth)], -1)
        got = f(params, idx.astype(np.int32)).numpy()
        want = f.python_function(tf.constant(params), tf.constant(idx, tf.int32)).numpy()
        np.testing.assert_array_equal(got, want)
    stats = disc.stats()
    assert total(stats, "compiles") == 1, stats
    assert total(stats, "fallbacks") == 0, stats


def test_gather_nd_int64_indices_and_out_of_range(disc):
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32),
                                  tf.TensorSpec([None, 2], tf.int64)])
    def f(params, indices):
        return tf.gather_nd(params * 2.0, indices) + 1.0

    params = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.asarray([[0, 0], [2, 3], [1, 2]], np.int64)
    np.testing.assert_array_equal(f(params, idx), params[idx[:, 0], idx[:, 1]] * 2 + 1)
    for bad in ([[3, 0]], [[0, 4]], [[-1, 0]]):
        with pytest.raises(tf.errors.InvalidArgumentError):
            f(params, np.asarray(bad, np.int64))


def test_gather_nd_unknown_depth_stays_in_tf(disc):
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32),
                                  tf.TensorSpec([None, None], tf.int32)])
    def f(params, indices):
        return tf.gather_nd(params, indices) * 2.0

    ex = disc.explain(f)
    assert ex.reasons.get("undecidable shape") == ["GatherNd"], ex
    params = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(f(params, np.asarray([[1, 2]], np.int32)), [10.0])
