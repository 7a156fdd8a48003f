"""MatrixBandPart (tf.linalg.band_part) inside clusters: every dtype the
compiler has, ranks 2-4 with 0/1 dims, one compile per (num_lower,
num_upper) pair whether they are graph constants or runtime scalars, and
TF's InvalidArgumentError when a band exceeds the matrix."""
import numpy as np
import pytest
import tensorflow as tf

from graph_inspection import total


def _values(dtype, shape, rng):
    if dtype == tf.bool:
        return rng.integers(0, 2, shape).astype(bool)
    return (rng.standard_normal(shape) * 10).astype(dtype.as_numpy_dtype)


def _shapes(rng, count):
    """Ranks 2-4; at least 1 row and 2 columns (the widest band below is
    (1, 2): TF rejects bands wider than the matrix), batch dims may be 0."""
    out = []
    for _ in range(count):
        batch = tuple(int(rng.integers(0, 4)) for _ in range(int(rng.integers(0, 3))))
        out.append(batch + (int(rng.integers(1, 8)), int(rng.integers(2, 8))))
    return out + [(1, 2), (0, 3, 4), (3, 9)]


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64, tf.float16, tf.bfloat16, tf.int32,
                                   tf.int64, tf.bool])
def test_band_part_constant_bands_many_shapes_one_compile(disc, dtype):
    @tf.function(input_signature=[tf.TensorSpec(None, dtype)])
    def f(x):
        causal = tf.linalg.band_part(x, -1, 0)
        upper = tf.linalg.band_part(x, 0, -1)
        band = tf.linalg.band_part(x, 1, 2)
        return tf.stack([causal, upper, band, tf.linalg.band_part(x, 0, 0)])

    rng = np.random.default_rng(31)
    ranks = set()
    for shape in _shapes(rng, 9):
        ranks.add(len(shape))
        x = _values(dtype, shape, rng)
        np.testing.assert_array_equal(f(x).numpy(), f.python_function(tf.constant(x)).numpy())
    stats = disc.stats()
    assert total(stats, "compiles") == len(ranks), stats  # one per input rank
    assert total(stats, "fallbacks") == 0, stats


def test_band_part_runtime_scalars_one_compile_per_value_pair(disc):
    @tf.function(input_signature=[tf.TensorSpec([None, None, None], tf.float32),
                                  tf.TensorSpec([], tf.int64), tf.TensorSpec([], tf.int64)])
    def f(x, lo, up):
        return tf.linalg.band_part(x * 2.0, lo, up) + 1.0

    rng = np.random.default_rng(32)
    pairs = [(-1, 0), (2, 1), (0, -1)]
    for k in range(9):
        lo, up = pairs[k % 3]
        shape = (int(rng.integers(1, 4)), int(rng.integers(3, 9)), int(rng.integers(3, 9)))
        x = _values(tf.float32, shape, rng)
        want = f.python_function(tf.constant(x), tf.constant(lo, tf.int64),
                                 tf.constant(up, tf.int64))
        np.testing.assert_array_equal(f(x, np.int64(lo), np.int64(up)).numpy(), want.numpy())
    stats = disc.stats()
    assert total(stats, "compiles") == len(pairs), stats
    assert total(stats, "fallbacks") == 0, stats


@pytest.mark.parametrize("lo,up,message", [
    (4, 0, "num_lower must be negative or less or equal to number of rows"),
    (0, 6, "num_upper must be negative or less or equal to number of columns")])
def test_band_part_band_larger_than_matrix_is_invalid_argument(disc, lo, up, message):
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)])
    def f(x):
        return tf.linalg.band_part(x * 2.0, lo, up) + 1.0

    x = np.ones((3, 5), np.float32)
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        f.python_function(tf.constant(x))  # stock TF
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        f(x)
    ok = np.ones((lo + 1, up + 1), np.float32)  # the same bands fit a larger matrix
    np.testing.assert_array_equal(f(ok).numpy(), f.python_function(tf.constant(ok)).numpy())
    stats = disc.stats()
    assert total(stats, "compiles") == 1 and total(stats, "fallbacks") == 0, stats
